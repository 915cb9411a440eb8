import type Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, openSync, renameSync, unlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { toBech32, toHex0x } from '../lib/address';
import { collectionJson } from '../routes/nft/serialize';
import { openDatabase } from '../sqlite';
import { finishEvm } from './evm';
import { INDEXES_SQL, SCHEMA_VERSION, schemaSql, TABLES_SQL } from '../snapshot/schema';

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

  constructor(db: Database.Database, table: string, private readonly columns: string[]) {
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

export interface WriterOptions {
  /** report a finalize step (for progress output) */
  onStep?: (step: string) => void;
}

/**
 * Writes one snapshot: a temporary file beside the target, bulk-loaded in one transaction,
 * indexed and counted after the load, checked, fsynced and renamed over the target only when
 * everything succeeded. Until `finish()` returns the target is untouched.
 */
export class SnapshotWriter {
  readonly db: Database.Database;
  readonly tempPath: string;
  private readonly accountIds = new Map<string, number>();
  private readonly msgTypeIds = new Map<string, number>();
  private readonly stmts;
  private readonly txAccounts: LinkRows;
  private readonly txMsgTypes: LinkRows;

  private constructor(readonly target: string, private readonly opts: WriterOptions) {
    this.tempPath = join(dirname(target), `.${basename(target)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
    this.db = openDatabase(this.tempPath);
    // No rollback journal: the file is thrown away unless the whole load succeeds.
    // better-sqlite3's defensive mode silently keeps DELETE unless unsafe mode is on.
    this.db.unsafeMode(true);
    this.db.pragma('journal_mode = OFF');
    this.db.unsafeMode(false);
    this.db.pragma('synchronous = OFF');
    this.db.pragma('locking_mode = EXCLUSIVE');
    this.db.pragma('temp_store = MEMORY');
    // 96 MiB: holds the pages the load keeps revisiting (the tx_accounts b-tree of a 1M-tx
    // chain is ≈46 MB; txs are appended), and keeps the import under 500 MB with parser threads.
    this.db.pragma('cache_size = -98304');
    this.db.exec(schemaSql(TABLES_SQL));
    const p = (sql: string): Database.Statement => this.db.prepare(sql);
    this.stmts = {
      meta: p('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)'),
      validator: p('INSERT INTO validators (proposer, moniker, operator_address) VALUES (?, ?, ?)'),
      account: p('INSERT INTO accounts (id, addr) VALUES (?, ?)'),
      block: p('INSERT INTO blocks (height, time_us, tx_count, json) VALUES (?, ?, ?, ?)'),
      // json arrives as UTF-8 bytes (from the parser threads); CAST stores them as that TEXT.
      tx: p('INSERT INTO txs (sequence, height, hash, json) VALUES (?, ?, ?, CAST(? AS TEXT))'),
      msgType: p('INSERT INTO msg_types (id, name) VALUES (?, ?)'),
      collection: p(`INSERT INTO collections (addr, height, name, origin_name, norm_name, norm_origin_name, creator_id, timestamp, json)
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?, '')`),
      nft: p('INSERT INTO nfts (collection_addr, token_id, height, owner_id, object_account_id, json) VALUES (?, ?, ?, ?, ?, ?)'),
      nftTx: p('INSERT INTO nft_txs (collection_addr, token_id, sequence) VALUES (?, ?, ?)'),
      txExists: p('SELECT 1 FROM txs WHERE sequence = ?').pluck(),
      holder: p('INSERT INTO richlist (denom, amount_key, account, json) VALUES (?, ?, ?, ?)'),
      denomContract: p('INSERT INTO denom_contracts (denom, contract) VALUES (?, ?)'),
    };
    this.txAccounts = new LinkRows(this.db, 'tx_accounts', ['account_id', 'sequence', 'signer']);
    this.txMsgTypes = new LinkRows(this.db, 'tx_msg_types', ['msg_type_id', 'sequence']);
    // One transaction for the whole load: without a journal a commit only writes the dirty
    // pages out, which the page cache does anyway when it fills (memory stays at cache_size),
    // and fewer commits write the scattered tx_accounts pages fewer times.
    this.db.exec('BEGIN');
  }

  static create(target: string, opts: WriterOptions = {}): SnapshotWriter {
    return new SnapshotWriter(target, opts);
  }

  accountId(addr: Buffer): number {
    return this.accountIdOfHex(addr.toString('hex'), addr);
  }

  /** The id of the account with canonical bytes `hex` (lower case), added on first use. */
  private accountIdOfHex(hex: string, addr?: Buffer): number {
    let id = this.accountIds.get(hex);
    if (id === undefined) {
      id = this.accountIds.size + 1;
      this.accountIds.set(hex, id);
      this.stmts.account.run(id, addr ?? Buffer.from(hex, 'hex'));
    }
    return id;
  }

  setMeta(key: string, value: string | number): void {
    this.stmts.meta.run(key, String(value));
  }

  insertValidator(proposer: string, moniker: string, operatorAddress: string): void {
    this.stmts.validator.run(proposer, moniker, operatorAddress);
  }

  insertBlock(height: number, timeUs: number, txCount: number, json: string): void {
    this.stmts.block.run(height, timeUs, txCount, json);
  }

  /**
   * One tx with the accounts it touches (distinct canonical hex, the signer first when
   * `signerFirst`) and its distinct message types.
   */
  insertTx(sequence: number, height: number, hash: Uint8Array, json: Uint8Array, accounts: string[], signerFirst: boolean, msgTypes: string[]): void {
    this.stmts.tx.run(sequence, height, hash, json);
    for (let i = 0; i < accounts.length; i++) {
      this.txAccounts.add(this.accountIdOfHex(accounts[i]), sequence, signerFirst && i === 0 ? 1 : 0);
    }
    for (const name of msgTypes) {
      let id = this.msgTypeIds.get(name);
      if (id === undefined) {
        id = this.msgTypeIds.size + 1;
        this.msgTypeIds.set(name, id);
        this.stmts.msgType.run(id, name);
      }
      this.txMsgTypes.add(id, sequence);
    }
  }

  insertCollection(addr: Buffer, height: number, name: string, originName: string,
    normName: string, normOriginName: string, creatorId: number, timestamp: string): void {
    // json is rendered in finish(), once nft_count is known.
    this.stmts.collection.run(addr, height, name, originName, normName, normOriginName, creatorId, timestamp);
  }

  insertNft(collectionAddr: Buffer, tokenId: string, height: number, ownerId: number,
    objectAccountId: number | null, json: string): void {
    this.stmts.nft.run(collectionAddr, tokenId, height, ownerId, objectAccountId, json);
  }

  txExists(sequence: number): boolean {
    return this.stmts.txExists.get(sequence) !== undefined;
  }

  insertNftTx(collectionAddr: Buffer, tokenId: string, sequence: number): void {
    this.stmts.nftTx.run(collectionAddr, tokenId, sequence);
  }

  insertHolder(denom: string, amountKey: string, account: Buffer, json: string): void {
    this.stmts.holder.run(denom, amountKey, account, json);
  }

  insertDenomContract(denom: string, contract: string): void {
    this.stmts.denomContract.run(denom, contract);
  }

  /** Index, count, render, check, then atomically replace the target. */
  finish(meta: { prefix: string }): void {
    const step = this.opts.onStep ?? ((): void => undefined);
    const db = this.db;
    this.txAccounts.flush();
    this.txMsgTypes.flush();
    db.exec('COMMIT');
    step('indexes');
    db.exec(schemaSql(INDEXES_SQL));
    step('counts');
    db.exec(`
      BEGIN;
      CREATE TEMP TABLE c AS SELECT account_id, count(*) AS n, sum(signer) AS s FROM tx_accounts GROUP BY account_id;
      UPDATE accounts SET tx_count = c.n, signer_tx_count = c.s FROM c WHERE c.account_id = accounts.id;
      DROP TABLE c;
      UPDATE msg_types SET tx_count = m.n
        FROM (SELECT msg_type_id, count(*) AS n FROM tx_msg_types GROUP BY msg_type_id) AS m
        WHERE m.msg_type_id = msg_types.id;
      UPDATE collections SET nft_count = k.n
        FROM (SELECT collection_addr, count(*) AS n FROM nfts GROUP BY collection_addr) AS k
        WHERE k.collection_addr = collections.addr;
      INSERT INTO account_collections (account_id, height, collection_addr, nft_count)
        SELECT n.owner_id, c.height, c.addr, count(*) FROM nfts n JOIN collections c ON c.addr = n.collection_addr
        GROUP BY n.owner_id, c.addr;
      UPDATE accounts SET nft_count = k.n, collection_count = k.c
        FROM (SELECT account_id, sum(nft_count) AS n, count(*) AS c FROM account_collections GROUP BY account_id) AS k
        WHERE k.account_id = accounts.id;
      INSERT INTO nft_tx_counts (collection_addr, token_id, tx_count)
        SELECT collection_addr, token_id, count(*) FROM nft_txs GROUP BY collection_addr, token_id;
      INSERT INTO richlist_denoms (denom, holder_count) SELECT denom, count(*) FROM richlist GROUP BY denom;
      COMMIT;`);
    step('evm');
    finishEvm(db, (k, v) => this.setMeta(k, v));
    step('collections');
    const rows = db.prepare(`SELECT c.addr, c.height, c.name, c.origin_name, c.nft_count, c.timestamp, a.addr AS creator
                             FROM collections c JOIN accounts a ON a.id = c.creator_id`).all() as {
      addr: Buffer; height: number; name: string; origin_name: string; nft_count: number; timestamp: string; creator: Buffer;
    }[];
    const update = db.prepare('UPDATE collections SET json = ? WHERE addr = ?');
    db.transaction(() => {
      for (const r of rows) {
        update.run(collectionJson({
          objectAddr: toHex0x(r.addr), creator: toBech32(r.creator, meta.prefix), name: r.name,
          originName: r.origin_name, nftCount: r.nft_count, height: r.height, timestamp: r.timestamp,
        }), r.addr);
      }
    })();
    const count = (table: string): number => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
    this.setMeta('count_blocks', count('blocks'));
    this.setMeta('count_txs', count('txs'));
    this.setMeta('count_collections', count('collections'));
    this.setMeta('count_accounts', count('accounts'));
    this.setMeta('snapshot_id', randomBytes(16).toString('hex'));
    this.setMeta('created_at', new Date().toISOString());
    this.setMeta('schema_version', SCHEMA_VERSION);
    step('analyze');
    db.exec('ANALYZE');
    step('integrity check');
    const check = db.pragma('integrity_check', { simple: true });
    if (check !== 'ok') throw new Error(`integrity check of the new snapshot failed: ${String(check)}`);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
    step('sync'); // the load wrote with synchronous = OFF: most of the file is still to be flushed
    db.close();
    const fd = openSync(this.tempPath, 'r');
    try { fsyncSync(fd); } finally { closeSync(fd); }
    renameSync(this.tempPath, this.target);
    const dirFd = openSync(dirname(this.target), 'r');
    try { fsyncSync(dirFd); } finally { closeSync(dirFd); }
  }

  /** Drops the temporary file; the target stays as it was. */
  abort(): void {
    try { if (this.db.open) this.db.close(); } catch { /* already failing */ }
    if (existsSync(this.tempPath)) unlinkSync(this.tempPath);
  }
}
