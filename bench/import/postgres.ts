/**
 * `import --from-postgres` throughput on a real PostgreSQL holding a rollytics-shaped copy of a
 * dump (bench/import/README.md), compared in the same session with `import --from-dump` of
 * that dump.
 *
 *   node build/bench/import/postgres.js --dump DIR [--vm wasm] [--work DIR] [--runs 3]
 *
 * 1. Starts a throwaway PostgreSQL (test/support/postgres.ts: Debian's binaries, 127.0.0.1,
 *    fsync off) with its data directory under --work, and loads the dump the way rollytics
 *    stores a chain (test/helpers/rollytics-pg.ts). Loading is timed but is set-up.
 * 2. --runs × `indexer-api import --from-postgres DSN --vm-type VM --validators … --json`, each
 *    under /usr/bin/time -v; then --runs × `import --from-dump DIR` for the ratio.
 * MB/s for PostgreSQL is over the on-disk size of the tables read (pg_total_relation_size).
 * Prints a Markdown report and writes it, with the raw numbers, to WORK/pg-report.{md,json}.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { ROOT } from '../../src/assets';
import { ROLLYTICS_TABLES } from '../../src/sources/postgres/tables';
import { loadRollyticsDb } from '../../test/helpers/rollytics-pg';
import { startPostgres } from '../../test/support/postgres';
import { measure, Measured, median } from './measure';

function arg(name: string, fallback?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

interface Run extends Measured { load: number; txStage: number }

async function main(): Promise<void> {
  const dump = resolve(arg('dump') ?? '');
  if (!existsSync(join(dump, 'meta.ndjson'))) throw new Error('--dump DIR: a dump directory (see bench/import/README.md to generate one)');
  const vm = arg('vm', 'wasm') as string;
  const work = resolve(arg('work', '/tmp/indexer-api-bench-pg') as string);
  const runs = Number(arg('runs', '3'));
  mkdirSync(work, { recursive: true });
  process.env.TMPDIR = work; // the PostgreSQL data directory goes there
  const log = (s: string): void => { process.stderr.write(`bench/import/postgres: ${s}\n`); };
  const cli = join(ROOT, 'bin', 'indexer-api');

  const pg = await startPostgres();
  try {
    const dsn = await pg.createDatabase('rollytics');
    log(`loading ${dump} into PostgreSQL (set-up, not measured as throughput)...`);
    const t0 = Date.now();
    await loadRollyticsDb(dsn, dump);
    const loadSeconds = (Date.now() - t0) / 1000;
    const c = new Client({ connectionString: dsn });
    await c.connect();
    await c.query('VACUUM ANALYZE');
    const size = await c.query<{ b: string }>('SELECT sum(pg_total_relation_size(c.oid))::text AS b FROM pg_class c WHERE c.relname = ANY($1) AND c.relkind = \'r\'', [[...ROLLYTICS_TABLES]]);
    await c.end();
    const pgBytes = Number(size.rows[0].b);
    log(`loaded in ${loadSeconds.toFixed(0)} s; tables ${(pgBytes / 1e6).toFixed(0)} MB`);

    const m = JSON.parse(readFileSync(join(dump, 'meta.ndjson'), 'utf8').split('\n')[0]) as { version: string; commit_hash: string };
    const pgArgs = ['import', '--from-postgres', dsn, '--vm-type', vm, '--validators', join(dump, 'validators.ndjson'),
      '--status-version', m.version, '--status-commit', m.commit_hash, '--out', join(work, 'pg.sqlite'), '--force', '--json'];
    const dumpArgs = ['import', '--from-dump', dump, '--out', join(work, 'dump.sqlite'), '--force', '--json'];
    const dumpBytes = readdirSync(dump).reduce((a, f) => a + statSync(join(dump, f)).size, 0);

    const once = async (label: string, args: string[]): Promise<Run> => {
      const load = loadavg()[0];
      log(`${label} (load ${load.toFixed(1)}): node bin/indexer-api ${args.join(' ').replace(dsn, 'DSN')}`);
      const r = await measure(process.execPath, [cli, ...args]);
      if (r.code !== 0) throw new Error(`${label} failed: ${r.stderr}`);
      const s = JSON.parse(r.stdout) as { stages: { name: string; seconds: number }[] };
      return { ...r, stdout: r.stdout, stderr: '', load, txStage: s.stages.find((x) => x.name === 'txs')?.seconds ?? NaN };
    };
    const fromPg: Run[] = [];
    const fromDump: Run[] = [];
    for (let i = 0; i < runs; i++) {
      fromPg.push(await once(`from-postgres ${i + 1}/${runs}`, pgArgs));
      fromDump.push(await once(`from-dump ${i + 1}/${runs}`, dumpArgs));
    }
    const nTx = (JSON.parse(fromPg[0].stdout) as { records: { txs: number } }).records.txs;
    const f = (x: number, d = 0): string => x.toFixed(d);
    const row = (label: string, xs: Run[], bytes: number): string => {
      const wall = median(xs.map((x) => x.wallSeconds));
      return `| ${label} | ${f(median(xs.map((x) => x.load)), 1)} | ${f(wall, 1)} | ${f(median(xs.map((x) => x.userSeconds + x.sysSeconds)), 1)} | ${f(nTx / wall)} | ${f(bytes / 1e6 / wall, 1)} | ${f(nTx / median(xs.map((x) => x.txStage)))} | ${f(median(xs.map((x) => x.maxRssMb)))} |`;
    };
    const report = [
      `## import --from-postgres vs --from-dump: ${vm}, ${nTx} txs (${new Date().toISOString()})`,
      '',
      `machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, node ${process.version}; medians of ${runs} alternating runs`,
      `PostgreSQL tables read: ${f(pgBytes / 1e6)} MB (loaded in ${f(loadSeconds)} s, set-up); dump: ${f(dumpBytes / 1e6)} MB`,
      '',
      '| source | load avg | wall s | CPU s | txs/s | MB/s (source bytes) | txs/s (txs stage) | peak RSS MB |',
      '|---|---:|---:|---:|---:|---:|---:|---:|',
      row('--from-postgres', fromPg, pgBytes),
      row('--from-dump', fromDump, dumpBytes),
      '',
      `from-postgres / from-dump wall time: ${f(median(fromPg.map((x) => x.wallSeconds)) / median(fromDump.map((x) => x.wallSeconds)), 2)}×`,
    ].join('\n');
    process.stdout.write(report + '\n');
    writeFileSync(join(work, 'pg-report.md'), report + '\n');
    writeFileSync(join(work, 'pg-report.json'), JSON.stringify({ vm, txs: nTx, pgBytes, dumpBytes, loadSeconds, fromPg, fromDump }, null, 2));
  } finally {
    await pg.stop();
  }
}

main().catch((e: Error) => {
  process.stderr.write(`bench/import/postgres: ${e.message}\n`);
  process.exit(1);
});
