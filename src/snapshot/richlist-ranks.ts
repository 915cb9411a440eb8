/**
 * The rich list's rank marks (table richlist_ranks, schema v3; docs/api-contract.md#deep-offsets):
 * for each denom, the key (amount_key, account) of every RANK_STEP-th holder from the top of the
 * default order (largest first) — rank 0, RANK_STEP, 2·RANK_STEP, …. A page at offset n seeks the
 * mark at or next to n and skips fewer than RANK_STEP entries of the rich list's own index from
 * there, so any offset costs about what a first page costs (src/snapshot/queries/richlist.ts).
 *
 * Why marks rather than a rank on every row: a refresh that adds or drops one holder near the top
 * moves the rank of every holder below it. Renumbering a 1M-holder list would rewrite 1M rows and
 * their index in the refresh's write transaction; writing its marks again reads the list's index
 * once, in C, RANK_STEP entries per statement, and writes holders / RANK_STEP rows (measured in
 * bench/README.md "Rich list at any offset"). The marks of a denom are written again whenever its
 * holders change — at import, by `import --base` when the source delivers the rich list, and by
 * follow's rich-list refresh — in the transaction that changes them, so readers never see marks
 * of another state of the list.
 */
import type Database from 'better-sqlite3';
import { RANKS_SCHEMA_VERSION, schemaSql, TABLES_SQL } from './schema';

/**
 * Holders between two marks: a deep page skips at most RANK_STEP − 1 index entries (a first page
 * of 100 reads 101 rows). 128: holders / 128 marks (≈8k rows for 1M holders).
 */
export const RANK_STEP = 128;

const ORDER_DESC = 'ORDER BY amount_key DESC, account DESC';

/** Whether the file has the marks table (schema v3) — on `db`'s connection, `schemaName` ('main' by default). */
function hasRanks(db: Database.Database, schemaName = 'main'): boolean {
  return db.prepare(`SELECT 1 FROM ${schemaName}.sqlite_schema WHERE type = 'table' AND name = 'richlist_ranks'`).get() !== undefined;
}

/** The marks table's definition, as sql/001-tables.sql writes it (a version-2 file gets the same). */
function ranksTableSql(): string {
  const sql = /^CREATE TABLE richlist_ranks \([^;]*\) WITHOUT ROWID/m.exec(schemaSql(TABLES_SQL))?.[0];
  if (sql === undefined) throw new Error(`internal: table richlist_ranks is not in ${TABLES_SQL}`);
  return sql;
}

/**
 * Writes the marks of `denoms` (every denom of the rich list: 'all') again, from main.richlist as
 * it is now; a denom without holders keeps no marks. Inside the caller's write transaction.
 * Returns the marks written.
 */
export function writeRanks(db: Database.Database, denoms: Iterable<string> | 'all'): number {
  const list =
    denoms === 'all'
      ? (db.prepare('SELECT DISTINCT denom FROM main.richlist_ranks UNION SELECT denom FROM main.richlist_denoms').pluck().all() as string[])
      : [...new Set(denoms)];
  const drop = db.prepare('DELETE FROM main.richlist_ranks WHERE denom = ?');
  const top = db.prepare(`SELECT amount_key, account FROM main.richlist WHERE denom = ? ${ORDER_DESC} LIMIT 1`).raw();
  // the next mark: RANK_STEP entries below this one, skipped in the index (no row read into JS)
  const next = db
    .prepare(`SELECT amount_key, account FROM main.richlist WHERE denom = ? AND (amount_key, account) < (?, ?) ${ORDER_DESC} LIMIT 1 OFFSET ${RANK_STEP - 1}`)
    .raw();
  const put = db.prepare('INSERT INTO main.richlist_ranks (denom, rank, amount_key, account) VALUES (?, ?, ?, ?)');
  let written = 0;
  for (const denom of list) {
    drop.run(denom);
    let row = top.get(denom) as [string, Buffer] | undefined;
    for (let rank = 0; row !== undefined; rank += RANK_STEP) {
      put.run(denom, rank, row[0], row[1]);
      written++;
      row = next.get(denom, row[0], row[1]) as [string, Buffer] | undefined;
    }
  }
  return written;
}

/**
 * Brings a version-2 file written in place (follow, `import --base`'s copy) to version 3 inside
 * the caller's write transaction: the marks table, the marks of every denom, user_version and
 * meta schema_version — all or nothing. Returns true when it did (the marks are then all
 * current), false when the file had them already.
 */
export function ensureRanks(db: Database.Database): boolean {
  if (hasRanks(db)) return false;
  if (!db.inTransaction) throw new Error('internal: the rank marks of a version-2 file are added inside a write transaction');
  db.exec(ranksTableSql().replace(/^CREATE TABLE richlist_ranks/, 'CREATE TABLE main.richlist_ranks'));
  writeRanks(db, 'all');
  db.pragma(`main.user_version = ${RANKS_SCHEMA_VERSION}`);
  db.prepare("INSERT OR REPLACE INTO main.meta (key, value) VALUES ('schema_version', ?)").run(String(RANKS_SCHEMA_VERSION));
  return true;
}
