/**
 * Snapshot bytes per tx beside rollytics' PostgreSQL for the same chain (issue #23; method in
 * docs/snapshot-size.md, figures in bench/README.md).
 *
 *   node build/bench/snapshot-size.js [--vms move,wasm,evm] [--txs 50000] [--work /work/data-bc/sizes]
 *     [--cli bin/indexer-api] [--dump DIR] [--snapshot FILE] [--snapshot-only | --pg-only] [--label TEXT]
 *     [--report NAME]
 *
 * Per VM:
 * 1. The dump WORK/dump-VM-N (`generate --vm VM --preset scale --txs N`, always with this
 *    repository's CLI so that every build is measured on the same chain), reused when present;
 *    --dump DIR (one VM only) takes an existing one instead.
 * 2. Ours: `--cli import --from-dump` into WORK/snap-VM-N.sqlite (--snapshot FILE: an existing
 *    file instead); the file's size as written, its free pages, and per table the bytes of its
 *    pages and of its indexes' pages (SQLite's dbstat).
 * 3. PostgreSQL: a throwaway server (test/support/postgres.ts) with its data directory under
 *    WORK, the dump loaded by test/helpers/rollytics-pg.ts (rollytics' schema and
 *    indexes), VACUUM ANALYZE, then pg_total_relation_size per table and pg_database_size minus
 *    that of an empty database created beside it. The result is kept in WORK/pg-size-VM-N.json
 *    with a hash of the schema; --snapshot-only reuses it, so that re-measuring a new build costs
 *    one import per VM.
 * Writes WORK/NAME.md and WORK/NAME.json (--report, default size-report: every figure, with the
 * CLI and its commit); with another NAME the snapshots are WORK/snap-VM-N-NAME.sqlite, so that
 * a before and an after sit side by side.
 */
import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Client } from 'pg';
import { ROOT } from '../src/assets';
import { loadRollyticsDb, ROLLYTICS_SCHEMA } from '../test/helpers/rollytics-pg';
import { startPostgres } from '../test/support/postgres';
import { measure } from './import/measure';

/** Bytes of one table: its own pages and those of the indexes built on it. */
export interface TableSize { name: string; tableBytes: number; indexBytes: number; totalBytes: number }

export interface SnapshotSize {
  file: string;
  /** the file as written: what publish ships and a replica stores */
  fileBytes: number;
  pageSize: number;
  pageCount: number;
  freelistPages: number;
  /** meta's wire_format / schema_version, when the file has them */
  wireFormat?: string;
  schemaVersion?: string;
  tables: TableSize[];
}

export interface PgSize {
  /** sum of pg_total_relation_size (heap, TOAST, indexes) over the database's tables */
  tablesBytes: number;
  /** pg_database_size of the loaded database minus that of an empty one created beside it */
  databaseBytes: number;
  emptyDatabaseBytes: number;
  tables: TableSize[];
  loadSeconds: number;
  postgresVersion: string;
  schemaSha256: string;
  dump: string;
  measuredAt: string;
}

export interface VmReport {
  vm: string;
  dump: string;
  txs: number;
  ours?: SnapshotSize & { importSeconds?: number };
  pg?: PgSize;
  /** bytes per tx and ours / PostgreSQL, when both sides are known */
  oursPerTx?: number;
  pgPerTx?: number;
  pgDatabasePerTx?: number;
  ratio?: number;
  ratioToDatabase?: number;
}

/**
 * Per-table bytes of a SQLite file from dbstat: every b-tree's pages (overflow pages included)
 * charged to its table, an index's to the table it indexes; sqlite_schema is a table of its own.
 * The sum over tables plus the free pages is the file's page count times the page size.
 */
export function sqliteSizes(file: string): SnapshotSize {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    const pageCount = db.pragma('page_count', { simple: true }) as number;
    const freelistPages = db.pragma('freelist_count', { simple: true }) as number;
    const owner = new Map<string, string>();
    for (const r of db.prepare("SELECT name, tbl_name FROM sqlite_schema WHERE type IN ('table', 'index')").all() as { name: string; tbl_name: string }[]) {
      owner.set(r.name, r.tbl_name);
    }
    const byTable = new Map<string, TableSize>();
    for (const r of db.prepare('SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name').all() as { name: string; bytes: number }[]) {
      const table = owner.get(r.name) ?? r.name; // sqlite_schema is not listed in itself
      const t = byTable.get(table) ?? { name: table, tableBytes: 0, indexBytes: 0, totalBytes: 0 };
      if (table === r.name) t.tableBytes += r.bytes; else t.indexBytes += r.bytes;
      t.totalBytes += r.bytes;
      byTable.set(table, t);
    }
    const metaValue = (key: string): string | undefined => (byTable.has('meta')
      ? (db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined)?.value : undefined);
    return {
      file, fileBytes: statSync(file).size, pageSize, pageCount, freelistPages, wireFormat: metaValue('wire_format'),
      schemaVersion: metaValue('schema_version'), tables: sortTables([...byTable.values()]),
    };
  } finally {
    db.close();
  }
}

