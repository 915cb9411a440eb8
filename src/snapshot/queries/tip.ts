/**
 * Where a snapshot ends: its highest block, tx sequences and commit markers. The readers that
 * append after the tip (follow, `import --base`), the commit watch of `serve` on a followed
 * file and the fixture cut ask these, on a connection of their own (a read-write one while
 * following, a bare probe for the commit watch), so each takes a `Database`, not a Snapshot.
 */
import type Database from 'better-sqlite3';
import { readPackedRow } from '../../wire/packed';

/** Where our snapshot ends, for the next range: the highest height, its time and sequences. */
export interface Tip {
  height: number;
  /** the highest block's stored time (µs since the epoch; 0 when there is no block) */
  timeUs: number;
  /** the highest tx sequence (0 when there is no tx) */
  txs: number;
  evmTxs: number;
  evmInternalTxs: number;
}

export interface TipQueries {
  /** the tip, and the highest block's hash (lower-case hex; undefined when there is no block) */
  tip(): { tip: Tip; hash: string | undefined };
  /** the highest block height (0 without blocks) */
  height(): number;
  /** the highest tx sequence (0 without txs) */
  txSequence(): number;
  /** the highest EVM tx / internal tx sequences (0 when there are none) */
  evmSequences(): { txs: number; internal: number };
  /** the stored time (µs) of the block at `height`, undefined without one */
  blockTimeUs(height: number): number | undefined;
  /** the latest stored block time (µs) of any block, undefined without blocks */
  latestTimeUs(): number | undefined;
}

/** The tip queries, prepared once on `db` (its own connection: they see its last commit). */
export function prepareTipQueries(db: Database.Database): TipQueries {
  const top = db.prepare('SELECT height, json, time_us FROM blocks ORDER BY height DESC LIMIT 1');
  const maxHeight = db.prepare('SELECT max(height) FROM blocks').pluck();
  const maxTx = db.prepare('SELECT max(sequence) FROM txs').pluck();
  const maxEvmTx = db.prepare('SELECT max(sequence) FROM evm_txs').pluck();
  const maxEvmInternal = db.prepare('SELECT max(sequence) FROM evm_internal_txs').pluck();
  const timeAt = db.prepare('SELECT time_us FROM blocks WHERE height = ?').pluck();
  const latest = db.prepare('SELECT max(time_us) FROM blocks').pluck();
  const max = (s: Database.Statement): number => (s.get() as number | null) ?? 0;
  return {
    tip() {
      const t = top.get() as { height: number; json: Buffer | string; time_us: number } | undefined;
      const hash = t === undefined ? undefined : (JSON.parse(readPackedRow(t.json)) as { hash?: unknown }).hash;
      return {
        tip: { height: t?.height ?? 0, timeUs: t?.time_us ?? 0, txs: max(maxTx), evmTxs: max(maxEvmTx), evmInternalTxs: max(maxEvmInternal) },
        hash: typeof hash === 'string' ? hash.toLowerCase() : undefined,
      };
    },
    height: () => max(maxHeight),
    txSequence: () => max(maxTx),
    evmSequences: () => ({ txs: max(maxEvmTx), internal: max(maxEvmInternal) }),
    blockTimeUs: (height) => timeAt.get(height) as number | undefined,
    latestTimeUs: () => (latest.get() as number | null) ?? undefined,
  };
}

/** The newest block's stored time (µs), undefined without blocks. */
export function newestBlockTimeUs(db: Database.Database): number | undefined {
  return db.prepare('SELECT time_us FROM blocks ORDER BY height DESC LIMIT 1').pluck().get() as number | undefined;
}

/**
 * What the commit watch of `serve` polls on its probe connection: `PRAGMA data_version`
 * (changes when another connection commits; microseconds) and the committed snapshot_id.
 */
export interface CommitProbe {
  dataVersion(): number;
  snapshotId(): string | undefined;
}

export function prepareCommitProbe(db: Database.Database): CommitProbe {
  const version = db.prepare('PRAGMA data_version').pluck();
  const id = db.prepare("SELECT value FROM meta WHERE key = 'snapshot_id'").pluck();
  return {
    dataVersion: () => version.get() as number,
    snapshotId: () => id.get() as string | undefined,
  };
}
