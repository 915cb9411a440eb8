/**
 * `follow` one-block update latency (bench/README.md, issue #10): from the moment the source
 * has a new height to the moment `serve`, reading the followed file, answers it on /status.
 *
 *   node build/bench/follow.js --snapshot FILE [--snapshot FILE2 ...] --work DIR [--runs 3] [--verbose]
 *
 * For each snapshot (height H): the chain crawled from it up to H-1 is the replica; an
 * in-process source serves H-1, `follow --interval 50ms` and `serve --commit-poll-ms 50` run on
 * the replica; the source switches to H (t0) and /status on serve is polled every 5 ms until it
 * says H (t1). Reported: median of t1 - t0 over --runs (each on a fresh copy of the replica).
 * The latency includes up to one follow poll (50 ms) and one serve commit poll (50 ms).
 * --verbose: each run's follow log line too (the batch's time split, how NFTs were read).
 */
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { createRequestListener } from '../src/serve/routing';
import { runImport } from '../src/import/run';
import { loadOpenApi } from '../src/serve/openapi';
import { listen } from '../src/serve/server';
import { openSnapshot, Snapshot } from '../src/snapshot/open';
import { appOptions } from '../test/helpers/app-options';

const CLI = resolve(__dirname, '..', '..', 'bin', 'indexer-api');
const argv = process.argv;
const all = (name: string): string[] => argv.flatMap((a, i) => (a === `--${name}` ? [argv[i + 1]] : []));
const one = (name: string, d?: string): string | undefined => all(name)[0] ?? d;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function height(url: string): Promise<number> {
  try { return ((await (await fetch(`${url}/status`)).json()) as { height: number }).height; } catch { return -1; }
}

async function main(): Promise<void> {
  const work = one('work', '/tmp/indexer-bench-follow') as string;
  const runs = Number(one('runs', '3'));
  mkdirSync(work, { recursive: true });
  for (const file of all('snapshot')) {
    const full = openSnapshot(file);
    const h = full.meta.height;
    const txs = full.meta.countTxs;
    let cur: Snapshot = full;
    const app = createRequestListener({ snapshots: { current: () => cur }, openapi: loadOpenApi(), options: appOptions({ corsOrigin: '', logError: () => undefined }) });
    const src = await listen(app, '127.0.0.1', 0);
    const base = join(work, `replica-${txs}.sqlite`);
    const cut = join(work, `cut-${txs}.sqlite`);
    if (!existsSync(base)) await runImport({ fromApi: src.url, toHeight: h - 1, out: base, force: true, quiet: true, json: false });
    if (!existsSync(cut)) copyFileSync(base, cut);
    const cutSnap = openSnapshot(cut);
    const times: number[] = [];
    for (let r = 0; r < runs; r++) {
      const db = join(work, `live-${txs}.sqlite`);
      for (const ext of ['', '-wal', '-shm']) rmSync(db + ext, { force: true });
      copyFileSync(base, db);
      cur = cutSnap;
      const serve = spawn(process.execPath, [CLI, 'serve', '--db', db, '--port', '0', '--workers', '1', '--log-level', 'error', '--commit-poll-ms', '50'], { stdio: ['ignore', 'ignore', 'pipe'] });
      let serr = '';
      serve.stderr.setEncoding('utf8').on('data', (s: string) => { serr += s; });
      while (!/ on (http:\S+)/.test(serr)) await sleep(20);
      const url = (/ on (http:\S+)/.exec(serr) as RegExpExecArray)[1];
      const follow = spawn(process.execPath, [CLI, 'follow', '--db', db, '--from-api', src.url, '--interval', '50ms'], { stdio: ['ignore', 'ignore', 'pipe'] });
      let ferr = '';
      follow.stderr.setEncoding('utf8').on('data', (s: string) => { ferr += s; });
      while (!/following /.test(ferr)) await sleep(20);
      await sleep(300);
      const t0 = process.hrtime.bigint();
      cur = full;
      while ((await height(url)) !== h) await sleep(5);
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      times.push(ms);
      const applied = /applied in (\d+) ms/.exec(ferr)?.[1];
      process.stdout.write(`${txs} txs, run ${r + 1}: ${ms.toFixed(0)} ms source→serve (follow batch ${applied} ms), load ${loadavg()[0].toFixed(2)}\n`);
      if (argv.includes('--verbose')) for (const l of ferr.split('\n').filter((x) => /applied in/.test(x))) process.stdout.write(`  ${l}\n`);
      follow.kill('SIGTERM');
      serve.kill('SIGTERM');
      await sleep(500);
    }
    times.sort((a, b) => a - b);
    process.stdout.write(`${txs} txs (height ${h}): median ${times[Math.floor(times.length / 2)].toFixed(0)} ms over ${runs} runs\n`);
    cutSnap.close();
    await src.close();
    full.close();
  }
}

main().catch((e: Error) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
