/**
 * follow's rich-list refresh (docs/follow.md "The rich list"): apart from the block batches, at
 * its own cadence (`--richlist-interval`).
 *
 * 1. The source's whole rich list is read OUTSIDE any write transaction into a staging file
 *    beside the snapshot (keyed by denom and account). A crawled API is read between two
 *    `/status` reads of `rich_list_height` and read again when it moved (never a mix of two
 *    states); PostgreSQL is one streaming read in one REPEATABLE READ snapshot with
 *    rich_list_status' height (src/import/sources/postgres.ts readPostgresRichList).
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
import { randomBytes } from 'node:crypto';
import { existsSync, unlinkSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type Database from 'better-sqlite3';
import { canonicalAddress } from '../lib/address';
import { amountKey, isAmount } from '../lib/amount';
import { FOLLOW_DEFAULTS } from '../lib/defaults';
import type { VmType } from '../lib/vm';
import { openDatabase } from '../sqlite';
import { denomTag, recordChange, TIP } from '../snapshot/changes';

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
    const held = new Promise<void>((r) => { release = r; });
    const before = this.tail;
    this.tail = before.then(() => held);
    return before.then(() => release);
  }
}

/** Where a reader puts the holders it reads; the refresher validates and stages them. */
export interface RichListSink {
  /** forget what was put (a read starting again) */
  reset(): void;
  /** one holder as the source gives it; false when (denom, account) was already put */
  put(denom: string, account: string, amount: string, label: string): boolean;
  /** distinct holders of a stored denom put so far */
  count(denom: string): number;
}

/** A source's whole rich list: what `follow` refreshes. */
export interface RichListReader {
  describe: string;
  /** Puts every holder into `sink` (after reset()), returns the height the rich list reflects. */
  read(sink: RichListSink): Promise<{ height: number }>;
}

/** A holder the refresher refuses (names the record and the field). */
export class RichListRecordError extends Error {}

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
  /** more changed rows than this: built beside and swapped in (default SWAP_ROWS) */
  swapRows?: number;
  /** rows per chunk of the diff and of a build beside (default CHUNK_ROWS) */
  chunkRows?: number;
  /** the longest wait between retries of a failing refresh */
  maxBackoffMs: number;
  /** test hook: called between the chunks of a build beside */
  onChunk?: (what: string) => void;
}

/** Changed rows written in place in one transaction, at most (≈ a few tens of ms). */
export const SWAP_ROWS: number = FOLLOW_DEFAULTS.richlistSwapRows;
export const CHUNK_ROWS: number = FOLLOW_DEFAULTS.richlistChunkRows;

const STAGING_SQL = `
  CREATE TABLE theirs (denom TEXT NOT NULL, account BLOB NOT NULL, amount_key TEXT NOT NULL, PRIMARY KEY (denom, account)) WITHOUT ROWID;
  CREATE TABLE came (denom TEXT NOT NULL, amount_key TEXT NOT NULL, account BLOB NOT NULL, PRIMARY KEY (denom, amount_key, account)) WITHOUT ROWID;
  CREATE TABLE gone (denom TEXT NOT NULL, amount_key TEXT NOT NULL, account BLOB NOT NULL, PRIMARY KEY (denom, amount_key, account)) WITHOUT ROWID;`;

const yieldToLoop = (): Promise<void> => new Promise((r) => setImmediate(r));

/** Opens the live file for one write (WAL, as SnapshotWriter.inPlace does). */
function openLive(file: string): Database.Database {
  const db = openDatabase(file, { fileMustExist: true });
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  return db;
}

export class RichListRefresher {
  readonly state: RichListState = { height: 0, refreshes: 0, failures: 0, lastRefreshMs: 0, lastChangedRows: 0 };
  private readonly swapRows: number;
  private readonly chunkRows: number;