const sortTables = (ts: TableSize[]): TableSize[] => ts.sort((a, b) => b.totalBytes - a.totalBytes || a.name.localeCompare(b.name));

/** Fills in bytes per tx and the ratios from what is known of each side. */
export function compare(r: VmReport): VmReport {
  if (!(r.txs > 0)) throw new Error(`${r.vm}: tx count ${r.txs} — bytes per tx need at least one tx`);
  const out: VmReport = { ...r };
  if (r.ours) out.oursPerTx = r.ours.fileBytes / r.txs;
  if (r.pg) {
    out.pgPerTx = r.pg.tablesBytes / r.txs;
    out.pgDatabasePerTx = r.pg.databaseBytes / r.txs;
  }
  if (r.ours && r.pg) {
    out.ratio = r.ours.fileBytes / r.pg.tablesBytes;
    out.ratioToDatabase = r.ours.fileBytes / r.pg.databaseBytes;
  }
  return out;
}

async function countLines(file: string): Promise<number> {
  let n = 0;
  let last = 10;
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) n++;
    if (chunk.length) last = chunk[chunk.length - 1];
  }
  return last === 10 ? n : n + 1;
}

export const schemaSha256 = (): string => createHash('sha256').update(ROLLYTICS_SCHEMA).digest('hex');

async function measurePg(dump: string, work: string, log: (s: string) => void): Promise<PgSize> {
  mkdirSync(work, { recursive: true });
  const tmp = process.env.TMPDIR;
  process.env.TMPDIR = work; // the data directory goes there (test/support/postgres.ts uses tmpdir())
  const pg = await startPostgres();
  if (tmp === undefined) delete process.env.TMPDIR; else process.env.TMPDIR = tmp;
  try {
    const dsn = await pg.createDatabase('rollytics');
    await pg.createDatabase('empty');
    log(`loading ${dump} into PostgreSQL...`);
    const t0 = Date.now();
    await loadRollyticsDb(dsn, dump);
    const loadSeconds = (Date.now() - t0) / 1000;
    const c = new Client({ connectionString: dsn });
    await c.connect();
    try {
      await c.query('VACUUM ANALYZE');
      const rows = (await c.query<{ name: string; total: string; indexes: string }>(`
        SELECT c.relname AS name, pg_total_relation_size(c.oid)::text AS total, pg_indexes_size(c.oid)::text AS indexes
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind = 'r'`)).rows;
      const tables = sortTables(rows.map((r) => ({
        name: r.name, tableBytes: Number(r.total) - Number(r.indexes), indexBytes: Number(r.indexes), totalBytes: Number(r.total),
      })));
      const size = async (db: string): Promise<number> => Number((await c.query<{ b: string }>('SELECT pg_database_size($1)::text AS b', [db])).rows[0].b);
      const emptyDatabaseBytes = await size('empty');
      const databaseBytes = await size('rollytics') - emptyDatabaseBytes;
      const postgresVersion = (await c.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0].v;
      return {
        tablesBytes: tables.reduce((a, t) => a + t.totalBytes, 0), databaseBytes, emptyDatabaseBytes, tables, loadSeconds,
        postgresVersion, schemaSha256: schemaSha256(), dump, measuredAt: new Date().toISOString(),
      };
    } finally {
      await c.end();
    }
  } finally {
    await pg.stop();
  }
}

