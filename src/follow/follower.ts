/**
 * The follow loop (docs/follow.md): poll the source; when it has heights after ours, read them
 * (with the current NFT / rich-list state) and apply them to the live snapshot in ONE write
 * transaction — SnapshotWriter.inPlace, the importer's own `--base` code path without the copy.
 *
 * - The snapshot is in WAL mode and this process is its only writer; `serve` processes read the
 *   same file and see a batch all at once or not at all (src/follow/live.ts).
 * - kill -9 at any moment: the uncommitted batch is not in the file; the next run resumes from
 *   the highest committed height (heights are read back from the file, not kept anywhere else).
 * - A source below our height, or with another hash at our height, is an error: we stop and
 *   leave the file as it is (reorgs are not followed).
 * - A failing source: one log line per failure, the step retried with exponential backoff.
 */
import { existsSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { DumpError } from '../import/dump-error';
import { loadRecords } from '../import/from-dump';
import { incrementalSource } from '../import/incremental';
import { StageProgress } from '../import/sources/progress';
import { dumpErrorText, ImportSource, NftStateProbe } from '../import/sources/source';
import { SnapshotWriter } from '../import/writer';
import { openDatabase } from '../sqlite';
import type { FollowSource, Tip } from './source';

/** The source is behind us or disagrees with a block we have: following stops. */
export class SourceWentBackwards extends Error {}

export interface FollowState {
  /** the source's newest height at the last poll */
  sourceHeight: number;
  /** our newest committed height */
  height: number;
  /** Unix ms of our newest block (its timestamp) */
  newestBlockMs: number;
  /** since when (Unix ms) the source has had a height we do not; undefined when caught up */
  behindSinceMs?: number;
  batches: number;
  failures: number;
  /** consecutive failures of the current step */
  failing: number;
}

export interface FollowerOptions {
  db: string;
  source: FollowSource;
  intervalMs: number;
  /** at most this many heights per batch (one write transaction) */
  batchBlocks: number;
  /** the longest wait between retries of a failing step */
  maxBackoffMs: number;
  log: (line: string) => void;
}

/** A stop request (SIGINT/SIGTERM): the batch in progress is finished, then run() returns. */
export class StopFlag {
  stopped = false;
  private wake?: () => void;

  stop(): void {
    this.stopped = true;
    this.wake?.();
  }

  /** Sleeps ms, or less if stop() is called. */
  sleep(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done(): void { clearTimeout(t); resolve(); }
      this.wake = done;
    });
  }
}

interface Ours {
  tip: Tip;
  hash: string | undefined;
  newestBlockMs: number;
}

function readOurs(db: Database.Database): Ours {
  const max = (sql: string): number => (db.prepare(sql).pluck().get() as number | null) ?? 0;
  const top = db.prepare("SELECT height, lower(json_extract(json, '$.hash')) AS hash, time_us FROM blocks ORDER BY height DESC LIMIT 1")
    .get() as { height: number; hash: string | null; time_us: number } | undefined;
  return {
    tip: { height: top?.height ?? 0, timeUs: top?.time_us ?? 0, txs: max('SELECT max(sequence) FROM txs'), evmTxs: max('SELECT max(sequence) FROM evm_txs'), evmInternalTxs: max('SELECT max(sequence) FROM evm_internal_txs') },
    hash: top?.hash ?? undefined,
    newestBlockMs: top ? Math.floor(top.time_us / 1000) : 0,
  };
}

/** What our snapshot holds of the NFT state, read on our own connection (the last commit). */
export function nftProbe(db: Database.Database): NftStateProbe {
  const has = db.prepare('SELECT 1 FROM nfts WHERE collection_addr = ? AND token_id = ?').pluck();
  return {
    collections() {
      const rows = db.prepare('SELECT lower(hex(addr)) AS addr, nft_count, name, origin_name FROM collections').all() as
        { addr: string; nft_count: number; name: string; origin_name: string }[];
      return new Map(rows.map((r) => [r.addr, { count: r.nft_count, name: r.name, originName: r.origin_name }]));
    },
    hasToken: (collectionHex, tokenId) => has.get(Buffer.from(collectionHex, 'hex'), tokenId) !== undefined,
    collectionsOfObjects(objects) {
      const account = db.prepare('SELECT id FROM accounts WHERE addr = ?').pluck();
      const ids = objects.map((hex) => account.get(Buffer.from(hex, 'hex')) as number | undefined).filter((id) => id !== undefined);
      if (!ids.length) return new Set();
      // No index on object_account_id: one pass over nfts (Move only; docs/follow.md "Cost").
      return new Set(db.prepare('SELECT DISTINCT lower(hex(collection_addr)) FROM nfts WHERE object_account_id IN (SELECT value FROM json_each(?))')
        .pluck().all(JSON.stringify(ids)) as string[]);
    },
  };
}

