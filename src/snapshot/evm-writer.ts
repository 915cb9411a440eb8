/**
 * The EVM tables of the snapshot writer (src/snapshot/writer.ts): the evm_* rows and their
 * account links as the loader (src/records/evm.ts) delivers them, and the counts they add.
 */
import type Database from 'better-sqlite3';
import { packRow } from '../wire/packed';

/**
 * What the rows inserted by this import add to the per-hash / per-height / per-account counts:
 * on top of a base snapshot (import --base) finishEvm adds these instead of recounting tables.
 */
/** What the EVM part needs of the snapshot writer (SnapshotWriter is one). */
export interface EvmWriter {
  readonly db: Database.Database;
  readonly evm: EvmDelta;
  readonly base?: { file: string; height: number };
  accountId(addr: Buffer): number;
}

export interface EvmDelta {
  /** the base's highest sequences (0 without a base): new rows must come after them */
  baseTxSequence: number;
  baseInternalSequence: number;
  txs: number;
  internals: number;
  hashes: Map<string, number>;
  heights: Map<number, { t: number; i: number }>;
  accounts: Map<number, { t: number; s: number; i: number }>;
}

export function newEvmDelta(db?: Database.Database): EvmDelta {
  const max = (t: string): number => (db ? ((db.prepare(`SELECT max(sequence) FROM ${t}`).pluck().get() as number | null) ?? 0) : 0);
  return {
    baseTxSequence: max('evm_txs'),
    baseInternalSequence: max('evm_internal_txs'),
    txs: 0,
    internals: 0,
    hashes: new Map(),
    heights: new Map(),
    accounts: new Map(),
  };
}

/** Inserts into the evm_* tables; the link tables get their counts in finishEvm. */
export class EvmTables {
  private readonly s;
  private readonly d: EvmDelta;

  constructor(private readonly writer: EvmWriter) {
    this.d = writer.evm;
    const p = (sql: string): Database.Statement => writer.db.prepare(sql);
    this.s = {
      tx: p('INSERT INTO evm_txs (sequence, height, hash, json) VALUES (?, ?, ?, ?)'),
      txAccount: p('INSERT OR IGNORE INTO evm_tx_accounts (account_id, sequence, signer) VALUES (?, ?, ?)'),
      internal: p('INSERT INTO evm_internal_txs (sequence, height, hash, json) VALUES (?, ?, ?, ?)'),
      internalAccount: p('INSERT OR IGNORE INTO evm_internal_tx_accounts (account_id, sequence) VALUES (?, ?)'),
      hash: p('INSERT OR IGNORE INTO evm_hashes (hash, internal_tx_count) VALUES (?, 0)'),
      block: p('SELECT 1 FROM blocks WHERE height = ?').pluck(),
    };
  }

  blockExists(height: number): boolean {
    return this.s.block.get(height) !== undefined;
  }

  private height(h: number): { t: number; i: number } {
    let c = this.d.heights.get(h);
    if (!c) this.d.heights.set(h, (c = { t: 0, i: 0 }));
    return c;
  }

  private account(id: number): { t: number; s: number; i: number } {
    let c = this.d.accounts.get(id);
    if (!c) this.d.accounts.set(id, (c = { t: 0, s: 0, i: 0 }));
    return c;
  }

  /** `signer` (canonical hex) gets signer = 1; it is linked even if not among `accounts`. */
  insertTx(sequence: number, height: number, hash: Buffer, json: string, signer: string | undefined, accounts: Iterable<string>): void {
    this.s.tx.run(sequence, height, hash, packRow(json));
    this.s.hash.run(hash);
    this.d.txs++;
    this.height(height).t++;
    const link = (a: string, isSigner: number): void => {
      const id = this.writer.accountId(Buffer.from(a, 'hex'));
      if (this.s.txAccount.run(id, sequence, isSigner).changes === 0) return;
      const c = this.account(id);
      c.t++;
      c.s += isSigner;
    };
    if (signer !== undefined) link(signer, 1);
    for (const a of accounts) if (a !== signer) link(a, 0);
  }

  insertInternal(sequence: number, height: number, hash: Buffer, json: string, accounts: Iterable<string>): void {
    this.s.internal.run(sequence, height, hash, packRow(json));
    this.s.hash.run(hash);
    this.d.internals++;
    this.height(height).i++;
    const k = hash.toString('hex');
    this.d.hashes.set(k, (this.d.hashes.get(k) ?? 0) + 1);
    for (const a of accounts) {
      const id = this.writer.accountId(Buffer.from(a, 'hex'));
      if (this.s.internalAccount.run(id, sequence).changes > 0) this.account(id).i++;
    }
  }
}

/**
 * After the load: per-hash, per-height and per-account counts, the meta totals and, unless the
 * source gave it, /status `internal_tx_height` by rollytics' rule (docs/api-contract.md#status): the highest
 * height with internal txs, or the latest block when no later block has txs.
 */
export function finishEvm(db: Database.Database, setMeta: (key: string, value: string | number) => void, added: EvmDelta): void {
  const one = (sql: string): number => (db.prepare(sql).pluck().get() as number | null) ?? 0;
  // What the inserted rows count, added to the counts already there (a base's, or none); a
  // hash row exists for every hash inserted, height and account rows may not yet.
  const hash = db.prepare('UPDATE evm_hashes SET internal_tx_count = internal_tx_count + ? WHERE hash = ?');
  const height = db.prepare(`INSERT INTO evm_height_counts (height, tx_count, internal_tx_count) VALUES (?, ?, ?)
    ON CONFLICT (height) DO UPDATE SET tx_count = tx_count + excluded.tx_count, internal_tx_count = internal_tx_count + excluded.internal_tx_count`);
  const account = db.prepare(`INSERT INTO evm_account_counts (account_id, tx_count, signer_tx_count, internal_tx_count) VALUES (?, ?, ?, ?)
    ON CONFLICT (account_id) DO UPDATE SET tx_count = tx_count + excluded.tx_count, signer_tx_count = signer_tx_count + excluded.signer_tx_count,
      internal_tx_count = internal_tx_count + excluded.internal_tx_count`);
  const old = (key: string): number => Number(db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get(key) ?? 0);
  db.transaction(() => {
    for (const [h, n] of added.hashes) hash.run(n, Buffer.from(h, 'hex'));
    for (const [h, c] of added.heights) height.run(h, c.t, c.i);
    for (const [id, c] of added.accounts) account.run(id, c.t, c.s, c.i);
    setMeta('count_evm_txs', old('count_evm_txs') + added.txs);
    setMeta('count_evm_internal_txs', old('count_evm_internal_txs') + added.internals);
  })();
  const given = db.prepare("SELECT value FROM meta WHERE key = 'internal_tx_height'").pluck().get();
  const top = one('SELECT max(height) FROM evm_internal_txs'); // evm_internal_txs_by_height: one probe
  if (given === undefined && top > 0) {
    const later = one(`SELECT count(*) FROM blocks WHERE height > ${top} AND tx_count > 0`);
    setMeta('internal_tx_height', later > 0 ? top : one('SELECT max(height) FROM blocks'));
    // so that `import --base` derives it again over the new heights instead of copying it
    setMeta('internal_tx_height_derived', 1);
  }
}