/** `--cli --version` and, when the CLI sits in a git checkout, its commit (+dirty). */
function describeCli(cli: string): { cli: string; version: string; commit?: string } {
  const version = execFileSync(process.execPath, [cli, '--version'], { encoding: 'utf8' }).trim();
  try {
    const dir = dirname(dirname(cli));
    const commit = execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['-C', dir, 'status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim() !== '';
    return { cli, version, commit: dirty ? `${commit}+dirty` : commit };
  } catch {
    return { cli, version };
  }
}

/** issue #23: the snapshot at most 0.6× rollytics' PostgreSQL bytes per tx */
const GOAL = 0.6;
const mb = (b: number): string => (b / 1e6).toFixed(1);
const int = (x: number): string => Math.round(x).toLocaleString('en-US');

export function markdown(reports: VmReport[], meta: { label: string; cli: string; version: string; commit?: string; when: string }, top = 6): string {
  const out: string[] = [];
  out.push(`## Snapshot size vs rollytics' PostgreSQL: ${meta.label} (${meta.when})`, '');
  const formats = [...new Set(reports.filter((r) => r.ours).map((r) => `wire format ${r.ours?.wireFormat ?? '?'}, schema ${r.ours?.schemaVersion ?? '?'}`))];
  const pgVersions = [...new Set(reports.map((r) => r.pg?.postgresVersion).filter((v) => v))];
  out.push(`ours: \`${meta.cli}\` ${meta.version}${meta.commit ? ` (git ${meta.commit})` : ''}${formats.length ? `; files of ${formats.join(' / ')}` : ''}`
    + `${pgVersions.length ? `; PostgreSQL ${pgVersions.join(', ')}` : ''}`, '');
  out.push('| VM | txs | PostgreSQL tables MB | PG B/tx | PG database − empty, B/tx | goal: 0.6 × PG B/tx | ours file MB | ours B/tx | ours free pages | ours / PG tables | ours / PG database |');
  out.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of reports) {
    const o = r.ours;
    const p = r.pg;
    out.push(`| ${r.vm} | ${int(r.txs)} | ${p ? mb(p.tablesBytes) : '–'} | ${r.pgPerTx !== undefined ? int(r.pgPerTx) : '–'} | ${r.pgDatabasePerTx !== undefined ? int(r.pgDatabasePerTx) : '–'} | ${r.pgPerTx !== undefined ? int(GOAL * r.pgPerTx) : '–'} `
      + `| ${o ? mb(o.fileBytes) : '–'} | ${r.oursPerTx !== undefined ? int(r.oursPerTx) : '–'} | ${o ? o.freelistPages : '–'} `
      + `| ${r.ratio !== undefined ? `${r.ratio.toFixed(2)}×` : '–'} | ${r.ratioToDatabase !== undefined ? `${r.ratioToDatabase.toFixed(2)}×` : '–'} |`);
  }
  for (const r of reports) {
    out.push('', `### ${r.vm}: largest tables (bytes per tx: table + its indexes)`, '');
    const col = (ts: TableSize[] | undefined, total: number | undefined, i: number): string => {
      const t = ts?.[i];
      if (!t || !total) return '  |  |  |';
      return ` ${t.name} | ${int(t.totalBytes / r.txs)} (${int(t.tableBytes / r.txs)} + ${int(t.indexBytes / r.txs)}) | ${(100 * t.totalBytes / total).toFixed(0)} % |`;
    };
    out.push('| PostgreSQL | B/tx (table + indexes) | share | ours | B/tx (table + indexes) | share |');
    out.push('|---|---:|---:|---|---:|---:|');
    for (let i = 0; i < top && (r.pg?.tables[i] || r.ours?.tables[i]); i++) {
      const pgTotal = r.pg?.tablesBytes;
      const oursTotal = r.ours ? r.ours.pageCount * r.ours.pageSize : undefined;
      out.push(`|${col(r.pg?.tables, pgTotal, i)}${col(r.ours?.tables, oursTotal, i)}`);
    }
  }
  return out.join('\n') + '\n';
}

function arg(name: string, fallback?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = process.argv[i + 1];
  if (v === undefined || v.startsWith('--')) throw new Error(`--${name} needs a value`);
  return v;
}
const flag = (name: string): boolean => process.argv.includes(`--${name}`);

