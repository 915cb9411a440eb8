/**
 * Change records (docs/response-cache.md "What a write changes"): every write to a live snapshot
 * — a follow batch, a rich-list refresh — appends one row to `changes`, in the same transaction
 * as the write, naming the data it changed as tags. A serving process reads the rows committed
 * since the state it last saw and drops exactly the cached answers that depend on a named tag;
 * everything else stays valid across the batch.
 *
 * The tags — their vocabulary and the table of what names and reads each — live in
 * src/snapshot/tags.ts, the one module the writer and the response cache share.
 *
 * A file without the table (built before change records, or imported and never followed) has no
 * records: a reader that sees its state move without records empties its cache (a gap). The
 * table keeps the last KEEP_RECORDS rows; a reader further behind sees a gap too.
 */
import type Database from 'better-sqlite3';

/** change records kept in the file: at one batch a second, more than an hour of them */
const KEEP_RECORDS = 4096;

const TABLE_SQL = `CREATE TABLE IF NOT EXISTS changes (
  seq INTEGER PRIMARY KEY,
  height INTEGER NOT NULL,
  kind TEXT NOT NULL,
  tags TEXT NOT NULL
)`;

export interface ChangeRecord {
  seq: number;
  tags: string[];
}

/**
 * Appends one change record inside the caller's open write transaction (so readers see the
 * write and its record together or neither), and prunes records older than KEEP_RECORDS.
 * Returns its sequence number.
 */
export function recordChange(db: Database.Database, kind: 'batch' | 'richlist', height: number, tags: Iterable<string>): number {
  if (!db.inTransaction) throw new Error('internal: a change record belongs to the write it describes (no transaction is open)');
  db.exec(TABLE_SQL);
  const list = [...new Set(tags)];
  const seq = Number(db.prepare('INSERT INTO changes (height, kind, tags) VALUES (?, ?, ?)').run(height, kind, list.join('\n')).lastInsertRowid);
  db.prepare('DELETE FROM changes WHERE seq <= ?').run(seq - KEEP_RECORDS);
  return seq;
}

/** What a reader needs of the change records, prepared on its connection (in its read transaction). */
export interface ChangeReader {
  /** the newest record's sequence number, 0 without records (or without the table) */
  seq(): number;
  /**
   * The records after `since` up to `upTo`, oldest first; undefined when they cannot all be
   * read (pruned, or no table): the caller must assume everything changed.
   */
  since(since: number, upTo: number): ChangeRecord[] | undefined;
}

/**
 * A ChangeReader prepared on `db`. `hasTable` false: the file had no `changes` table when it was
 * prepared (a later state of the file may have one: prepare again, src/snapshot/open.ts).
 */
export function prepareChangeReader(db: Database.Database): ChangeReader & { hasTable: boolean } {
  const has = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'changes'").get() !== undefined;
  if (!has) return { hasTable: false, seq: () => 0, since: (since, upTo) => (since === upTo ? [] : undefined) };
  const max = db.prepare('SELECT max(seq) FROM changes').pluck();
  const range = db.prepare('SELECT seq, tags FROM changes WHERE seq > ? AND seq <= ? ORDER BY seq');
  return {
    hasTable: true,
    seq: () => (max.get() as number | null) ?? 0,
    since(since, upTo) {
      if (since === upTo) return [];
      if (since > upTo) return undefined;
      const rows = range.all(since, upTo) as { seq: number; tags: string }[];
      // contiguous from since + 1 to upTo, or some were pruned
      if (rows.length !== upTo - since || rows[0].seq !== since + 1) return undefined;
      return rows.map((r) => ({ seq: r.seq, tags: r.tags === '' ? [] : r.tags.split('\n') }));
    },
  };
}
