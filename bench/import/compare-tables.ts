/**
 * Checks that two snapshots hold the same data: hashes every table's rows in the order of all their columns
 * (meta without snapshot_id and created_at, which differ by design) and prints the tables
 * that differ. Used to confirm that an import change keeps its output byte-identical.
 *
 *   node build/bench/import/compare-tables.js A.sqlite B.sqlite
 *
 * Exit status 0 when every table matches, 1 otherwise.
 */
import { createHash } from 'node:crypto';
import { openDatabase } from '../../src/sqlite';

const VARYING_META = new Set(['snapshot_id', 'created_at']);

function tableHashes(file: string): Map<string, string> {
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

function main(): void {
  const [a, b] = process.argv.slice(2);
  if (!a || !b) {
    process.stderr.write('usage: compare-tables.js A.sqlite B.sqlite\n');
    process.exit(2);
  }
  const ha = tableHashes(a);
  const hb = tableHashes(b);
  let same = true;
  for (const t of new Set([...ha.keys(), ...hb.keys()])) {
    if (ha.get(t) !== hb.get(t)) {
      same = false;
      process.stdout.write(`${t}: ${ha.get(t) ?? '(missing)'} vs ${hb.get(t) ?? '(missing)'}\n`);
    }
  }
  process.stdout.write(same ? `identical: ${[...ha.keys()].length} tables\n` : 'DIFFERENT\n');
  process.exit(same ? 0 : 1);
}

main();
