import type Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { constants as fsConstants, copyFileSync, existsSync, unlinkSync } from 'node:fs';
import { toBech32, toHex0x } from '../lib/address';
import { collectionJson } from '../wire/nft';
import { packRow } from '../wire/packed';
import { openStore, syncAndRename, tempPathBeside } from './store';
import { EvmDelta, finishEvm, newEvmDelta } from './evm-writer';
import { bringWireFormatCurrent } from './rerender';
import { INDEXES_SQL, SCHEMA_VERSION, schemaSql, TABLES_SQL } from './schema';
import { ensureRanks, writeRanks } from './richlist-ranks';
import { ensureDigests, writeDigests } from './tag-digests';
import { prepareTipQueries } from './queries/tip';
import { recordChange } from './changes';
import { accountTag, ANY_TX, collectionTag, COLLECTIONS, denomTag, heightTag, INTERNAL_TXS, ownerTag, TIP } from './tags';

/** Rows per multi-row INSERT into the tx link tables. */
const LINK_ROWS = 64;

/**
 * Rows for one of the tx link tables, inserted LINK_ROWS at a time by a multi-row INSERT (half
 * the cost per row of a statement per row). Both tables are WITHOUT ROWID, so the contents do
 * not depend on when a row goes in; nothing reads them before flush().
 */
class LinkRows {
  private readonly values: unknown[] = [];
  private readonly one: Database.Statement;
  private readonly many: Database.Statement;

  constructor(
    db: Database.Database,
    table: string,
    private readonly columns: string[],
  ) {
    const row = `(${columns.map(() => '?').join(', ')})`;
    this.one = db.prepare(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${row}`);
    this.many = db.prepare(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${Array(LINK_ROWS).fill(row).join(', ')}`);
  }

  add(...row: unknown[]): void {
    this.values.push(...row);
    if (this.values.length === LINK_ROWS * this.columns.length) {
      this.many.run(this.values);
      this.values.length = 0;
    }
  }

  flush(): void {
    for (let i = 0; i < this.values.length; i += this.columns.length) this.one.run(this.values.slice(i, i + this.columns.length));
    this.values.length = 0;
  }
}

/** nfts.owner_id of an NFT without an owner account (owner ""): no account has id 0. */
export const NO_OWNER = 0;

/** The check run on the finished file before it replaces the target. */
export type FileCheck = 'integrity' | 'quick' | 'none';

export interface WriterOptions {
  /** report a finalize step (for progress output) */
  onStep?: (step: string) => void;
  /** the check of the finished file (create / extend; decided by import's resolveImport) */
  check?: FileCheck;
}

/**
 * A resumable load's last commit (SnapshotWriter.resumable, issue #43), in its file's meta
 * until finish() removes it: the crawl it loads (`id`), the txs and blocks written, the
 * loader's record counts and the highest tx sequence written.
 */
export interface LoadCheckpoint {
  id: string;
  txs: number;
  blocks: number;
  counts: Record<string, number>;
  lastSequence: number;
}

/** The meta key of a resumable load's checkpoint (never in a finished snapshot). */
const CHECKPOINT_KEY = 'load_checkpoint';

/**
 * A resumable load's file that is finished (its last transaction committed, user_version set)
 * but was not renamed (a kill in between): checked again and put in place at `target`. False
 * when `path` is not such a file.
 */
export function completeFinishedLoad(path: string, target: string, check: FileCheck): boolean {
  if (!existsSync(path)) return false;
  let db: Database.Database;
  try {
    db = openStore(path, 'resumableBulk', { mustExist: true });
  } catch {
    return false;
  }
  try {
    if (db.pragma('user_version', { simple: true }) !== SCHEMA_VERSION) return false;
    if (check !== 'none') {
      const r = db.pragma(check === 'quick' ? 'quick_check' : 'integrity_check', { simple: true });
      if (r !== 'ok') return false;
    }
  } finally {
    db.close();
  }
  syncAndRename(path, target);
  return true;
}

/** Removes a resumable load's file and its journal. */
export function removeLoadFile(path: string): void {
  for (const f of [path, `${path}-journal`]) {
    try {
      if (existsSync(f)) unlinkSync(f);
    } catch {
      /* already gone */
    }
  }
}

/**
 * What a writer writes to (one static constructor each):
 * - `create`: a fresh temporary file, bulk-loaded without a journal, renamed over the target;
 * - `extend`: a copy of `base.file` in a temporary file, same journal-less load and rename;
 * - `inPlace`: `base.file` itself, changed in ONE write transaction in WAL mode (docs/follow.md):
 *   no copy, no rename; finish() commits, abort() rolls back. Used by `follow`.
 */
export type WriterMode = 'create' | 'extend' | 'inPlace';

/** What an update on top of a base snapshot starts from (SnapshotWriter.extend). */
export interface BaseInfo {
  file: string;
  /** highest block height / tx sequence of the base: new ones must follow */
  height: number;
  sequence: number;
}

/** The current-state kinds a source may deliver in full, replacing the base's (see extend). */
export type StateKind = 'collections' | 'tokens' | 'richlist' | 'denom_contracts';
const STATE_KINDS: readonly string[] = ['collections', 'tokens', 'richlist', 'denom_contracts'];

/** Packs an (account, msg-type set) pair into one Map key; sets stay far below 2^21. */
const SET_BITS = 2 ** 21;
/** Packs (tx count, signer count) into one number: counts stay below 2^26 per pair... */
const SIGNER_ONE = 1;
const TX_ONE = 2 ** 26;

/** extend: a copy of the base at `path` (a reflink where the file system has them), opened. */
function openCopy(path: string, base: BaseInfo): Database.Database {
  try {
    // A sequential copy; snapshots are immutable.
    copyFileSync(base.file, path, fsConstants.COPYFILE_FICLONE);
    return openStore(path, 'bulk', { mustExist: true });
  } catch (e) {
    try {
      unlinkSync(path);
    } catch {
      /* never created */
    }
    throw e;
  }
}

