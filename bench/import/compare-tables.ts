/**
 * Checks that two snapshots hold the same data: hashes every table's rows in the order of all their columns
 * (meta without snapshot_id and created_at, which differ by design) and prints the tables
 * that differ. Used to confirm that an import change keeps its output byte-identical.
 *
 *   node build/bench/import/compare-tables.js A.sqlite B.sqlite
 *
 *   node build/bench/import/compare-tables.js --logical A.sqlite B.sqlite
 *
 * --logical compares content rather than ids: account ids (which depend on the order accounts
 * were first seen, e.g. an incremental update vs a full import) are replaced by the account's
 * address, and the accounts table is compared by address.
 *
 * Exit status 0 when every table matches, 1 otherwise.
 */
import { createHash } from 'node:crypto';
import { openDatabase } from '../../src/sqlite';

const VARYING_META = new Set(['snapshot_id', 'created_at']);

/** Columns holding an accounts.id. */
const ACCOUNT_ID_COLUMNS = new Set(['account_id', 'owner_id', 'object_account_id', 'creator_id']);

function tableHashes(file: string, logical = false): Map<string, string> {
  const db = openDatabase(file, { readonly: true, fileMustExist: true });
  const out = new Map<string, string>();
  const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").pluck().all() as string[];
  for (const t of tables) {
    const h = createHash('sha256');
    let rows = 0;
    let cols = (db.pragma(`table_info(${t})`) as { name: string }[]).map((c) => c.name);
    if (logical) {
      cols = cols.flatMap((c) => (t === 'accounts' && c === 'id' ? []
        : ACCOUNT_ID_COLUMNS.has(c) ? [`(SELECT a.addr FROM accounts a WHERE a.id = ${t}.${c})`] : [c]));
    }
    for (const r of db.prepare(`SELECT ${cols.join(', ')} FROM ${t} ORDER BY ${cols.join(', ')}`).raw().iterate() as IterableIterator<unknown[]>) {
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

/** The tables whose rows differ between two snapshots (logical comparison), each as `name: A vs B`. */
export function logicalTableDiff(a: string, b: string): string[] {
  return tableDiff(tableHashes(a, true), tableHashes(b, true));
}

function tableDiff(ha: Map<string, string>, hb: Map<string, string>): string[] {
  const out: string[] = [];
  for (const t of new Set([...ha.keys(), ...hb.keys()])) {
    if (ha.get(t) !== hb.get(t)) out.push(`${t}: ${ha.get(t) ?? '(missing)'} vs ${hb.get(t) ?? '(missing)'}`);
  }
  return out;
}

function main(): void {
  const logical = process.argv.includes('--logical');
  const [a, b] = process.argv.slice(2).filter((x) => x !== '--logical');
  if (!a || !b) {
    process.stderr.write('usage: compare-tables.js [--logical] A.sqlite B.sqlite\n');
    process.exit(2);
  }
  const ha = tableHashes(a, logical);
  const diff = tableDiff(ha, tableHashes(b, logical));
  for (const d of diff) process.stdout.write(d + '\n');
  process.stdout.write(diff.length === 0 ? `identical: ${[...ha.keys()].length} tables\n` : 'DIFFERENT\n');
  process.exit(diff.length === 0 ? 0 : 1);
}

if (require.main === module) main();
