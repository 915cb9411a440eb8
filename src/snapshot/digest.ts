/**
 * A digest of every table of a snapshot — each table's rows hashed in the order of all their
 * columns (meta without snapshot_id and created_at, which differ by design; not `changes`, the
 * log of the writes a followed file received: src/snapshot/changes.ts) — plus the index
 * definitions. Two imports that hold the same data have the same digests, whatever order their
 * rows were written in. Used by tests and by bench/import/compare-tables.ts.
 *
 * `logical` compares content rather than ids: account ids (which depend on the order accounts
 * were first seen, e.g. an incremental update vs a full import) are replaced by the account's
 * address, and the accounts table is compared by address.
 */
import { createHash } from 'node:crypto';
import { openStore } from './store';

const VARYING_META = new Set(['snapshot_id', 'created_at']);

/** Columns holding an accounts.id. */
const ACCOUNT_ID_COLUMNS = new Set(['account_id', 'owner_id', 'object_account_id', 'creator_id']);

/** table name (and '(indexes)') → "N rows <hash>" */
export function tableDigests(file: string, logical = false): Map<string, string> {
  const db = openStore(file, 'read');
  const out = new Map<string, string>();
  const tables = db
    .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'changes' ORDER BY name")
    .pluck()
    .all() as string[];
  for (const t of tables) {
    const h = createHash('sha256');
    let rows = 0;
    let cols = (db.pragma(`table_info(${t})`) as { name: string }[]).map((c) => c.name);
    if (logical) {
      cols = cols.flatMap((c) =>
        t === 'accounts' && c === 'id' ? [] : ACCOUNT_ID_COLUMNS.has(c) ? [`(SELECT a.addr FROM accounts a WHERE a.id = ${t}.${c})`] : [c],
      );
    }
    for (const r of db
      .prepare(`SELECT ${cols.join(', ')} FROM ${t} ORDER BY ${cols.join(', ')}`)
      .raw()
      .iterate() as IterableIterator<unknown[]>) {
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

/** The tables that differ between two snapshots, each as `name: A vs B` (empty: same data). */
export function tableDiff(a: string, b: string, logical = false): string[] {
  const ha = tableDigests(a, logical);
  const hb = tableDigests(b, logical);
  const out: string[] = [];
  for (const t of new Set([...ha.keys(), ...hb.keys()])) {
    if (ha.get(t) !== hb.get(t)) out.push(`${t}: ${ha.get(t) ?? '(missing)'} vs ${hb.get(t) ?? '(missing)'}`);
  }
  return out;
}