  constructor(private readonly o: RefresherOptions) {
    this.swapRows = o.swapRows ?? SWAP_ROWS;
    this.chunkRows = o.chunkRows ?? CHUNK_ROWS;
    const db = openDatabase(o.db, { fileMustExist: true, readonly: true });
    try {
      this.state.height = Number(db.prepare("SELECT value FROM meta WHERE key = 'rich_list_height'").pluck().get() ?? 0);
    } finally {
      db.close();
    }
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
        this.o.log(`follow: rich list: ${(e as Error).message.split('\n')[0]} (failure ${failing}; retrying in ${(wait / 1000).toFixed(1)} s; the rich list is unchanged)`);
        await stop.sleep(wait);
        continue;
      }
      await stop.sleep(Math.max(0, started + this.o.intervalMs - Date.now()));
    }
  }

  /** Drops what a killed build beside left in the file (not in a fresh import). */
  async removeLeftovers(): Promise<void> {
    const release = await this.o.lock.acquire();
    const db = openLive(this.o.db);
    try {
      const left = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('richlist_next', 'richlist_old')").pluck().all() as string[];
      for (const t of left) db.exec(`DROP TABLE ${t}`);
      if (left.length) this.o.log(`follow: rich list: removed ${left.join(', ')} left by an interrupted refresh`);
    } finally {
      db.close();
      release();
    }
  }

  /** One refresh: read, diff, write the changed rows. Returns false when stopped before writing. */
  async refresh(stop: StopFlag): Promise<boolean> {
    const t0 = Date.now();
    const stagingPath = join(dirname(resolve(this.o.db)), `.${basename(this.o.db)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
    const staging = openDatabase(stagingPath);
    try {
      staging.pragma('journal_mode = OFF');
      staging.pragma('synchronous = OFF');
      staging.pragma('cache_size = -65536');
      staging.exec(STAGING_SQL);
      let height: number;
      try {
        ({ height } = await this.o.reader.read(this.sink(staging, stop)));
      } catch (e) {
        if (e instanceof RefreshStopped) return false;
        throw e;
      }
      const readMs = Date.now() - t0;
      if (stop.stopped) return false;
      const { came, gone } = await this.diff(staging);
      const diffMs = Date.now() - t0 - readMs;
      if (stop.stopped) return false;
      const total = staging.prepare('SELECT count(*) FROM theirs').pluck().get() as number;
      staging.close(); // the live connection attaches it
      let how = 'nothing to write';
      if (came + gone > 0 || height !== this.state.height) {
        how = came + gone > this.swapRows ? await this.buildBeside(stagingPath, height, stop) : await this.inPlace(stagingPath, height);
        if (how === '') return false;
      }
      this.state.height = height;
      this.state.refreshes++;
      this.state.lastRefreshMs = t0;
      this.state.lastChangedRows = came + gone;
      this.o.log(`follow: rich list at height ${height}: ${total} holders read from ${this.o.reader.describe} in ${readMs} ms, `
        + `diffed in ${diffMs} ms: ${came} came, ${gone} went; ${how} (${Date.now() - t0} ms in all)`);
      return true;
    } finally {
      try { if (staging.open) staging.close(); } catch { /* closing anyway */ }
      try { if (existsSync(stagingPath)) unlinkSync(stagingPath); } catch { /* already gone */ }
    }
  }

  /** Validates and stages the holders a reader puts (as the importer's `richlist` kind checks them). */
  private sink(staging: Database.Database, stop: StopFlag): RichListSink {
    const ins = staging.prepare('INSERT OR IGNORE INTO theirs (denom, account, amount_key) VALUES (?, ?, ?)');
    const count = staging.prepare('SELECT count(*) FROM theirs WHERE denom = ?').pluck();
    const prefix = this.o.prefix;
    let pending = 0;
    const commit = (): void => { if (staging.inTransaction) staging.exec('COMMIT'); pending = 0; };
    return {
      reset() { commit(); staging.exec('DELETE FROM theirs'); },
      put(denom, account, amount, label) {
        if (stop.stopped) throw new RefreshStopped('stopped');
        if (typeof denom !== 'string' || denom === '') throw new RichListRecordError(`${label}: denom: must be a non-empty string, got ${JSON.stringify(denom)}`);
        let addr: Buffer;
        try { addr = canonicalAddress(String(account), prefix); } catch (e) {
          throw new RichListRecordError(`${label}: account: ${(e as Error).message}: ${JSON.stringify(account)}`);
        }
        if (typeof amount !== 'string' || !isAmount(amount)) throw new RichListRecordError(`${label}: amount: must be a decimal integer string, got ${JSON.stringify(amount)}`);
        if (!staging.inTransaction) staging.exec('BEGIN');
        const added = ins.run(denom.toLowerCase(), addr, amountKey(amount)).changes > 0;
        if (++pending >= 10_000) commit();
        return added;
      },
      count(denom) { commit(); return count.get(denom.toLowerCase()) as number; },
    };
  }

  /**
   * came: staged holders ours lacks with that amount; gone: our holders the source does not have
   * with that amount (a changed amount is one of each). Keyset chunks, the loop free between them.
   */
  private async diff(staging: Database.Database): Promise<{ came: number; gone: number }> {
    if (staging.inTransaction) staging.exec('COMMIT');
    staging.prepare('ATTACH DATABASE ? AS live').run(resolve(this.o.db));
    try {
      const n = this.chunkRows;
      const steps: [string, Database.Statement, Database.Statement][] = [
        ['came', staging.prepare('SELECT denom, account FROM theirs WHERE (denom, account) > (?, ?) ORDER BY denom, account LIMIT 1 OFFSET ?').raw(),
          staging.prepare(`INSERT INTO came SELECT t.denom, t.amount_key, t.account FROM theirs t
            WHERE (t.denom, t.account) > (?, ?) AND (t.denom, t.account) <= (?, ?)
              AND NOT EXISTS (SELECT 1 FROM live.richlist o WHERE o.denom = t.denom AND o.amount_key = t.amount_key AND o.account = t.account)`)],
        ['gone', staging.prepare('SELECT denom, amount_key, account FROM live.richlist WHERE (denom, amount_key, account) > (?, ?, ?) ORDER BY denom, amount_key, account LIMIT 1 OFFSET ?').raw(),
          staging.prepare(`INSERT INTO gone SELECT o.denom, o.amount_key, o.account FROM live.richlist o
            WHERE (o.denom, o.amount_key, o.account) > (?, ?, ?) AND (o.denom, o.amount_key, o.account) <= (?, ?, ?)
              AND NOT EXISTS (SELECT 1 FROM theirs t WHERE t.denom = o.denom AND t.account = o.account AND t.amount_key = o.amount_key)`)],
      ];
      const last = { came: staging.prepare('SELECT denom, account FROM theirs ORDER BY denom DESC, account DESC LIMIT 1').raw(),
        gone: staging.prepare('SELECT denom, amount_key, account FROM live.richlist ORDER BY denom DESC, amount_key DESC, account DESC LIMIT 1').raw() };
      for (const [name, edge, insert] of steps) {
        const end = last[name as 'came' | 'gone'].get() as unknown[] | undefined;
        if (!end) continue;
        // below every key: '' sorts before any text, x'' before any blob
        let after: unknown[] = name === 'came' ? ['', Buffer.alloc(0)] : ['', '', Buffer.alloc(0)];
        for (;;) {
          const upTo: unknown[] = (edge.get(...after, n - 1) as unknown[] | undefined) ?? end;
          staging.transaction(() => insert.run(...after, ...upTo))();
          if (upTo === end) break;
          after = upTo;
          await yieldToLoop();
        }
      }
      return {
        came: staging.prepare('SELECT count(*) FROM came').pluck().get() as number,
        gone: staging.prepare('SELECT count(*) FROM gone').pluck().get() as number,
      };
    } finally {
      staging.exec('DETACH DATABASE live');
    }
  }


  /** The counts per denom, the height and a new snapshot_id (readers reload): part of the last transaction. */
  private finishSql(db: Database.Database, height: number): void {
    db.exec(`
      INSERT INTO main.richlist_denoms (denom, holder_count)
        SELECT denom, sum(n) FROM (SELECT denom, 1 AS n FROM stage.came UNION ALL SELECT denom, -1 FROM stage.gone) GROUP BY denom HAVING sum(n) <> 0
        ON CONFLICT (denom) DO UPDATE SET holder_count = holder_count + excluded.holder_count;
      DELETE FROM main.richlist_denoms WHERE holder_count = 0;`);
    const set = db.prepare('INSERT OR REPLACE INTO main.meta (key, value) VALUES (?, ?)');
    set.run('rich_list_height', String(height));
    set.run('snapshot_id', randomBytes(16).toString('hex'));
    // the denoms whose holders moved, and /status (rich_list_height): src/snapshot/changes.ts
    const denoms = db.prepare('SELECT denom FROM stage.came UNION SELECT denom FROM stage.gone').pluck().all() as string[];
    recordChange(db, 'richlist', height, [TIP, ...denoms.map(denomTag)]);
  }

  /** A small change: deleted and inserted in ONE write transaction. */
  private async inPlace(stagingPath: string, height: number): Promise<string> {
    const release = await this.o.lock.acquire();
    const db = openLive(this.o.db);
    try {
      db.prepare('ATTACH DATABASE ? AS stage').run(stagingPath);
      const t = Date.now();
      db.transaction(() => {
        db.exec(`
          DELETE FROM main.richlist WHERE (denom, amount_key, account) IN (SELECT denom, amount_key, account FROM stage.gone);
          INSERT INTO main.richlist (denom, amount_key, account, json)
            SELECT denom, amount_key, account, '' FROM stage.came;`);
        this.finishSql(db, height);
      }).immediate();
      return `written in place in one transaction of ${Date.now() - t} ms`;
    } finally {
      db.close();
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
    const locked = async <T>(fn: (db: Database.Database) => T): Promise<T> => {
      const release = await this.o.lock.acquire();
      const db = openLive(this.o.db);
      try {
          db.prepare('ATTACH DATABASE ? AS stage').run(stagingPath);
        return fn(db);
      } finally {
        db.close();
        release();
      }
    };
    await locked((db) => {
      const ddl = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'richlist'").pluck().get() as string;
      db.exec('DROP TABLE IF EXISTS main.richlist_next');
      db.exec(ddl.replace(/^CREATE TABLE\s+("?)richlist\1/i, 'CREATE TABLE main.richlist_next'));
    });
    const chunks = [
      { name: 'kept', edge: 'SELECT denom, amount_key, account FROM main.richlist WHERE (denom, amount_key, account) > (?, ?, ?) ORDER BY denom, amount_key, account LIMIT 1 OFFSET ?',
        last: 'SELECT denom, amount_key, account FROM main.richlist ORDER BY denom DESC, amount_key DESC, account DESC LIMIT 1',
        insert: `INSERT INTO main.richlist_next SELECT o.* FROM main.richlist o
          WHERE (o.denom, o.amount_key, o.account) > (?, ?, ?) AND (o.denom, o.amount_key, o.account) <= (?, ?, ?)
            AND NOT EXISTS (SELECT 1 FROM stage.gone g WHERE g.denom = o.denom AND g.amount_key = o.amount_key AND g.account = o.account)` },
      { name: 'came', edge: 'SELECT denom, amount_key, account FROM stage.came WHERE (denom, amount_key, account) > (?, ?, ?) ORDER BY denom, amount_key, account LIMIT 1 OFFSET ?',
        last: 'SELECT denom, amount_key, account FROM stage.came ORDER BY denom DESC, amount_key DESC, account DESC LIMIT 1',
        insert: `INSERT INTO main.richlist_next (denom, amount_key, account, json)
          SELECT denom, amount_key, account, '' FROM stage.came
          WHERE (denom, amount_key, account) > (?, ?, ?) AND (denom, amount_key, account) <= (?, ?, ?)` },
    ];
    let written = 0;
    for (const c of chunks) {
      let after: unknown[] = ['', '', Buffer.alloc(0)];
      for (;;) {
        if (stop.stopped) {
          await locked((db) => db.exec('DROP TABLE IF EXISTS main.richlist_next'));
          return '';
        }
        const done = await locked((db) => {
          const end = db.prepare(c.last).raw().get() as unknown[] | undefined;
          if (!end) return true;
          const upTo = (db.prepare(c.edge).raw().get(...after, n - 1) as unknown[] | undefined) ?? end;
          db.transaction(() => { written += db.prepare(c.insert).run(...after, ...upTo).changes; }).immediate();
          after = upTo;
          return upTo === end;
        });
        this.o.onChunk?.(c.name);
        if (done) break;
        await yieldToLoop();
      }
    }
    const swapMs = await locked((db) => {
      const t = Date.now();
      db.transaction(() => {
        db.exec('ALTER TABLE main.richlist RENAME TO richlist_old; ALTER TABLE main.richlist_next RENAME TO richlist;');
        this.finishSql(db, height);
      }).immediate();
      return Date.now() - t;
    });
    const dropMs = await locked((db) => { const t = Date.now(); db.exec('DROP TABLE main.richlist_old'); return Date.now() - t; });
    return `built beside (${written} rows in chunks of ${n}), swapped in one transaction of ${swapMs} ms, old table dropped in ${dropMs} ms`;
  }
}