/**
 * Writes one snapshot into a temporary file beside the target, renamed over the target only
 * when everything succeeded; until `finish()` returns the target is untouched.
 *
 * - `create`: a fresh file, bulk-loaded in one transaction, indexed and counted after the load.
 * - `extend`: a copy of a base snapshot (the base is never modified) on which only the new
 *   heights are applied in place: rows appended through the existing indexes, every
 *   precomputed count adjusted by the new rows' contribution, current NFT / rich-list state
 *   replaced by what the source delivers (diffed, so unchanged rows are not rewritten).
 *   Its cost is the file copy plus work proportional to the new data (and to the delivered
 *   state), not to the chain's history.
 * - `inPlace`: what `extend` does, on the base file itself in one WAL write transaction
 *   (`follow`'s batches): no temporary file, so the target changes when finish() commits.
 */
export class SnapshotWriter {
  readonly db: Database.Database;
  readonly tempPath: string;
  /** set when extending a base snapshot */
  readonly base?: BaseInfo;
  private readonly accountIds = new Map<string, number>();
  private nextAccountId = 1;
  private readonly msgTypeIds = new Map<string, number>();
  private readonly setIds = new Map<string, number>();
  /** contributions of the txs written by this writer, applied to the count columns in finish() */
  private readonly pairCounts = new Map<number, number>();
  private readonly typeCounts = new Map<number, number>();
  private readonly setCounts = new Map<number, number>();
  private readonly nftTxCounts = new Map<string, { addr: Buffer; tokenId: string; n: number }>();
  /** what the EVM rows of this import add to the counts (src/snapshot/evm-writer.ts) */
  readonly evm: EvmDelta;
  private newBlocks = 0;
  private newTxs = 0;
  /** in place: what this batch changes, recorded with it (src/snapshot/changes.ts) */
  private readonly changed = new Set<string>();
  private maxHeight = 0;
  /** extend: state kinds the source delivered (staged in temp tables, applied in finish) */
  private readonly replaced = new Set<string>();
  /** collections whose NFT ↔ tx links this write added (their digests: src/snapshot/tag-digests.ts) */
  private readonly linkedCollections = new Set<string>();
  /** the rich list or the denom contracts were replaced: every rich list's digest is written again */
  private allDenoms = false;
  /** a base of an older wire format was rendered again: every digest is written again */
  private rerendered = false;
  private readonly stmts;
  private readonly txAccounts: LinkRows;
  private readonly txMsgTypes: LinkRows;
  /** create, resumable: the load's id (its crawl's); committed by checkpoint(), kept on abort() */
  private readonly loadId?: string;
  /** a resumable load that goes on from its file's last checkpoint */
  readonly resumedFrom?: LoadCheckpoint;

  private constructor(
    readonly target: string,
    private readonly opts: WriterOptions,
    readonly mode: WriterMode,
    base?: BaseInfo,
    resumable?: { path: string; id: string; from?: LoadCheckpoint; db?: Database.Database },
  ) {
    this.base = base;
    // create / extend: a throw-away file (no rollback journal: it is dropped unless the whole
    // load succeeds); inPlace: the live file, readers (serve) reading on, one batch = one commit;
    // create, resumable: a kept file with a rollback journal, committed at each checkpoint()
    this.tempPath = mode === 'inPlace' ? target : resumable ? resumable.path : tempPathBeside(target);
    this.loadId = resumable?.id;
    this.resumedFrom = resumable?.from;
    this.db = resumable
      ? (resumable.db ?? openStore(this.tempPath, 'resumableBulk'))
      : mode === 'create'
        ? openStore(this.tempPath, 'bulk')
        : mode === 'extend'
          ? openCopy(this.tempPath, base as BaseInfo)
          : openStore(target, 'inPlace');
    if (mode === 'inPlace') this.db.exec('BEGIN IMMEDIATE');
    if (!base && !this.resumedFrom) this.db.exec(schemaSql(TABLES_SQL));
    const p = (sql: string): Database.Statement => this.db.prepare(sql);
    this.stmts = {
      meta: p('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)'),
      // extend: the source's validators replace the base's of the same proposer
      validator: p('INSERT OR REPLACE INTO validators (proposer, moniker, operator_address) VALUES (?, ?, ?)'),
      account: p('INSERT INTO accounts (id, addr) VALUES (?, ?)'),
      accountByAddr: p('SELECT id FROM accounts WHERE addr = ?').pluck(),
      block: p('INSERT INTO blocks (height, time_us, tx_count, json) VALUES (?, ?, ?, ?)'),
      // json arrives packed (src/wire/packed.ts) from the parser threads
      tx: p('INSERT INTO txs (sequence, height, hash, json) VALUES (?, ?, ?, ?)'),
      msgType: p('INSERT INTO msg_types (id, name) VALUES (?, ?)'),
      msgTypeSet: p('INSERT INTO msg_type_sets (id, type_ids) VALUES (?, ?)'),
      msgTypeSetMember: p('INSERT INTO msg_type_set_members (msg_type_id, set_id) VALUES (?, ?)'),
      nftTx: p('INSERT INTO nft_txs (collection_addr, token_id, sequence) VALUES (?, ?, ?)'),
      txExists: p('SELECT 1 FROM txs WHERE sequence = ?').pluck(),
      holder: p('INSERT INTO richlist (denom, amount_key, account, json) VALUES (?, ?, ?, ?)'),
      denomContract: p('INSERT INTO denom_contracts (denom, contract) VALUES (?, ?)'),
    };
    this.evm = newEvmDelta(base ? this.db : undefined);
    this.txAccounts = new LinkRows(this.db, 'tx_accounts', ['account_id', 'sequence', 'signer']);
    this.txMsgTypes = new LinkRows(this.db, 'tx_msg_types', ['msg_type_id', 'sequence']);
    if (this.resumedFrom) {
      // the state the load had at its checkpoint, from what it committed
      for (const r of this.db.prepare('SELECT id, name FROM msg_types').all() as { id: number; name: string }[]) this.msgTypeIds.set(r.name, r.id);
      for (const r of this.db.prepare('SELECT id, type_ids FROM msg_type_sets').all() as { id: number; type_ids: string }[]) this.setIds.set(r.type_ids, r.id);
      for (const r of this.db.prepare('SELECT id, addr FROM accounts').raw().iterate() as IterableIterator<[number, Buffer]>) {
        this.accountIds.set(r[1].toString('hex'), r[0]);
        if (r[0] >= this.nextAccountId) this.nextAccountId = r[0] + 1;
      }
      this.newBlocks = this.resumedFrom.blocks;
      this.newTxs = this.resumedFrom.txs;
    }
    if (base) {
      // Small tables come into memory; accounts are looked up by address on first use.
      for (const r of this.db.prepare('SELECT id, name FROM msg_types').all() as { id: number; name: string }[]) this.msgTypeIds.set(r.name, r.id);
      for (const r of this.db.prepare('SELECT id, type_ids FROM msg_type_sets').all() as { id: number; type_ids: string }[]) this.setIds.set(r.type_ids, r.id);
      this.nextAccountId = ((this.db.prepare('SELECT max(id) FROM accounts').pluck().get() as number | null) ?? 0) + 1;
      // /status height follows the new highest block unless the source's meta names one.
      this.db.prepare("DELETE FROM meta WHERE key = 'height'").run();
      // An internal_tx_height the base derived (no source gave one) is derived again over the new heights.
      if (this.db.prepare("SELECT 1 FROM meta WHERE key = 'internal_tx_height_derived'").get()) {
        this.db.exec("DELETE FROM meta WHERE key IN ('internal_tx_height', 'internal_tx_height_derived')");
      }
    }
    // One transaction for the whole load: without a journal a commit only writes the dirty
    // pages out, which the page cache does anyway when it fills (memory stays at cache_size),
    // and fewer commits write the scattered tx_accounts pages fewer times.
    if (mode !== 'inPlace') this.db.exec('BEGIN');
    // a new file is marked with the wire format; a base of an older one is rendered again
    // (in place: inside the follower's first batch)
    this.rerendered = bringWireFormatCurrent(this.db) > 0;
  }

