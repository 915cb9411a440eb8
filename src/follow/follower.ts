/**
 * The follow loop (docs/follow.md): poll the source; when it has heights after ours, read them
 * (with the current NFT / rich-list state) and apply them to the live snapshot in ONE write
 * transaction — SnapshotWriter.inPlace, the importer's own `--base` code path without the copy.
 *
 * - The snapshot is in WAL mode and this process is its only writer; `serve` processes read the
 *   same file and see a batch all at once or not at all (src/serve/live.ts).
 * - kill -9 at any moment: the uncommitted batch is not in the file; the next run resumes from
 *   the highest committed height (heights are read back from the file, not kept anywhere else).
 * - A source below our height, or with another hash at our height, is an error: we stop and
 *   leave the file as it is (reorgs are not followed).
 * - A failing source: one log line per failure, the step retried with exponential backoff.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import type Database from 'better-sqlite3';
import { DumpError } from '../records/dump-error';
import { loadRecords } from '../records/from-dump';
import { incrementalSource } from '../records/incremental';
import { StageProgress } from '../records/progress';
import { dumpErrorText, ImportSource } from '../records/source';
import { SnapshotWriter } from '../snapshot/writer';
import { metaValues } from '../snapshot/queries/base-rows';
import { nftStateProbe } from '../snapshot/queries/nft-state';
import { openStore } from '../snapshot/store';
import { prepareTipQueries, type Tip, type TipQueries } from '../snapshot/queries/tip';
import type { FollowSource } from '../sources/contracts';
import type { WriteLock } from './richlist-refresh';

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
  /**
   * Unix ms of the last poll that succeeded — a batch applied, or the source had nothing new —
   * (the follower's start before its first): while `failing`, the follower has not advanced
   * since (stalledMs)
   */
  lastSuccessMs?: number;
  /** the last failure's line, until a poll succeeds again */
  lastError?: string;
}

/** How long the follower has not advanced, ms: since its last successful poll while its polls fail, else 0. */
export function stalledMs(state: FollowState, now: number): number {
  return state.failing > 0 && state.lastSuccessMs !== undefined ? Math.max(0, now - state.lastSuccessMs) : 0;
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
  /**
   * a failing source's line (follow: level warn, so that an operator filtering for warnings sees
   * a follower that stopped advancing); default `log`
   */
  warn?: (line: string) => void;
  /** held while a batch writes (shared with the rich-list refresh, src/follow/richlist-refresh.ts) */
  lock?: WriteLock;
}

/** A stop request (SIGINT/SIGTERM): the batch in progress is finished, then run() returns. */
export class StopFlag {
  stopped = false;
  /** the sleepers (the block loop and the rich-list refresh sleep at the same time) */
  private readonly wake = new Set<() => void>();

  stop(): void {
    this.stopped = true;
    for (const w of [...this.wake]) w();
  }

  /** Sleeps ms, or less if stop() is called. */
  sleep(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      const wake = this.wake;
      function done(): void {
        clearTimeout(t);
        wake.delete(done);
        resolve();
      }
      wake.add(done);
    });
  }
}

interface Ours {
  tip: Tip;
  hash: string | undefined;
  newestBlockMs: number;
}

