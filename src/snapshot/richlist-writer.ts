/**
 * The rich list's writes outside the block batches (follow's refresh, src/follow/richlist-refresh.ts,
 * docs/follow.md "The rich list"): the source's holders staged in a scratch file beside the
 * snapshot, diffed against ours, and the changed rows written in place or built beside and
 * swapped in. The refresher decides when and holds its process's write lock around each call
 * that writes the live file; every statement is here.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, unlinkSync } from 'node:fs';
import { resolve } from 'node:path';
import { recordChange } from './changes';
import { denomTag, TIP } from './tags';
import type Database from 'better-sqlite3';
import { openStore, tempPathBeside } from './store';
import { ensureRanks, writeRanks } from './richlist-ranks';
import { ensureDigests, writeDigests } from './tag-digests';

const STAGING_SQL = `
  CREATE TABLE theirs (denom TEXT NOT NULL, account BLOB NOT NULL, amount_key TEXT NOT NULL, PRIMARY KEY (denom, account)) WITHOUT ROWID;
  CREATE TABLE came (denom TEXT NOT NULL, amount_key TEXT NOT NULL, account BLOB NOT NULL, PRIMARY KEY (denom, amount_key, account)) WITHOUT ROWID;
  CREATE TABLE gone (denom TEXT NOT NULL, amount_key TEXT NOT NULL, account BLOB NOT NULL, PRIMARY KEY (denom, amount_key, account)) WITHOUT ROWID;`;

/** Staged holders committed at most this many at a time. */
const STAGE_ROWS = 10_000;

const yieldToLoop = (): Promise<void> => new Promise((r) => setImmediate(r));

/** The rich-list height of the live file (meta rich_list_height; 0 without one). */
export function richListHeight(file: string): number {
  const db = openStore(file, 'liveRead');
  try {
    return Number(db.prepare("SELECT value FROM meta WHERE key = 'rich_list_height'").pluck().get() ?? 0);
  } finally {
    db.close();
  }
}

/** Drops what a killed build beside left in the live file; returns the dropped tables. */
export function dropRichListLeftovers(file: string): string[] {
  const db = openStore(file, 'inPlace');
  try {
    const left = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('richlist_next', 'richlist_old')").pluck().all() as string[];
    for (const t of left) db.exec(`DROP TABLE ${t}`);
    return left;
  } finally {
    db.close();
  }
}

/** The source's rich list staged beside the live file `file` (a scratch file, removed by dispose()). */
export class RichListStaging {
  readonly path: string;
  private readonly db: Database.Database;
  private readonly ins: Database.Statement;
  private readonly countOf: Database.Statement;
  private pending = 0;

  constructor(private readonly file: string) {
    this.path = tempPathBeside(file);
    // the live file's connection attaches it: no exclusive lock
    this.db = openStore(this.path, 'scratch', { shared: true });
    try {
      this.db.exec(STAGING_SQL);
      this.ins = this.db.prepare('INSERT OR IGNORE INTO theirs (denom, account, amount_key) VALUES (?, ?, ?)');
      this.countOf = this.db.prepare('SELECT count(*) FROM theirs WHERE denom = ?').pluck();
    } catch (e) {
      this.dispose();
      throw e;
    }
  }

  private commit(): void {
    if (this.db.inTransaction) this.db.exec('COMMIT');
    this.pending = 0;
  }

  /** Forgets every staged holder (a read starting again). */
  reset(): void {
    this.commit();
    this.db.exec('DELETE FROM theirs');
  }

  /** Stages one (validated) holder; false when (denom, account) was already staged. */
  put(denom: string, account: Buffer, amountKey: string): boolean {
    if (!this.db.inTransaction) this.db.exec('BEGIN');
    const added = this.ins.run(denom, account, amountKey).changes > 0;
    if (++this.pending >= STAGE_ROWS) this.commit();
    return added;
  }

  /** Distinct holders of `denom` staged so far. */
  count(denom: string): number {
    this.commit();
    return this.countOf.get(denom) as number;
  }

  total(): number {
    this.commit();
    return this.db.prepare('SELECT count(*) FROM theirs').pluck().get() as number;
  }