  static create(target: string, opts: WriterOptions & { check: FileCheck }): SnapshotWriter {
    return new SnapshotWriter(target, opts, 'create');
  }

  /**
   * A new snapshot loaded into `path` (kept when the load fails or is killed), committed at each
   * checkpoint(): a file there with a checkpoint of load `id` is gone on from (resumedFrom), any
   * other is replaced. Renamed over `target` by finish().
   */
  static resumable(target: string, path: string, id: string, opts: WriterOptions & { check: FileCheck }): SnapshotWriter {
    let from: LoadCheckpoint | undefined;
    let db: Database.Database | undefined;
    if (existsSync(path)) {
      try {
        db = openStore(path, 'resumableBulk', { mustExist: true });
        const has = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'meta'").get() !== undefined;
        const text = has ? (db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get(CHECKPOINT_KEY) as string | undefined) : undefined;
        const c = text === undefined ? undefined : (JSON.parse(text) as LoadCheckpoint);
        if (c !== undefined && c.id === id) from = c;
      } catch {
        /* not a load we can go on with: replaced */
      }
      if (from === undefined) {
        try {
          db?.close();
        } catch {
          /* replaced anyway */
        }
        db = undefined;
        removeLoadFile(path);
      }
    }
    return new SnapshotWriter(target, opts, 'create', undefined, { path, id, from, db });
  }

  /**
   * A resumable load: commits what it wrote, with the loader's `counts` and the highest tx
   * sequence written; a run killed after it goes on from here (resumedFrom). The tx counts
   * gathered so far are added to their columns now (the maps are memory a kill loses).
   */
  checkpoint(counts: Record<string, number>, lastSequence: number): void {
    if (this.loadId === undefined) throw new Error('internal: checkpoint() of a load that is not resumable');
    this.txAccounts.flush();
    this.txMsgTypes.flush();
    this.applyTxCounts();
    const c: LoadCheckpoint = { id: this.loadId, txs: this.newTxs, blocks: this.newBlocks, counts, lastSequence };
    this.setMeta(CHECKPOINT_KEY, JSON.stringify(c));
    this.db.exec('COMMIT; BEGIN');
  }

  /** A writer on a copy of the base snapshot `base.file`, for the heights after it. */
  static extend(base: BaseInfo, target: string, opts: WriterOptions & { check: FileCheck }): SnapshotWriter {
    return new SnapshotWriter(target, opts, 'extend', base);
  }

  /** A writer on `base.file` itself, for the heights after it: one write transaction (follow). */
  static inPlace(base: BaseInfo, opts: WriterOptions = {}): SnapshotWriter {
    return new SnapshotWriter(base.file, opts, 'inPlace', base);
  }

  accountId(addr: Buffer): number {
    return this.accountIdOfHex(addr.toString('hex'), addr);
  }

  /** The id of the account with canonical bytes `hex` (lower case), added on first use. */
  private accountIdOfHex(hex: string, addr?: Buffer): number {
    let id = this.accountIds.get(hex);
    if (id === undefined) {
      const bytes = addr ?? Buffer.from(hex, 'hex');
      id = this.base ? (this.stmts.accountByAddr.get(bytes) as number | undefined) : undefined;
      if (id === undefined) {
        id = this.nextAccountId++;
        this.stmts.account.run(id, bytes);
      }
      this.accountIds.set(hex, id);
    }
    // an account the batch links a tx to (or names as an NFT owner or creator): its lists may change
    if (this.mode === 'inPlace') this.changed.add(accountTag(hex));
    return id;
  }

  setMeta(key: string, value: string | number): void {
    this.stmts.meta.run(key, String(value));
  }

  insertValidator(proposer: string, moniker: string, operatorAddress: string): void {
    this.stmts.validator.run(proposer, moniker, operatorAddress);
  }

  insertBlock(height: number, timeUs: number, txCount: number, json: string): void {
    this.stmts.block.run(height, timeUs, txCount, packRow(json));
    this.newBlocks++;
    if (this.mode === 'inPlace') this.changed.add(heightTag(height));
    if (height > this.maxHeight) this.maxHeight = height;
  }