function readOurs(q: TipQueries): Ours {
  const { tip, hash } = q.tip();
  return { tip, hash, newestBlockMs: tip.height > 0 ? Math.floor(tip.timeUs / 1000) : 0 };
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

export class Follower {
  readonly state: FollowState = { sourceHeight: 0, height: 0, newestBlockMs: 0, batches: 0, failures: 0, failing: 0, lastSuccessMs: Date.now() };
  /**
   * collections (lower-case hex) the next batch reads whatever its txs name: the collections
   * audit found them different from the source (src/follow/collections-audit.ts)
   */
  readonly recheck = new Set<string>();
  /** our own read connection (the file's writer opens per batch) */
  private readonly db: Database.Database;
  private readonly tip: TipQueries;
  /** the source's chain id was compared with ours (once, at the first poll that reached it) */
  private chainChecked = false;

  constructor(private readonly o: FollowerOptions) {
    if (!existsSync(o.db)) throw new Error(`${o.db}: no such snapshot file`);
    this.db = openStore(o.db, 'inPlace');
    this.tip = prepareTipQueries(this.db);
    const ours = readOurs(this.tip);
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
        if (this.state.failing > 0) {
          this.o.log(
            `follow: source ${this.o.source.describe} answers again after ${this.state.failing} failure${this.state.failing === 1 ? '' : 's'} ` +
              `(${((Date.now() - (this.state.lastSuccessMs ?? Date.now())) / 1000).toFixed(1)} s without advancing)`,
          );
        }
        this.state.failing = 0;
        this.state.lastSuccessMs = Date.now();
        this.state.lastError = undefined;
      } catch (e) {
        if (e instanceof SourceWentBackwards) throw e;
        this.state.failures++;
        this.state.failing++;
        const wait = Math.min(this.o.maxBackoffMs, Math.max(this.o.intervalMs, 250) * 2 ** (this.state.failing - 1));
        const msg = (e instanceof DumpError ? `bad record: ${dumpErrorText(e, false)}` : (e as Error).message).split('\n')[0];
        this.state.lastError = msg;
        const stalled = stalledMs(this.state, Date.now());
        (this.o.warn ?? this.o.log)(
          `follow: ${msg} (failure ${this.state.failing}${stalled >= 1000 ? `; not advanced for ${(stalled / 1000).toFixed(0)} s` : ''}; ` +
            `retrying in ${(wait / 1000).toFixed(1)} s; the snapshot is unchanged)`,
        );
        await stop.sleep(wait);
        continue;
      }
      if (!progressed) await stop.sleep(this.o.intervalMs);
    }
  }

  /** A source whose blocks disagree with ours may be another chain altogether: say so. */
  private async refuseAnotherChain(): Promise<void> {
    const mine = metaValues(this.db).get('chain_id');
    const theirs = await this.o.source.chainId();
    if (theirs === undefined || mine === undefined || theirs === mine) return;
    throw new SourceWentBackwards(
      `source ${this.o.source.describe} is chain ${JSON.stringify(theirs)}, ` +
        `this snapshot (${this.o.db}) is chain ${JSON.stringify(mine)}; not following another chain`,
    );
  }

  /** One poll: true if a batch was applied (then poll again at once). */
  async step(stop: StopFlag): Promise<boolean> {
    const ours = readOurs(this.tip);
    const st = this.state;
    st.height = ours.tip.height;
    st.newestBlockMs = ours.newestBlockMs;
    const src = this.o.source;
    const head = await src.head();
    st.sourceHeight = head;
    if (!this.chainChecked) {
      // another chain is refused from the first poll, not only once its blocks disagree with ours
      await this.refuseAnotherChain();
      this.chainChecked = true;
    }
    if (head < ours.tip.height) {
      await this.refuseAnotherChain();
      throw new SourceWentBackwards(
        `source ${src.describe} is at height ${head}, below this snapshot's ${ours.tip.height} (${this.o.db}); not following a source that went backwards`,
      );
    }
    if (ours.tip.height > 0) {
      const theirs = await src.hashAt(ours.tip.height);
      if (theirs !== ours.hash) {
        await this.refuseAnotherChain();
        throw new SourceWentBackwards(
          `source ${src.describe} has ${theirs === undefined ? 'no block' : `hash ${theirs.toUpperCase()}`} at height ${ours.tip.height}, ` +
            `this snapshot (${this.o.db}) has ${String(ours.hash).toUpperCase()}; ` +
            `not following a source that went backwards`,
        );
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
    let release: (() => void) | undefined;
    try {
      const lap = stopwatch(started);
      const recheck = new Set(this.recheck);
      records = await src.batch(from, to, ours.tip, nftStateProbe(this.db), recheck);
      const openMs = lap();
      if (stop.stopped) {
        // nothing written yet: the batch is dropped
        records.dispose?.();
        await records.close();
        return false;
      }
      release = await this.o.lock?.acquire();
      const inc = await incrementalSource(this.o.db, records);
      records = inc.source;
      writer = SnapshotWriter.inPlace(inc.base);
      const baseMs = lap();
      const progress = new StageProgress(false, () => undefined);
      // Parser threads pay for their start-up only on big batches (catching up).
      const summary = await loadRecords(records, writer, progress, { parseThreads: to - from < 500 ? 0 : availableParallelism() });
      const loadMs = lap();
      const partial = records.partialKinds?.() ?? new Set<string>();
      const complete = records.completeCollections?.() ?? new Set<string>();
      const fullState = records.fullStateReason?.();
      const changedOnly = partial.has('tokens');
      await records.close();
      writer.finish({ prefix: summary.prefix, partial, completeCollections: complete });
      writer = undefined;
      release?.();
      release = undefined;
      for (const hex of recheck) this.recheck.delete(hex);
      const finishMs = lap();
      const after = readOurs(this.tip);
      st.height = after.tip.height;
      st.newestBlockMs = after.newestBlockMs;
      st.batches++;
      if (st.height >= st.sourceHeight) st.behindSinceMs = undefined;
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      this.o.log(
        `follow: heights ${from}..${to} (${summary.counts.blocks ?? 0} blocks, ${summary.counts.txs ?? 0} txs) applied in ${ms.toFixed(0)} ms ` +
          `(source ${openMs.toFixed(0)}, base ${baseMs.toFixed(0)}, records ${loadMs.toFixed(0)}, counts + state + commit ${finishMs.toFixed(0)} ms); ` +
          `source at ${st.sourceHeight}, ${st.sourceHeight - st.height} behind` +
          (changedOnly
            ? `; NFT state: ${summary.counts.tokens ?? 0} changed tokens of ${summary.counts.collections ?? 0} collections read` +
              (recheck.size > 0 ? ` (${recheck.size} rechecked after the collections audit)` : '')
            : '') +
          (changedOnly && complete.size > 0 ? ` (${complete.size} collection${complete.size === 1 ? '' : 's'} with a burn read whole)` : '') +
          (fullState === undefined ? '' : `; NFT state read whole: ${fullState}`),
      );
      return true;
    } catch (e) {
      writer?.abort();
      release?.();
      records?.dispose?.();
      await records?.close().catch(() => undefined);
      throw e;
    }
  }
}
