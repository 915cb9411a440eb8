/**
 * A digest of every table of a snapshot — each table's rows hashed in the order of all their
 * columns (meta without snapshot_id and created_at, which differ by design) — plus the index
 * definitions. Two imports that hold the same data have the same digests, whatever order their
 * rows were written in. Used by tests and by bench/import/compare-tables.ts.
 */
import { createHash } from 'node:crypto';
import { openDatabase } from '../sqlite';

const VARYING_META = new Set(['snapshot_id', 'created_at']);

/** table name (and '(indexes)') → "N rows <hash>" */
export function tableDigests(file: string): Map<string, string> {
  const db = openDatabase(file, { readonly: true, fileMustExist: true });
  const out = new Map<string, string>();
  const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").pluck().all() as string[];
  for (const t of tables) {
    const h = createHash('sha256');
    let rows = 0;
    const cols = (db.pragma(`table_info(${t})`) as { name: string }[]).map((c) => c.name);
    for (const r of db.prepare(`SELECT * FROM ${t} ORDER BY ${cols.join(', ')}`).raw().iterate() as IterableIterator<unknown[]>) {
      if (t === 'meta' && VARYING_META.has(r[0] as string)) continue;
      rows++;
      for (const v of r) {
        h.update(Buffer.isBuffer(v) ? 'b' : typeof v === 'string' ? 's' : 'n');
        h.update(Buffer.isBuffer(v) ? v.toString('hex') : String(v));
        h.update('\u0000');
      }
      h.update('\n');
    }
    out.set(t, `${rows} rows ${h.digest('hex').slice(0, 16)}`);
  }
  const indexes = db.prepare("SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL ORDER BY name").raw().all() as string[][];
  out.set('(indexes)', createHash('sha256').update(JSON.stringify(indexes)).digest('hex').slice(0, 16));
  db.close();
  return out;
}