  private msgTypeId(name: string): number {
    let id = this.msgTypeIds.get(name);
    if (id === undefined) {
      id = this.msgTypeIds.size + 1;
      this.msgTypeIds.set(name, id);
      this.stmts.msgType.run(id, name);
    }
    return id;
  }

  /** The msg-type set of exactly these (distinct) type ids, added on first use. */
  private msgTypeSetId(typeIds: number[]): number {
    const key = typeIds.length < 2 ? typeIds.join(',') : [...typeIds].sort((a, b) => a - b).join(',');
    let id = this.setIds.get(key);
    if (id === undefined) {
      id = this.setIds.size + 1;
      if (id >= SET_BITS) throw new Error(`more than ${SET_BITS - 1} distinct combinations of message types`);
      this.setIds.set(key, id);
      this.stmts.msgTypeSet.run(id, key);
      for (const t of typeIds) this.stmts.msgTypeSetMember.run(t, id);
    }
    return id;
  }

  /**
   * One tx with the accounts it touches (distinct canonical hex, the signer first when
   * `signerFirst`) and its distinct message types. `json` is the packed row (src/wire/packed.ts).
   */
  insertTx(sequence: number, height: number, hash: Uint8Array, json: Uint8Array, accounts: string[], signerFirst: boolean, msgTypes: string[]): void {
    this.stmts.tx.run(sequence, height, hash, json);
    this.newTxs++;
    const typeIds = msgTypes.map((name) => this.msgTypeId(name));
    for (const id of typeIds) {
      this.txMsgTypes.add(id, sequence);
      this.typeCounts.set(id, (this.typeCounts.get(id) ?? 0) + 1);
    }
    const setId = this.msgTypeSetId(typeIds);
    this.setCounts.set(setId, (this.setCounts.get(setId) ?? 0) + 1);
    for (let i = 0; i < accounts.length; i++) {
      const signer = signerFirst && i === 0;
      const accountId = this.accountIdOfHex(accounts[i]);
      this.txAccounts.add(accountId, sequence, signer ? 1 : 0);
      const key = accountId * SET_BITS + setId;
      this.pairCounts.set(key, (this.pairCounts.get(key) ?? 0) + TX_ONE + (signer ? SIGNER_ONE : 0));
    }
  }

  /**
   * The loader is about to deliver a kind's records. For a current-state kind on top of a
   * base, the delivered set replaces the base's: collections / tokens are staged and diffed in
   * finish(), the rich list and denom contracts are replaced outright (they are small).
   */
  beginKind(kind: string): void {
    if (!this.base || !STATE_KINDS.includes(kind)) return;
    this.replaced.add(kind);
    switch (kind as StateKind) {
      case 'collections':
        this.db.exec(`CREATE TEMP TABLE new_collections AS SELECT * FROM collections WHERE 0;
                      CREATE UNIQUE INDEX temp.new_collections_addr ON new_collections (addr);`);
        break;
      case 'tokens':
        this.db.exec(`CREATE TEMP TABLE new_nfts AS SELECT * FROM nfts WHERE 0;
                      CREATE UNIQUE INDEX temp.new_nfts_key ON new_nfts (collection_addr, token_id);`);
        break;
      case 'richlist':
        this.allDenoms = true;
        this.recordAllDenoms();
        this.db.exec('DELETE FROM richlist; DELETE FROM richlist_denoms;');
        break;
      case 'denom_contracts':
        // a denom's stored name may move with its contract: every rich list may change
        this.allDenoms = true;
        this.recordAllDenoms();
        this.db.exec('DELETE FROM denom_contracts');
        break;
    }
  }

  /** in place: every stored rich-list denom is named as changed (a replaced rich list) */
  private recordAllDenoms(): void {
    if (this.mode !== 'inPlace') return;
    for (const d of this.db.prepare('SELECT denom FROM richlist_denoms').pluck().all() as string[]) this.changed.add(denomTag(d));
  }

  /**
   * in place, before the batch commits: its change record — the heights, accounts and links named
   * as the rows were written, plus the NFT owners and collections the state diff touched and
   * the rich lists replaced — in the batch's own transaction (src/snapshot/changes.ts).
   */
  private recordBatch(): void {
    const db = this.db;
    const tags = this.changed;
    tags.add(TIP);
    if (this.newTxs > 0) tags.add(ANY_TX);
    if (this.evm.internals > 0) tags.add(INTERNAL_TXS);
    for (const t of this.nftTags()) tags.add(t);
    if (this.replaced.has('richlist')) this.recordAllDenoms();
    const height = this.maxHeight > 0 ? this.maxHeight : Number(db.prepare('SELECT max(height) FROM blocks').pluck().get() ?? 0);
    recordChange(db, 'batch', height, tags);
  }

  /** On a base: the NFT tags this write changed — the collections and owners its state diff touched, the collections its links added to. */
  private nftTags(): Set<string> {
    const db = this.db;
    const tags = new Set(this.linkedCollections);
    const hasTemp = (name: string): boolean => db.prepare("SELECT 1 FROM temp.sqlite_schema WHERE type = 'table' AND name = ?").get(name) !== undefined;
    if (hasTemp('touched_collections')) {
      const collections = db.prepare('SELECT addr FROM temp.touched_collections').pluck().all() as Buffer[];
      for (const addr of collections) tags.add(collectionTag(addr.toString('hex')));
      if (collections.length > 0) tags.add(COLLECTIONS);
    }
    if (hasTemp('touched_owners')) {
      const owners = db.prepare('SELECT a.addr FROM temp.touched_owners t JOIN main.accounts a ON a.id = t.id').pluck().all() as Buffer[];
      for (const addr of owners) tags.add(ownerTag(addr.toString('hex')));
    }
    return tags;
  }

  /**
   * On a base, inside the write's transaction, once its rows are in: the digests of the tags it
   * changed (src/snapshot/tag-digests.ts) — all of them for a base before schema 4 or one
   * rendered again, every rich list's when the rich list or the denom contracts were replaced.
   */
  private writeTagDigests(): void {
    const db = this.db;
    if (ensureDigests(db)) return;
    if (this.rerendered) {
      writeDigests(db, 'all');
      return;
    }
    const tags = this.nftTags();
    if (this.allDenoms) {
      db.exec("DELETE FROM main.tag_digests WHERE tag >= 'r:' AND tag < 'r;'");
      for (const d of db.prepare('SELECT denom FROM main.richlist_denoms').pluck().all() as string[]) tags.add(denomTag(d));
    }
    writeDigests(db, tags);
  }