  /**
   * came: staged holders ours lacks with that amount; gone: our holders the source does not have
   * with that amount (a changed amount is one of each). Keyset chunks of `chunkRows`, the event
   * loop free between them (the block batches go on; they never write the rich list).
   */
  async diff(chunkRows: number): Promise<{ came: number; gone: number }> {
    const staging = this.db;
    this.commit();
    staging.prepare('ATTACH DATABASE ? AS live').run(resolve(this.file));
    try {
      const n = chunkRows;
      const steps: [string, Database.Statement, Database.Statement][] = [
        [
          'came',
          staging.prepare('SELECT denom, account FROM theirs WHERE (denom, account) > (?, ?) ORDER BY denom, account LIMIT 1 OFFSET ?').raw(),
          staging.prepare(`INSERT INTO came SELECT t.denom, t.amount_key, t.account FROM theirs t
            WHERE (t.denom, t.account) > (?, ?) AND (t.denom, t.account) <= (?, ?)
              AND NOT EXISTS (SELECT 1 FROM live.richlist o WHERE o.denom = t.denom AND o.amount_key = t.amount_key AND o.account = t.account)`),
        ],
        [
          'gone',
          staging
            .prepare(
              'SELECT denom, amount_key, account FROM live.richlist WHERE (denom, amount_key, account) > (?, ?, ?) ' +
                'ORDER BY denom, amount_key, account LIMIT 1 OFFSET ?',
            )
            .raw(),
          staging.prepare(`INSERT INTO gone SELECT o.denom, o.amount_key, o.account FROM live.richlist o
            WHERE (o.denom, o.amount_key, o.account) > (?, ?, ?) AND (o.denom, o.amount_key, o.account) <= (?, ?, ?)
              AND NOT EXISTS (SELECT 1 FROM theirs t WHERE t.denom = o.denom AND t.account = o.account AND t.amount_key = o.amount_key)`),
        ],
      ];
      const last = {
        came: staging.prepare('SELECT denom, account FROM theirs ORDER BY denom DESC, account DESC LIMIT 1').raw(),
        gone: staging.prepare('SELECT denom, amount_key, account FROM live.richlist ORDER BY denom DESC, amount_key DESC, account DESC LIMIT 1').raw(),
      };
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

  /** Closes the staging connection (the live connection attaches the file from now on). */
  close(): void {
    try {
      if (this.db.open) this.db.close();
    } catch {
      /* closing anyway */
    }
  }

  /** Closes and removes the staging file. */
  dispose(): void {
    this.close();
    try {
      if (existsSync(this.path)) unlinkSync(this.path);
    } catch {
      /* already gone */
    }
  }
}

/** The live file opened for one write with the staging file attached as `stage`. */
function openWithStage(file: string, stagingPath: string): Database.Database {
  const db = openStore(file, 'inPlace');
  try {
    db.prepare('ATTACH DATABASE ? AS stage').run(stagingPath);
  } catch (e) {
    db.close();
    throw e;
  }
  return db;
}

/** The counts per denom, the height and a new snapshot_id (readers reload): part of the last transaction. */
function finishRichList(db: Database.Database, height: number): void {
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
  // their rank marks, in the same transaction (a version-2 file gets every denom's: src/snapshot/richlist-ranks.ts)
  if (!ensureRanks(db)) writeRanks(db, denoms);
  // and their digests (a file before schema 4 gets every tag's: src/snapshot/tag-digests.ts)
  if (!ensureDigests(db)) writeDigests(db, denoms.map(denomTag));
  recordChange(db, 'richlist', height, [TIP, ...denoms.map(denomTag)]);
}

/** A small change: the staged came / gone deleted and inserted in ONE write transaction; returns its ms. */
export function writeRichListInPlace(file: string, stagingPath: string, height: number): number {
  const db = openWithStage(file, stagingPath);
  try {
    const t = Date.now();
    db.transaction(() => {
      db.exec(`
        DELETE FROM main.richlist WHERE (denom, amount_key, account) IN (SELECT denom, amount_key, account FROM stage.gone);
        INSERT INTO main.richlist (denom, amount_key, account, json)
          SELECT denom, amount_key, account, '' FROM stage.came;`);
      finishRichList(db, height);
    }).immediate();
    return Date.now() - t;
  } finally {
    db.close();
  }
}

/** The two passes of a build beside: our rows kept (minus gone), then the staged came. */
export const BUILD_PASSES = ['kept', 'came'] as const;
export type BuildPass = (typeof BUILD_PASSES)[number];

const PASS_SQL: Record<BuildPass, { edge: string; last: string; insert: string }> = {
  kept: {
    edge:
      'SELECT denom, amount_key, account FROM main.richlist WHERE (denom, amount_key, account) > (?, ?, ?) ' +
      'ORDER BY denom, amount_key, account LIMIT 1 OFFSET ?',
    last: 'SELECT denom, amount_key, account FROM main.richlist ORDER BY denom DESC, amount_key DESC, account DESC LIMIT 1',
    insert: `INSERT INTO main.richlist_next SELECT o.* FROM main.richlist o
      WHERE (o.denom, o.amount_key, o.account) > (?, ?, ?) AND (o.denom, o.amount_key, o.account) <= (?, ?, ?)
        AND NOT EXISTS (SELECT 1 FROM stage.gone g WHERE g.denom = o.denom AND g.amount_key = o.amount_key AND g.account = o.account)`,
  },
  came: {
    edge:
      'SELECT denom, amount_key, account FROM stage.came WHERE (denom, amount_key, account) > (?, ?, ?) ' +
      'ORDER BY denom, amount_key, account LIMIT 1 OFFSET ?',
    last: 'SELECT denom, amount_key, account FROM stage.came ORDER BY denom DESC, amount_key DESC, account DESC LIMIT 1',
    insert: `INSERT INTO main.richlist_next (denom, amount_key, account, json)
      SELECT denom, amount_key, account, '' FROM stage.came
      WHERE (denom, amount_key, account) > (?, ?, ?) AND (denom, amount_key, account) <= (?, ?, ?)`,
  },
};

/**
 * A big change, built beside: richlist_next = ours − gone + came, in chunks (each its own short
 * transaction the block batches interleave with; readers never read richlist_next), then swapped
 * in by renaming in one transaction. Each method opens the live file for its one write.
 */
export class RichListBuild {
  constructor(
    private readonly file: string,
    private readonly stagingPath: string,
  ) {}

  private with<T>(fn: (db: Database.Database) => T): T {
    const db = openWithStage(this.file, this.stagingPath);
    try {
      return fn(db);
    } finally {
      db.close();
    }
  }

  /** An empty richlist_next of the richlist table's own definition. */
  start(): void {
    this.with((db) => {
      const ddl = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'richlist'").pluck().get() as string;
      db.exec('DROP TABLE IF EXISTS main.richlist_next');
      db.exec(ddl.replace(/^CREATE TABLE\s+("?)richlist\1/i, 'CREATE TABLE main.richlist_next'));
    });
  }

  /** Starting point of a pass: below every key. */
  static first(): unknown[] {
    return ['', '', Buffer.alloc(0)];
  }

  /** One chunk of `pass` after key `after`, at most `rows` rows: the rows written, the next key, whether the pass is done. */
  chunk(pass: BuildPass, after: unknown[], rows: number): { written: number; after: unknown[]; done: boolean } {
    const c = PASS_SQL[pass];
    return this.with((db) => {
      const end = db.prepare(c.last).raw().get() as unknown[] | undefined;
      if (!end) return { written: 0, after, done: true };
      const upTo =
        (db
          .prepare(c.edge)
          .raw()
          .get(...after, rows - 1) as unknown[] | undefined) ?? end;
      let written = 0;
      db.transaction(() => {
        written = db.prepare(c.insert).run(...after, ...upTo).changes;
      }).immediate();
      return { written, after: upTo, done: upTo === end };
    });
  }

  /** richlist_next becomes richlist (with the counts, the height, a new snapshot_id) in one transaction; returns its ms. */
  swap(height: number): number {
    return this.with((db) => {
      const t = Date.now();
      db.transaction(() => {
        db.exec('ALTER TABLE main.richlist RENAME TO richlist_old; ALTER TABLE main.richlist_next RENAME TO richlist;');
        finishRichList(db, height);
      }).immediate();
      return Date.now() - t;
    });
  }

  /** Drops the table the swap replaced; returns the ms. */
  dropOld(): number {
    return this.with((db) => {
      const t = Date.now();
      db.exec('DROP TABLE main.richlist_old');
      return Date.now() - t;
    });
  }

  /** A build stopped before its swap: richlist_next goes. */
  abandon(): void {
    this.with((db) => db.exec('DROP TABLE IF EXISTS main.richlist_next'));
  }
}
