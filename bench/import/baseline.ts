/**
 * The floor for `import`: a bare better-sqlite3 bulk insert of exactly the rows an import wrote
 * (read back from that snapshot) into the same tables, with the writer's pragmas, one
 * transaction and its post-load indexes; one INSERT per row. No parsing, validation,
 * derivation or rendering.
 *
 *   node build/bench/import/baseline.js SNAPSHOT OUT
 *
 * Prints one JSON line: seconds for the read-only pass (reading the rows without writing), the
 * insert pass (read + insert), and the index build.
 */
import { rmSync } from 'node:fs';
import { openDatabase } from '../../src/sqlite';
import { INDEXES_SQL, schemaSql, TABLES_SQL } from '../../src/snapshot/schema';

const TABLES = ['meta', 'validators', 'accounts', 'blocks', 'txs', 'tx_accounts', 'msg_types', 'tx_msg_types', 'collections', 'nfts',
  'account_collections', 'nft_txs', 'nft_tx_counts', 'richlist', 'richlist_denoms', 'denom_contracts'];

function main(): void {
  const [src, out] = process.argv.slice(2);
  if (!src || !out) {
    process.stderr.write('usage: baseline.js SNAPSHOT OUT\n');
    process.exit(2);
  }
  const from = openDatabase(src, { readonly: true, fileMustExist: true });
  from.pragma('mmap_size = 0');

  // Pass 1: read every row, write nothing (what the insert pass spends on reading).
  let t = process.hrtime.bigint();
  let rows = 0;
  let bytes = 0;
  for (const table of TABLES) {
    for (const r of from.prepare(`SELECT * FROM ${table}`).raw().iterate() as IterableIterator<unknown[]>) {
      rows++;
      for (const v of r) if (typeof v === 'string') bytes += v.length; else if (Buffer.isBuffer(v)) bytes += v.length;
    }
  }
  const readSeconds = Number(process.hrtime.bigint() - t) / 1e9;

  // Pass 2: the same rows into a fresh file, as SnapshotWriter does.
  rmSync(out, { force: true });
  const db = openDatabase(out);
  db.unsafeMode(true); // else better-sqlite3 keeps journal_mode DELETE
  const mode = db.pragma('journal_mode = OFF', { simple: true }) as string;
  db.unsafeMode(false);
  db.pragma('synchronous = OFF');
  db.pragma('locking_mode = EXCLUSIVE');
  db.pragma('temp_store = MEMORY');
  db.pragma('cache_size = -131072');
  db.exec(schemaSql(TABLES_SQL));
  t = process.hrtime.bigint();
  db.exec('BEGIN');
  for (const table of TABLES) {
    const cols = (from.prepare(`SELECT * FROM ${table} LIMIT 0`).columns()).map((c) => c.name);
    const ins = db.prepare(`INSERT INTO ${table} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`);
    for (const r of from.prepare(`SELECT * FROM ${table}`).raw().iterate() as IterableIterator<unknown[]>) ins.run(r);
  }
  db.exec('COMMIT');
  const insertSeconds = Number(process.hrtime.bigint() - t) / 1e9;
  t = process.hrtime.bigint();
  db.exec(schemaSql(INDEXES_SQL));
  const indexSeconds = Number(process.hrtime.bigint() - t) / 1e9;
  db.close();
  from.close();
  const txs = (openDatabase(out, { readonly: true }).prepare('SELECT count(*) FROM txs').pluck().get()) as number;
  process.stdout.write(JSON.stringify({ journalMode: mode, rows, bytes, txs, readSeconds, insertSeconds, indexSeconds }) + '\n');
}

main();