  private collectionStmt?: Database.Statement;
  insertCollection(
    addr: Buffer,
    height: number,
    name: string,
    originName: string,
    normName: string,
    normOriginName: string,
    creatorId: number,
    timestamp: string,
  ): void {
    // json is rendered in finish(), once nft_count is known.
    this.collectionStmt ??= this.db.prepare(`INSERT INTO ${this.replaced.has('collections') ? 'temp.new_collections' : 'main.collections'}
      (addr, height, name, origin_name, norm_name, norm_origin_name, creator_id, timestamp, json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, '')`);
    this.collectionStmt.run(addr, height, name, originName, normName, normOriginName, creatorId, timestamp);
  }

  private nftStmt?: Database.Statement;
  insertNft(collectionAddr: Buffer, tokenId: string, height: number, ownerId: number, objectAccountId: number | null, json: string): void {
    this.nftStmt ??= this.db.prepare(`INSERT INTO ${this.replaced.has('tokens') ? 'temp.new_nfts' : 'main.nfts'}
      (collection_addr, token_id, height, owner_id, object_account_id, json) VALUES (?, ?, ?, ?, ?, ?)`);
    this.nftStmt.run(collectionAddr, tokenId, height, ownerId, objectAccountId, packRow(json));
  }

  txExists(sequence: number): boolean {
    return this.stmts.txExists.get(sequence) !== undefined;
  }

  insertNftTx(collectionAddr: Buffer, tokenId: string, sequence: number): void {
    this.stmts.nftTx.run(collectionAddr, tokenId, sequence);
    this.linkedCollections.add(collectionTag(collectionAddr.toString('hex')));
    if (this.mode === 'inPlace') this.changed.add(collectionTag(collectionAddr.toString('hex')));
    const key = collectionAddr.toString('hex') + '\u0000' + tokenId;
    const c = this.nftTxCounts.get(key);
    if (c) c.n++;
    else this.nftTxCounts.set(key, { addr: collectionAddr, tokenId, n: 1 });
  }

  /** While the rich list loads: a duplicate (denom, account) fails on its record (SQLITE_CONSTRAINT_UNIQUE). */
  beginHolders(): void {
    this.db.exec('CREATE UNIQUE INDEX richlist_unique ON richlist (denom, account)');
  }

  /** The rich list is loaded: its uniqueness index goes (serving does not use it). */
  endHolders(): void {
    this.db.exec('DROP INDEX richlist_unique');
  }

  insertHolder(denom: string, amountKey: string, account: Buffer): void {
    // wire format 2 stores no holder JSON: it is rendered from account and amount_key (src/snapshot/queries/richlist.ts)
    this.stmts.holder.run(denom, amountKey, account, '');
  }

  insertDenomContract(denom: string, contract: string): void {
    this.stmts.denomContract.run(denom, contract);
  }

  /**
   * Adds the written txs' contributions to the count columns: accounts, msg types, msg-type
   * sets and (account, set) pairs; NFT ↔ tx link counts. On a fresh file the columns start at
   * 0, on a base they hold the base's counts: the same code serves both.
   */
  private applyTxCounts(): void {
    const db = this.db;
    const perAccount = new Map<number, number>();
    const pair = db.prepare(`INSERT INTO account_msg_type_sets (account_id, set_id, tx_count, signer_tx_count) VALUES (?, ?, ?, ?)
      ON CONFLICT (account_id, set_id) DO UPDATE SET tx_count = tx_count + excluded.tx_count, signer_tx_count = signer_tx_count + excluded.signer_tx_count`);
    // In key order: (account, set) ascending, so the inserts walk the b-tree once.
    const keys = [...this.pairCounts.keys()].sort((a, b) => a - b);
    for (const key of keys) {
      const v = this.pairCounts.get(key) as number;
      const accountId = Math.floor(key / SET_BITS);
      const n = Math.floor(v / TX_ONE);
      const s = v - n * TX_ONE;
      pair.run(accountId, key - accountId * SET_BITS, n, s);
      perAccount.set(accountId, (perAccount.get(accountId) ?? 0) + v);
    }
    this.pairCounts.clear();
    const account = db.prepare('UPDATE accounts SET tx_count = tx_count + ?, signer_tx_count = signer_tx_count + ? WHERE id = ?');
    for (const [id, v] of perAccount) {
      const n = Math.floor(v / TX_ONE);
      account.run(n, v - n * TX_ONE, id);
    }
    const type = db.prepare('UPDATE msg_types SET tx_count = tx_count + ? WHERE id = ?');
    for (const [id, n] of this.typeCounts) type.run(n, id);
    const set = db.prepare('UPDATE msg_type_sets SET tx_count = tx_count + ? WHERE id = ?');
    for (const [id, n] of this.setCounts) set.run(n, id);
    this.typeCounts.clear();
    this.setCounts.clear();
    const link = db.prepare(`INSERT INTO nft_tx_counts (collection_addr, token_id, tx_count) VALUES (?, ?, ?)
      ON CONFLICT (collection_addr, token_id) DO UPDATE SET tx_count = tx_count + excluded.tx_count`);
    for (const c of this.nftTxCounts.values()) link.run(c.addr, c.tokenId, c.n);
    this.nftTxCounts.clear();
  }

  /**
   * extend: applies the delivered collections / tokens as a diff against the base's, then
   * recounts only what the changed rows touch (their collections, their old and new owners).
   * Returns the collections whose JSON must be rendered again.
   */
  /** collections inserted − deleted by applyNftState (count_collections on a base) */
  private collectionsDelta = 0;

