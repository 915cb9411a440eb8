/**
 * follow's rich-list refresh (docs/follow.md "The rich list"): apart from the block batches, at
 * its own cadence (`--richlist-interval`).
 *
 * 1. The source's whole rich list is read OUTSIDE any write transaction into a staging file
 *    beside the snapshot (keyed by denom and account). A crawled API is read between two
 *    `/status` reads of `rich_list_height` and read again when it moved (never a mix of two
 *    states); PostgreSQL is one streaming read in one REPEATABLE READ snapshot with
 *    rich_list_status' height (src/sources/postgres/state.ts readPostgresRichList).
 * 2. It is diffed against ours on the staging connection (the live file attached read-only):
 *    the holders that came (new or changed amount) and the ones that went. Chunked, yielding to
 *    the event loop between chunks, so the block batches go on meanwhile — they never write the
 *    rich list, this is its only writer, so the chunks see one state of ours.
 * 3. Only the changed rows are written, with `rich_list_height` and a new `snapshot_id`:
 *    - up to `swapRows` changed rows in ONE short write transaction;
 *    - more: the new rich list is built beside (table richlist_next, in chunks, each its own
 *      short transaction; readers never read it) and swapped in with one transaction that
 *      renames the tables, so readers see the old rich list or the new one, never a mix.
 *
 * Every write takes the follower's WriteLock: SQLite has one writer, and a second connection of
 * this process waiting for the lock would block the thread that must release it.
 * A refresh killed at any moment leaves the last committed rich list; leftovers (the staging file,
 * richlist_next / richlist_old) are removed on the next start.
 */
import { canonicalAddress } from '../lib/address';
import { amountKey, isAmount } from '../lib/amount';
import type { VmType } from '../lib/vm';
import type { RichListReader, RichListSink } from '../sources/contracts';
import { BUILD_PASSES, dropRichListLeftovers, RichListBuild, richListHeight, RichListStaging, writeRichListInPlace } from '../snapshot/richlist-writer';

/** A stop request (follower.ts StopFlag): checked between steps, cuts sleeps short. */
export interface StopFlag {
  readonly stopped: boolean;
  sleep(ms: number): Promise<void>;
}

/** One writer at a time on the live file, across the block batches and the rich-list refresh. */
export class WriteLock {
  private tail: Promise<void> = Promise.resolve();

  /** Resolves with the release function once every earlier holder released. */
  acquire(): Promise<() => void> {
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const before = this.tail;
    this.tail = before.then(() => held);
    return before.then(() => release);
  }
}

/** A holder the refresher refuses (names the record and the field). */
class RichListRecordError extends Error {}

/** Thrown from the sink when a stop was requested: a long read is dropped (nothing of it was written). */
class RefreshStopped extends Error {}

export interface RichListState {
  /** the height our rich list reflects (meta rich_list_height) */
  height: number;
  refreshes: number;
  failures: number;
  /** Unix ms when the last successful refresh started reading; 0: none yet in this process */
  lastRefreshMs: number;
  /** rows the last refresh wrote (came + gone) */
  lastChangedRows: number;
}

export interface RefresherOptions {
  db: string;
  reader: RichListReader;
  intervalMs: number;
  vmType: VmType;
  prefix: string;
  lock: WriteLock;
  log: (line: string) => void;
  /** a failed refresh's line (follow: level warn); default `log` */
  warn?: (line: string) => void;
  /** more changed rows than this: built beside and swapped in (follow --richlist-swap-rows) */
  swapRows: number;
  /** rows per chunk of the diff and of a build beside (follow --richlist-chunk-rows) */
  chunkRows: number;
  /** the longest wait between retries of a failing refresh */
  maxBackoffMs: number;
  /** test hook: called between the chunks of a build beside */
  onChunk?: (what: string) => void;
}

const yieldToLoop = (): Promise<void> => new Promise((r) => setImmediate(r));

export class RichListRefresher {
  readonly state: RichListState = { height: 0, refreshes: 0, failures: 0, lastRefreshMs: 0, lastChangedRows: 0 };
  private readonly swapRows: number;
  private readonly chunkRows: number;

  constructor(private readonly o: RefresherOptions) {
    this.swapRows = o.swapRows;
    this.chunkRows = o.chunkRows;
    this.state.height = richListHeight(o.db);
  }

  /** Refreshes now, then every intervalMs, until `stop`; a failure is logged and retried with backoff. */
  async run(stop: StopFlag): Promise<void> {
    await this.removeLeftovers();
    let failing = 0;
    while (!stop.stopped) {
      const started = Date.now();
      try {
        await this.refresh(stop);
        failing = 0;
      } catch (e) {
        this.state.failures++;
        failing++;
        const wait = Math.min(this.o.maxBackoffMs, Math.max(this.o.intervalMs, 1000) * 2 ** (failing - 1));
        (this.o.warn ?? this.o.log)(
          `follow: rich list: ${(e as Error).message.split('\n')[0]} (failure ${failing}; retrying in ` +
            `${(wait / 1000).toFixed(1)} s; the rich list is unchanged)`,
        );
        await stop.sleep(wait);
        continue;
      }
      await stop.sleep(Math.max(0, started + this.o.intervalMs - Date.now()));
    }
  }

