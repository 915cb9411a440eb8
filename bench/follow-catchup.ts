/**
 * `follow` catch-up rate against `import --from-api` over the same source (bench/README.md,
 * issue #10), alternated in one session.
 *
 *   node build/bench/follow-catchup.js --snapshot FILE --work DIR [--runs 3] [--from 2]
 *
 * The source: an in-process indexer-api serving FILE. Timed:
 * - import: `import --from-api URL --out X` (the whole chain);
 * - follow from empty: `follow --db Y --from-api URL` with no Y (its first run is that import),
 *   until it logs that it follows;
 * - follow catching up: `follow --db Z` where Z holds only heights 1..--from (crawled once),
 *   until its log says 0 behind — batches of --batch-blocks (2000), each one transaction.
 * Rates are txs per second of the chain; medians over --runs.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { createRequestListener } from '../src/serve/routing';
import { runImport } from '../src/import/run';
import { loadOpenApi } from '../src/serve/openapi';
import { listen } from '../src/serve/server';
import { openSnapshot } from '../src/snapshot/open';
import { appOptions } from '../test/helpers/app-options';

const CLI = resolve(__dirname, '..', '..', 'bin', 'indexer-api');
const argv = process.argv;
const opt = (name: string, d: string): string => { const i = argv.indexOf(`--${name}`); return i >= 0 ? argv[i + 1] : d; };
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function timed(args: string[], done: RegExp | undefined): Promise<number> {
  const t0 = process.hrtime.bigint();
  const p = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  return new Promise((resolveP, reject) => {
    p.stderr.setEncoding('utf8').on('data', (s: string) => {
      err += s;
      if (done && done.test(err)) { const s2 = Number(process.hrtime.bigint() - t0) / 1e9; p.kill('SIGTERM'); resolveP(s2); }
    });
    p.once('exit', (code) => {
      if (!done && code === 0) resolveP(Number(process.hrtime.bigint() - t0) / 1e9);
      else if (!done || !done.test(err)) reject(new Error(`${args[0]} exited ${code}: ${err}`));
    });
  });
}

async function main(): Promise<void> {
  const file = opt('snapshot', '');
  const work = opt('work', '/tmp/indexer-bench-follow-catchup');
  const runs = Number(opt('runs', '3'));
  const from = Number(opt('from', '2'));
  mkdirSync(work, { recursive: true });
  const s = openSnapshot(file);
  const txs = s.meta.countTxs;
  const app = createRequestListener({ snapshots: { current: () => s }, openapi: loadOpenApi(), options: appOptions({ corsOrigin: '', logError: () => undefined }) });
  const src = await listen(app, '127.0.0.1', 0);
  const small = join(work, 'small.sqlite');
  if (!existsSync(small)) await runImport({ fromApi: src.url, toHeight: from, out: small, force: true, quiet: true, json: false });
  const r: Record<string, number[]> = { import: [], 'follow from empty': [], 'follow catching up': [] };
  const rm = (f: string): void => { for (const e of ['', '-wal', '-shm']) rmSync(f + e, { force: true }); };
  for (let i = 0; i < runs; i++) {
    const a = join(work, 'import.sqlite'); rm(a);
    r.import.push(await timed(['import', '--from-api', src.url, '--out', a, '--quiet'], undefined));
    const b = join(work, 'empty.sqlite'); rm(b);
    r['follow from empty'].push(await timed(['follow', '--db', b, '--from-api', src.url, '--quiet'], /following api/));
    const c = join(work, 'catchup.sqlite'); rm(c); copyFileSync(small, c);
    r['follow catching up'].push(await timed(['follow', '--db', c, '--from-api', src.url], /source at \d+, 0 behind/));
    process.stdout.write(`run ${i + 1}: ${Object.entries(r).map(([k, v]) => `${k} ${v[i].toFixed(1)} s`).join(', ')}; load ${loadavg()[0].toFixed(1)}\n`);
  }
  const base = txs / median(r.import);
  for (const [k, v] of Object.entries(r)) {
    const rate = txs / median(v);
    process.stdout.write(`${k}: median ${median(v).toFixed(1)} s = ${rate.toFixed(0)} txs/s = ${(100 * rate / base).toFixed(0)} % of import\n`);
  }
  await src.close();
  s.close();
}

main().catch((e: Error) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