  private applyNftState(partial: ReadonlySet<string>, complete: ReadonlySet<string>): void {
    const db = this.db;
    const cols = this.replaced.has('collections');
    const toks = this.replaced.has('tokens');
    // Collections delivered whole: a base collection without an identical delivered one goes.
    // Only those that can have changed (follow, partial): a base collection is compared only
    // with a delivered one of its address; the others stay as they are.
    if (partial.has('collections') && !partial.has('tokens')) throw new Error('internal: partial collections without changed-only tokens');
    const deliveredOnly = partial.has('collections') ? 'c.addr IN (SELECT addr FROM new_collections) AND ' : '';
    // Whole state: a base row without an identical delivered row goes. Changed rows only
    // (follow): a base row goes only when a delivered row of its key differs (walks the delivered
    // rows), or when its collection was delivered whole (`complete`: a burn) without it.
    const same = `n.height = o.height AND n.owner_id = o.owner_id AND n.object_account_id IS o.object_account_id AND n.json = o.json`;
    if (complete.size > 0 && !partial.has('tokens')) throw new Error('internal: complete collections without changed-only tokens');
    for (const hex of complete) if (!/^(?:[0-9a-f]{2})+$/.test(hex)) throw new Error(`internal: collection ${JSON.stringify(hex)} is not lower-case hex`);
    const completeSql =
      complete.size === 0
        ? ''
        : `
         UNION ALL
         SELECT o.collection_addr, o.token_id, o.owner_id FROM main.nfts o
           WHERE o.collection_addr IN (${[...complete].map((hex) => `x'${hex}'`).join(', ')})
             AND NOT EXISTS (SELECT 1 FROM new_nfts n WHERE n.collection_addr = o.collection_addr AND n.token_id = o.token_id)`;
    // CROSS JOIN keeps the delivered rows as the outer loop: SQLite has statistics for main.nfts
    // but none for the temp table, and otherwise scanned every NFT (28 ms of a one-block batch on
    // a 1M-tx chain's 98k NFTs, bench/README.md "Follow, round 3c").
    const goneSql = partial.has('tokens')
      ? `SELECT o.collection_addr, o.token_id, o.owner_id FROM new_nfts n
           CROSS JOIN main.nfts o ON o.collection_addr = n.collection_addr AND o.token_id = n.token_id WHERE NOT (${same})${completeSql}`
      : `SELECT o.collection_addr, o.token_id, o.owner_id FROM main.nfts o WHERE NOT EXISTS (
           SELECT 1 FROM new_nfts n WHERE n.collection_addr = o.collection_addr AND n.token_id = o.token_id AND ${same})`;
    // touched_*: whose counts or JSON change. recount_*: counted whole — collections new or changed
    // themselves (rare) and their owners; every other count moves by the NFTs that came and went
    // (nft_delta), so a batch moving one NFT of a 1M-NFT collection costs O(1), not O(collection).
    db.exec(`CREATE TEMP TABLE touched_collections (addr BLOB PRIMARY KEY) WITHOUT ROWID;
             CREATE TEMP TABLE touched_owners (id INTEGER PRIMARY KEY);
             CREATE TEMP TABLE recount_collections (addr BLOB PRIMARY KEY) WITHOUT ROWID;
             CREATE TEMP TABLE recount_owners (id INTEGER PRIMARY KEY);
             CREATE TEMP TABLE nft_delta (collection_addr BLOB NOT NULL, owner_id INTEGER NOT NULL, d INTEGER NOT NULL);`);
    if (cols) {
      db.exec(`
        INSERT OR IGNORE INTO touched_collections
          SELECT addr FROM main.collections c WHERE ${deliveredOnly}NOT EXISTS (SELECT 1 FROM new_collections n WHERE n.addr = c.addr
            AND n.height = c.height AND n.name = c.name AND n.origin_name = c.origin_name AND n.creator_id = c.creator_id AND n.timestamp = c.timestamp);
        INSERT OR IGNORE INTO touched_collections
          SELECT addr FROM new_collections n WHERE NOT EXISTS (SELECT 1 FROM main.collections c WHERE n.addr = c.addr
            AND n.height = c.height AND n.name = c.name AND n.origin_name = c.origin_name AND n.creator_id = c.creator_id AND n.timestamp = c.timestamp);
        DELETE FROM main.collections WHERE addr IN (SELECT addr FROM touched_collections);`);
      this.collectionsDelta -= db.prepare('SELECT changes()').pluck().get() as number;
      db.exec(`
        INSERT INTO main.collections (addr, height, name, origin_name, norm_name, norm_origin_name, creator_id, nft_count, timestamp, json)
          SELECT addr, height, name, origin_name, norm_name, norm_origin_name, creator_id, 0, timestamp, '' FROM new_collections
          WHERE addr IN (SELECT addr FROM touched_collections);`);
      this.collectionsDelta += db.prepare('SELECT changes()').pluck().get() as number;
      db.exec(`
        -- a changed collection's height is in its owners' account_collections rows
        INSERT OR IGNORE INTO recount_collections SELECT addr FROM touched_collections;
        INSERT OR IGNORE INTO recount_owners SELECT owner_id FROM main.nfts WHERE collection_addr IN (SELECT addr FROM recount_collections);
        INSERT OR IGNORE INTO touched_owners SELECT id FROM recount_owners;
        DROP TABLE new_collections;`);
    }
    if (toks) {
      db.exec(`
        CREATE TEMP TABLE gone AS ${goneSql};
        CREATE TEMP TABLE came AS SELECT * FROM new_nfts n WHERE NOT EXISTS (
          SELECT 1 FROM main.nfts o WHERE n.collection_addr = o.collection_addr AND n.token_id = o.token_id AND ${same});
        DELETE FROM main.nfts WHERE (collection_addr, token_id) IN (SELECT collection_addr, token_id FROM gone);
        INSERT INTO main.nfts SELECT * FROM came;
        INSERT OR IGNORE INTO touched_collections SELECT collection_addr FROM gone UNION SELECT collection_addr FROM came;
        INSERT OR IGNORE INTO touched_owners SELECT owner_id FROM gone UNION SELECT owner_id FROM came;
        INSERT OR IGNORE INTO recount_owners SELECT owner_id FROM gone WHERE collection_addr IN (SELECT addr FROM recount_collections)
          UNION SELECT owner_id FROM came WHERE collection_addr IN (SELECT addr FROM recount_collections);
        INSERT INTO nft_delta SELECT collection_addr, owner_id, sum(d) FROM (
            SELECT collection_addr, owner_id, -1 AS d FROM gone UNION ALL SELECT collection_addr, owner_id, 1 FROM came)
          GROUP BY collection_addr, owner_id HAVING sum(d) <> 0;
        DROP TABLE gone; DROP TABLE came; DROP TABLE new_nfts;`);
    }
    db.exec(`
      UPDATE main.collections SET nft_count = (SELECT count(*) FROM main.nfts n WHERE n.collection_addr = collections.addr)
        WHERE addr IN (SELECT addr FROM recount_collections);
      UPDATE main.collections SET nft_count = nft_count + (SELECT sum(d) FROM nft_delta k WHERE k.collection_addr = collections.addr)
        WHERE addr IN (SELECT collection_addr FROM nft_delta) AND addr NOT IN (SELECT addr FROM recount_collections);
      DELETE FROM main.account_collections WHERE account_id IN (SELECT id FROM recount_owners);
      INSERT INTO main.account_collections (account_id, height, collection_addr, nft_count)
        SELECT n.owner_id, c.height, c.addr, count(*) FROM main.nfts n JOIN main.collections c ON c.addr = n.collection_addr
        WHERE n.owner_id IN (SELECT id FROM recount_owners) AND n.owner_id <> ${NO_OWNER} GROUP BY n.owner_id, c.addr;
      INSERT INTO main.account_collections (account_id, height, collection_addr, nft_count)
        SELECT k.owner_id, c.height, k.collection_addr, k.d FROM nft_delta k JOIN main.collections c ON c.addr = k.collection_addr
        WHERE k.owner_id <> ${NO_OWNER} AND k.owner_id NOT IN (SELECT id FROM recount_owners)
        ON CONFLICT (account_id, height, collection_addr) DO UPDATE SET nft_count = nft_count + excluded.nft_count;
      DELETE FROM main.account_collections WHERE nft_count = 0 AND account_id IN (SELECT owner_id FROM nft_delta);
      DROP TABLE nft_delta; DROP TABLE recount_collections; DROP TABLE recount_owners;
      UPDATE main.accounts SET
        nft_count = coalesce((SELECT sum(nft_count) FROM main.account_collections k WHERE k.account_id = accounts.id), 0),
        collection_count = (SELECT count(*) FROM main.account_collections k WHERE k.account_id = accounts.id)
        WHERE id IN (SELECT id FROM touched_owners);`);
  }