  /** Drops what a killed build beside left in the file (not in a fresh import). */
  async removeLeftovers(): Promise<void> {
    const release = await this.o.lock.acquire();
    try {
      const left = dropRichListLeftovers(this.o.db);
      if (left.length) this.o.log(`follow: rich list: removed ${left.join(', ')} left by an interrupted refresh`);
    } finally {
      release();
    }
  }

  /** One refresh: read, diff, write the changed rows. Returns false when stopped before writing. */
  async refresh(stop: StopFlag): Promise<boolean> {
    const t0 = Date.now();
    const staging = new RichListStaging(this.o.db);
    try {
      let height: number;
      try {
        ({ height } = await this.o.reader.read(this.sink(staging, stop)));
      } catch (e) {
        if (e instanceof RefreshStopped) return false;
        throw e;
      }
      const readMs = Date.now() - t0;
      if (stop.stopped) return false;
      const { came, gone } = await staging.diff(this.chunkRows);
      const diffMs = Date.now() - t0 - readMs;
      if (stop.stopped) return false;
      const total = staging.total();
      staging.close(); // the live connection attaches it
      let how = 'nothing to write';
      if (came + gone > 0 || height !== this.state.height) {
        how = came + gone > this.swapRows ? await this.buildBeside(staging.path, height, stop) : await this.inPlace(staging.path, height);
        if (how === '') return false;
      }
      this.state.height = height;
      this.state.refreshes++;
      this.state.lastRefreshMs = t0;
      this.state.lastChangedRows = came + gone;
      this.o.log(
        `follow: rich list at height ${height}: ${total} holders read from ${this.o.reader.describe} in ${readMs} ms, ` +
          `diffed in ${diffMs} ms: ${came} came, ${gone} went; ${how} (${Date.now() - t0} ms in all)`,
      );
      return true;
    } finally {
      staging.dispose();
    }
  }

  /** Validates and stages the holders a reader puts (as the importer's `richlist` kind checks them). */
  private sink(staging: RichListStaging, stop: StopFlag): RichListSink {
    const prefix = this.o.prefix;
    return {
      reset() {
        staging.reset();
      },
      put(denom, account, amount, label) {
        if (stop.stopped) throw new RefreshStopped('stopped');
        if (typeof denom !== 'string' || denom === '')
          throw new RichListRecordError(`${label}: denom: must be a non-empty string, got ${JSON.stringify(denom)}`);
        let addr: Buffer;
        try {
          addr = canonicalAddress(String(account), prefix);
        } catch (e) {
          throw new RichListRecordError(`${label}: account: ${(e as Error).message}: ${JSON.stringify(account)}`);
        }
        if (typeof amount !== 'string' || !isAmount(amount))
          throw new RichListRecordError(`${label}: amount: must be a decimal integer string, got ${JSON.stringify(amount)}`);
        return staging.put(denom.toLowerCase(), addr, amountKey(amount));
      },
      count(denom) {
        return staging.count(denom.toLowerCase());
      },
    };
  }

  /** A small change: deleted and inserted in ONE write transaction. */
  private async inPlace(stagingPath: string, height: number): Promise<string> {
    const release = await this.o.lock.acquire();
    try {
      return `written in place in one transaction of ${writeRichListInPlace(this.o.db, stagingPath, height)} ms`;
    } finally {
      release();
    }
  }

  /**
   * A big change: richlist_next = ours − gone + came, built in chunks (short transactions the
   * block batches interleave with), then swapped in by renaming in one transaction. Returns ''
   * when stopped before the swap (richlist_next is dropped).
   */
  private async buildBeside(stagingPath: string, height: number, stop: StopFlag): Promise<string> {
    const n = this.chunkRows;
    const build = new RichListBuild(this.o.db, stagingPath);
    const locked = async <T>(fn: () => T): Promise<T> => {
      const release = await this.o.lock.acquire();
      try {
        return fn();
      } finally {
        release();
      }
    };
    await locked(() => build.start());
    let written = 0;
    for (const pass of BUILD_PASSES) {
      let after = RichListBuild.first();
      for (;;) {
        if (stop.stopped) {
          await locked(() => build.abandon());
          return '';
        }
        const c = await locked(() => build.chunk(pass, after, n));
        written += c.written;
        after = c.after;
        this.o.onChunk?.(pass);
        if (c.done) break;
        await yieldToLoop();
      }
    }
    const swapMs = await locked(() => build.swap(height));
    const dropMs = await locked(() => build.dropOld());
    return `built beside (${written} rows in chunks of ${n}), swapped in one transaction of ${swapMs} ms, old table dropped in ${dropMs} ms`;
  }
}