async function main(): Promise<void> {
  const vms = (arg('vms', 'move,wasm,evm') as string).split(',').map((s) => s.trim()).filter(Boolean);
  for (const vm of vms) if (!['move', 'wasm', 'evm'].includes(vm)) throw new Error(`--vms: unknown VM "${vm}" (move, wasm, evm)`);
  const txsArg = arg('txs', '50000') as string;
  const txs = Number(txsArg);
  if (!Number.isInteger(txs) || txs < 1) throw new Error(`--txs ${txsArg}: a positive whole number of txs`);
  const work = resolve(arg('work', '/work/data-bc/sizes') as string);
  const cli = resolve(arg('cli', join(ROOT, 'bin', 'indexer-api')) as string);
  if (!existsSync(cli)) throw new Error(`--cli ${cli}: no such file`);
  const ownCli = join(ROOT, 'bin', 'indexer-api');
  const dumpArg = arg('dump');
  const snapshotArg = arg('snapshot');
  if ((dumpArg || snapshotArg) && vms.length !== 1) throw new Error('--dump / --snapshot name one VM\'s files: give --vms with exactly one VM');
  const snapshotOnly = flag('snapshot-only');
  const pgOnly = flag('pg-only');
  if (snapshotOnly && pgOnly) throw new Error('--snapshot-only and --pg-only exclude each other');
  const label = arg('label', `${txs} txs per VM`) as string;
  const reportName = arg('report', 'size-report') as string;
  if (!/^[\w.-]+$/.test(reportName)) throw new Error(`--report ${reportName}: a file name (letters, digits, . _ -)`);
  const snapSuffix = reportName === 'size-report' ? '' : `-${reportName}`;
  mkdirSync(work, { recursive: true });
  const log = (s: string): void => { process.stderr.write(`bench/snapshot-size: ${s}\n`); };
  const cliInfo = describeCli(cli);

  const reports: VmReport[] = [];
  for (const vm of vms) {
    let dump = dumpArg ? resolve(dumpArg) : join(work, `dump-${vm}-${txs}`);
    if (!existsSync(join(dump, 'meta.ndjson'))) {
      if (dumpArg) throw new Error(`--dump ${dump}: no meta.ndjson there (not a dump directory)`);
      log(`generating ${dump}...`);
      rmSync(`${dump}.tmp`, { recursive: true, force: true });
      // Plain NDJSON: the PostgreSQL loader reads NAME.ndjson only.
      execFileSync(process.execPath, [ownCli, 'generate', '--vm', vm, '--preset', 'scale', '--txs', String(txs), '--out', `${dump}.tmp`, '--quiet'], { stdio: 'inherit' });
      renameSync(`${dump}.tmp`, dump);
    }
    dump = resolve(dump);
    const nTx = await countLines(join(dump, 'txs.ndjson'));
    const report: VmReport = { vm, dump, txs: nTx };

    if (!pgOnly) {
      if (snapshotArg) {
        report.ours = sqliteSizes(resolve(snapshotArg));
      } else {
        const out = join(work, `snap-${vm}-${nTx}${snapSuffix}.sqlite`);
        log(`${vm}: ${cli} import --from-dump ${dump} --out ${out}`);
        const r = await measure(process.execPath, [cli, 'import', '--from-dump', dump, '--out', out, '--force', '--quiet']);
        if (r.code !== 0) throw new Error(`import of ${dump} failed (exit ${r.code}): ${r.stderr.slice(-2000)}`);
        for (const side of ['-wal', '-journal']) {
          if (existsSync(out + side) && statSync(out + side).size > 0) throw new Error(`${out}${side} left beside the snapshot: its size would not be the file's`);
        }
        report.ours = { ...sqliteSizes(out), importSeconds: r.wallSeconds };
      }
    }

    const cache = join(work, `pg-size-${vm}-${nTx}.json`);
    if (!snapshotOnly) {
      report.pg = await measurePg(dump, work, log);
      writeFileSync(cache, JSON.stringify(report.pg, null, 2) + '\n');
    } else if (existsSync(cache)) {
      const pg = JSON.parse(readFileSync(cache, 'utf8')) as PgSize;
      if (pg.schemaSha256 !== schemaSha256()) log(`${cache}: measured with another ROLLYTICS_SCHEMA; run without --snapshot-only to refresh it`);
      else if (pg.dump !== dump) log(`${cache}: measured on ${pg.dump}, not ${dump}; run without --snapshot-only to refresh it`);
      else report.pg = pg;
    } else {
      log(`${vm}: no PostgreSQL figure in ${cache} yet (run once without --snapshot-only): no ratio`);
    }
    reports.push(compare(report));
    const done = reports[reports.length - 1];
    log(`${vm}: ${nTx} txs; ours ${done.oursPerTx?.toFixed(0) ?? '–'} B/tx, PostgreSQL ${done.pgPerTx?.toFixed(0) ?? '–'} B/tx, ratio ${done.ratio?.toFixed(3) ?? '–'}`);
  }

  const meta = { label, ...cliInfo, when: new Date().toISOString() };
  const md = markdown(reports, meta);
  process.stdout.write(md);
  writeFileSync(join(work, `${reportName}.md`), md);
  writeFileSync(join(work, `${reportName}.json`), JSON.stringify({ ...meta, argv: process.argv.slice(2), reports }, null, 2) + '\n');
}

if (require.main === module) {
  main().catch((e: Error) => {
    process.stderr.write(`bench/snapshot-size: ${e.message}\n`);
    process.exit(1);
  });
}