  /** Renders the Collection JSON (it carries nft_count) of every collection, or of `only`'s. */
  private renderCollections(prefix: string, only?: string): void {
    const db = this.db;
    const rows = db
      .prepare(
        `SELECT c.addr, c.height, c.name, c.origin_name, c.nft_count, c.timestamp, a.addr AS creator
                             FROM main.collections c JOIN main.accounts a ON a.id = c.creator_id
                             ${only ? `WHERE c.addr IN (SELECT addr FROM ${only})` : ''}`,
      )
      .all() as {
      addr: Buffer;
      height: number;
      name: string;
      origin_name: string;
      nft_count: number;
      timestamp: string;
      creator: Buffer;
    }[];
    const update = db.prepare('UPDATE main.collections SET json = ? WHERE addr = ?');
    for (const r of rows) {
      update.run(
        packRow(
          collectionJson({
            objectAddr: toHex0x(r.addr),
            creator: toBech32(r.creator, prefix),
            name: r.name,
            originName: r.origin_name,
            nftCount: r.nft_count,
            height: r.height,
            timestamp: r.timestamp,
          }),
        ),
        r.addr,
      );
    }
  }

  /** Index, count, render, check, then atomically replace the target. */
  finish(meta: { prefix: string; partial?: ReadonlySet<string>; completeCollections?: ReadonlySet<string> }): void {
    const step = this.opts.onStep ?? ((): void => undefined);
    const db = this.db;
    this.txAccounts.flush();
    this.txMsgTypes.flush();
    const count = (table: string): number => db.prepare(`SELECT count(*) FROM main.${table}`).pluck().get() as number;
    // a resumable load: everything after its last checkpoint is one transaction (a kill rolls back to it)
    const resumable = this.loadId !== undefined;
    if (!this.base) {
      if (!resumable) db.exec('COMMIT');
      step('indexes');
      db.exec(schemaSql(INDEXES_SQL));
      step('counts');
      if (!resumable) db.exec('BEGIN');
      this.applyTxCounts();
      db.exec(`
        UPDATE collections SET nft_count = k.n
          FROM (SELECT collection_addr, count(*) AS n FROM nfts GROUP BY collection_addr) AS k
          WHERE k.collection_addr = collections.addr;
        INSERT INTO account_collections (account_id, height, collection_addr, nft_count)
          SELECT n.owner_id, c.height, c.addr, count(*) FROM nfts n JOIN collections c ON c.addr = n.collection_addr
          WHERE n.owner_id <> ${NO_OWNER} GROUP BY n.owner_id, c.addr;
        UPDATE accounts SET nft_count = k.n, collection_count = k.c
          FROM (SELECT account_id, sum(nft_count) AS n, count(*) AS c FROM account_collections GROUP BY account_id) AS k
          WHERE k.account_id = accounts.id;
        INSERT INTO richlist_denoms (denom, holder_count) SELECT denom, count(*) FROM richlist GROUP BY denom;`);
      writeRanks(db, 'all');
      step('collections');
      this.renderCollections(meta.prefix);
      step('digests');
      writeDigests(db, 'all');
      if (!resumable) db.exec('COMMIT');
    } else {
      step('counts');
      this.applyTxCounts();
      if (this.replaced.has('richlist')) {
        db.exec('INSERT INTO richlist_denoms (denom, holder_count) SELECT denom, count(*) FROM richlist GROUP BY denom');
      }
      // a version-2 base gets its rank marks (all of them) here; otherwise a delivered rich list's are written again
      if (!ensureRanks(db) && this.replaced.has('richlist')) writeRanks(db, 'all');
      step('collections');
      this.applyNftState(meta.partial ?? new Set(), meta.completeCollections ?? new Set());
      this.renderCollections(meta.prefix, 'temp.touched_collections');
      step('digests');
      this.writeTagDigests();
      if (this.mode === 'inPlace') this.recordBatch();
      db.exec('DROP TABLE temp.touched_collections; DROP TABLE temp.touched_owners;');
      // In place, the meta below belongs to the same transaction: readers see all or nothing.
      if (this.mode !== 'inPlace') db.exec('COMMIT');
    }
    // What this import added, on top of the base's counts (none for a new snapshot).
    const old = (key: string): number => Number(db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get(key) ?? 0);
    this.setMeta('count_blocks', old('count_blocks') + this.newBlocks);
    this.setMeta('count_txs', old('count_txs') + this.newTxs);
    step('evm');
    finishEvm(db, (k, v) => this.setMeta(k, v), this.evm);
    // On a base, by the rows the NFT diff deleted and inserted (a count(*) walks every collection).
    const baseCollections = this.base ? db.prepare("SELECT value FROM meta WHERE key = 'count_collections'").pluck().get() : undefined;
    this.setMeta('count_collections', baseCollections === undefined ? count('collections') : Number(baseCollections) + this.collectionsDelta);
    this.setMeta('count_accounts', this.nextAccountId - 1);
    this.setMeta('snapshot_id', randomBytes(16).toString('hex'));
    this.setMeta('created_at', new Date().toISOString());
    this.setMeta('schema_version', SCHEMA_VERSION);
    if (resumable) db.prepare('DELETE FROM meta WHERE key = ?').run(CHECKPOINT_KEY);
    if (this.mode === 'inPlace') {
      step('commit');
      db.exec('COMMIT');
      db.close();
      return;
    }
    step('analyze');
    if (!this.base) db.exec('ANALYZE');
    // On a base: its statistics stand unless a table grew or shrank enough for SQLite to redo them.
    else db.exec('PRAGMA analysis_limit = 1000; PRAGMA optimize = 0x10002;');
    if (resumable) {
      db.pragma(`user_version = ${SCHEMA_VERSION}`);
      db.exec('COMMIT');
    }
    const mode = this.opts.check;
    if (mode !== undefined && mode !== 'none') {
      step('integrity check');
      const check = db.pragma(mode === 'quick' ? 'quick_check' : 'integrity_check', { simple: true });
      if (check !== 'ok') throw new Error(`integrity check of the new snapshot failed: ${String(check)}`);
    }
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
    step('sync'); // the load wrote with synchronous = OFF: most of the file is still to be flushed
    db.close();
    syncAndRename(this.tempPath, this.target);
  }