/** Milliseconds since `from`, then since the previous call (a batch's log line splits its time). */
function stopwatch(from: bigint): () => number {
  let t = from;
  return () => {
    const now = process.hrtime.bigint();
    const ms = Number(now - t) / 1e6;
    t = now;
    return ms;
  };
}

/** Puts a finished snapshot file in WAL mode (a header flag, persistent); a no-op when it is. */
export function useWal(file: string): void {
  const db = openDatabase(file, { fileMustExist: true });
  try {
    db.pragma('journal_mode = WAL');
  } finally {
    db.close();
  }
}

export class Follower {
  readonly state: FollowState = { sourceHeight: 0, height: 0, newestBlockMs: 0, batches: 0, failures: 0, failing: 0 };
  /** our own read connection (the file's writer opens per batch) */
  private readonly db: Database.Database;

  constructor(private readonly o: FollowerOptions) {
    if (!existsSync(o.db)) throw new Error(`snapshot not found: ${o.db}`);
    this.db = openDatabase(o.db, { fileMustExist: true });
    this.db.pragma('busy_timeout = 5000');
    const ours = readOurs(this.db);
    this.state.height = ours.tip.height;
    this.state.newestBlockMs = ours.newestBlockMs;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  /** Follows until `stop` (returns) or the source goes backwards (throws SourceWentBackwards). */
  async run(stop: StopFlag): Promise<void> {
    while (!stop.stopped) {
      let progressed = false;
      try {
        progressed = await this.step(stop);
        if (this.state.failing > 0) this.o.log(`follow: source ${this.o.source.describe} answers again`);
        this.state.failing = 0;
      } catch (e) {
        if (e instanceof SourceWentBackwards) throw e;
        this.state.failures++;
        this.state.failing++;
        const wait = Math.min(this.o.maxBackoffMs, Math.max(this.o.intervalMs, 250) * 2 ** (this.state.failing - 1));
        const msg = e instanceof DumpError ? `bad record: ${dumpErrorText(e, false)}` : (e as Error).message;
        this.o.log(`follow: ${msg.split('\n')[0]} (failure ${this.state.failing}; retrying in ${(wait / 1000).toFixed(1)} s; the snapshot is unchanged)`);
        await stop.sleep(wait);
        continue;
      }
      if (!progressed) await stop.sleep(this.o.intervalMs);
    }
  }

  /** A source whose blocks disagree with ours may be another chain altogether: say so. */
  private async refuseAnotherChain(): Promise<void> {
    const mine = this.db.prepare("SELECT value FROM meta WHERE key = 'chain_id'").pluck().get() as string | undefined;
    const theirs = await this.o.source.chainId();
    if (theirs === undefined || mine === undefined || theirs === mine) return;
    throw new SourceWentBackwards(`source ${this.o.source.describe} is chain ${JSON.stringify(theirs)}, this snapshot (${this.o.db}) is chain ${JSON.stringify(mine)}; not following another chain`);
  }

  /** One poll: true if a batch was applied (then poll again at once). */
  async step(stop: StopFlag): Promise<boolean> {
    const ours = readOurs(this.db);
    const st = this.state;
    st.height = ours.tip.height;
    st.newestBlockMs = ours.newestBlockMs;
    const src = this.o.source;
    const head = await src.head();
    st.sourceHeight = head;
    if (head < ours.tip.height) {
      await this.refuseAnotherChain();
      throw new SourceWentBackwards(`source ${src.describe} is at height ${head}, below this snapshot's ${ours.tip.height} (${this.o.db}); not following a source that went backwards`);
    }
    if (ours.tip.height > 0) {
      const theirs = await src.hashAt(ours.tip.height);
      if (theirs !== ours.hash) {
        await this.refuseAnotherChain();
        throw new SourceWentBackwards(`source ${src.describe} has ${theirs === undefined ? 'no block' : `hash ${theirs.toUpperCase()}`} at height ${ours.tip.height}, this snapshot (${this.o.db}) has ${String(ours.hash).toUpperCase()}; not following a source that went backwards`);
      }
    }
    if (head === ours.tip.height) {
      st.behindSinceMs = undefined;
      return false;
    }
    st.behindSinceMs ??= Date.now();
    const from = ours.tip.height + 1;
    const to = Math.min(head, ours.tip.height + this.o.batchBlocks);
    const started = process.hrtime.bigint();
    let records: ImportSource | undefined;
    let writer: SnapshotWriter | undefined;
    try {
      const lap = stopwatch(started);
      records = await src.batch(from, to, ours.tip, nftProbe(this.db));
      const openMs = lap();
      if (stop.stopped) { // nothing written yet: the batch is dropped
        records.dispose?.();
        await records.close();
        return false;
      }
      const inc = await incrementalSource(this.o.db, records);
      records = inc.source;
      writer = SnapshotWriter.inPlace(inc.base);
      const baseMs = lap();
      const progress = new StageProgress(false, () => undefined);
      // Parser threads pay for their start-up only on big batches (catching up).
      const summary = await loadRecords(records, writer, progress, { parseThreads: to - from < 500 ? 0 : undefined });
      const loadMs = lap();
      const partial = records.partialKinds?.() ?? new Set<string>();
      const complete = records.completeCollections?.() ?? new Set<string>();
      const fullState = records.fullStateReason?.();
      const changedOnly = partial.has('tokens');
      await records.close();
      writer.finish({ prefix: summary.prefix, partial, completeCollections: complete });
      writer = undefined;
      const finishMs = lap();
      const after = readOurs(this.db);
      st.height = after.tip.height;
      st.newestBlockMs = after.newestBlockMs;
      st.batches++;
      if (st.height >= st.sourceHeight) st.behindSinceMs = undefined;
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      this.o.log(`follow: heights ${from}..${to} (${summary.counts.blocks ?? 0} blocks, ${summary.counts.txs ?? 0} txs) applied in ${ms.toFixed(0)} ms `
        + `(source ${openMs.toFixed(0)}, base ${baseMs.toFixed(0)}, records ${loadMs.toFixed(0)}, counts + state + commit ${finishMs.toFixed(0)} ms); `
        + `source at ${st.sourceHeight}, ${st.sourceHeight - st.height} behind`
        + (changedOnly ? `; NFT state: ${summary.counts.tokens ?? 0} changed tokens` : '')
        + (changedOnly && complete.size > 0 ? ` (${complete.size} collection${complete.size === 1 ? '' : 's'} with a burn read whole)` : '')
        + (fullState === undefined ? '' : `; NFT state read whole: ${fullState}`));
      return true;
    } catch (e) {
      writer?.abort();
      records?.dispose?.();
      await records?.close().catch(() => undefined);
      throw e;
    }
  }
}

/** Prometheus text of the follower's state (follow --metrics-port). */
export function followMetricsText(s: FollowState, now = Date.now()): string {
  const lines: string[] = [];
  const g = (name: string, help: string, v: number, type = 'gauge'): void => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name} ${v}`);
  };
  g('indexer_api_follow_source_height', 'The source\'s newest height at the last poll', s.sourceHeight);
  g('indexer_api_follow_height', 'Newest height committed to the snapshot', s.height);
  g('indexer_api_follow_lag_blocks', 'Source height minus our height', Math.max(0, s.sourceHeight - s.height));
  g('indexer_api_follow_lag_seconds', 'Seconds since the source first had a height we do not have yet (0 when caught up)',
    s.behindSinceMs === undefined ? 0 : (now - s.behindSinceMs) / 1000);
  g('indexer_api_follow_newest_block_age_seconds', 'Seconds since the timestamp of our newest block', s.newestBlockMs ? (now - s.newestBlockMs) / 1000 : 0);
  g('indexer_api_follow_batches_total', 'Batches committed', s.batches, 'counter');
  g('indexer_api_follow_failures_total', 'Failed polls or batches (source errors)', s.failures, 'counter');
  return lines.join('\n') + '\n';
}