  /** Drops the temporary file (a resumable load keeps it at its last checkpoint); the target stays as it was. */
  abort(): void {
    if (this.mode === 'inPlace') {
      // Rolled back: the live file keeps its last committed batch.
      try {
        if (this.db.open && this.db.inTransaction) this.db.exec('ROLLBACK');
      } catch {
        /* closing rolls back too */
      }
      try {
        if (this.db.open) this.db.close();
      } catch {
        /* already failing */
      }
      return;
    }
    try {
      if (this.db.open) this.db.close();
    } catch {
      /* already failing */
    }
    if (this.loadId !== undefined) return;
    if (existsSync(this.tempPath)) unlinkSync(this.tempPath);
  }

  /** A resumable load's file with no checkpoint to go on from (a failure the next run must not repeat): removed. */
  discard(): void {
    try {
      if (this.db.open) this.db.close();
    } catch {
      /* already failing */
    }
    removeLoadFile(this.tempPath);
  }
}

/** Indexes a batch's keyed reads need that snapshots made before them lack (built once, here). */
const FOLLOW_INDEXES = ['nfts_by_object'];

/**
 * Puts a finished snapshot file in WAL mode (a header flag, persistent; a no-op when it is) and
 * builds the indexes of FOLLOW_INDEXES it lacks, with the schema's own text (a followed file
 * stays table-for-table and index-for-index equal to a fresh import). The switch needs the file
 * to itself: while another connection reads a rollback-journal file (a serve's start-up check
 * reads all of it) it throws a StoreError with code SQLITE_BUSY after `busyTimeoutMs` (default
 * 5 s), the file unchanged; the caller decides how long to keep trying (src/commands/follow.ts).
 */
export function useWal(file: string, log?: (line: string) => void, busyTimeoutMs?: number): void {
  // inPlace puts the file in WAL mode (a header flag, persistent)
  const db = openStore(file, 'inPlace', { busyTimeoutMs });
  try {
    const has = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'index' AND name = ?").pluck();
    for (const name of FOLLOW_INDEXES) {
      if (has.get(name) !== undefined) continue;
      const sql = new RegExp(`^CREATE INDEX ${name} [^;]*`, 'm').exec(schemaSql(INDEXES_SQL))?.[0];
      if (sql === undefined) throw new Error(`internal: index ${name} is not in ${INDEXES_SQL}`);
      const t = Date.now();
      db.exec(sql);
      log?.(`follow: built index ${name} (this snapshot predates it) in ${Date.now() - t} ms`);
    }
  } finally {
    db.close();
  }
}

/**
 * A fixture cut's last step (src/import/cut/run.ts): stamps the finished file `loaded` with
 * `snapshotId` and a created_at of its newest block (so two runs over the same records agree),
 * then copies it by VACUUM INTO to `copy`, a fresh file with its pages in canonical order.
 */
export function canonicalCopy(loaded: string, copy: string, snapshotId: string): void {
  const db = openStore(loaded, 'bulk', { mustExist: true });
  try {
    const newest = prepareTipQueries(db).latestTimeUs();
    const set = db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)');
    set.run('snapshot_id', snapshotId);
    set.run('created_at', new Date(Math.floor((newest ?? 0) / 1000)).toISOString());
    db.prepare('VACUUM INTO ?').run(copy);
  } finally {
    db.close();
  }
}
