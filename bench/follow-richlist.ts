/**
 * `follow` one-block batch time against the rich list's size (bench/README.md "Follow, rich
 * list", issue #22): the same chain (the Wasm demo chain, 400 heights) with N holders per denom
 * (3 denoms: `generate --holders N`), followed from an API source from height 399 to 400.
 *
 *   node build/bench/follow-richlist.js --holders 333,100000,1000000 [--runs 3] [--work DIR] [--denoms-up-to 100000]
 *
 * For each N: the chain at 399 and at 400 (generateDump untilHeight: the rich list of that
 * height) imported from their dumps; an in-process source serves 399; `follow --interval 50ms`
 * runs on a copy of the 399 file, with `--denoms` (the three denoms, refreshed at the start:
 * the bench waits for that refresh) when N ≤ --denoms-up-to, and once without; the source then
 * switches to 400 and the batch's own time is read from follow's log line (`applied in N ms`).
 * Reported: per N and mode the median over --runs, and its ratio to the smallest N's median
 * of the same run. Crawling a rich list pages it by offset, so a refresh of 3M rows through an
 * API costs what paging 3M rows costs; --denoms-up-to keeps that out of the big runs.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { createRequestListener } from '../src/serve/routing';
import { runImport } from '../src/import/run';
import { generateDump } from '../src/generate/index';
import { BANK_RICH_DENOMS } from '../src/generate/richlist';
import { loadOpenApi } from '../src/serve/openapi';
import { listen } from '../src/serve/server';
import { openSnapshot, Snapshot } from '../src/snapshot/open';
import { appOptions } from '../test/helpers/app-options';

const CLI = resolve(__dirname, '..', '..', 'bin', 'indexer-api');
const argv = process.argv;
const one = (name: string, d?: string): string | undefined => { const i = argv.indexOf(`--${name}`); return i >= 0 ? argv[i + 1] : d; };
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function chainAt(work: string, holders: number, height: number): Promise<string> {
  const file = join(work, `wasm-${holders}-${height}.sqlite`);
  if (existsSync(file)) return file;
  const dump = join(work, `dump-${holders}-${height}`);
  await generateDump({ vm: 'wasm', out: dump, preset: 'demo', holders, untilHeight: height, force: true });
  await runImport({ fromDump: dump, out: file, force: true, quiet: true, json: false });
  rmSync(dump, { recursive: true, force: true });
  return file;
}

async function main(): Promise<void> {
  const work = one('work', '/tmp/indexer-bench-follow-richlist') as string;
  const runs = Number(one('runs', '3'));
  const sizes = (one('holders', '333,100000,1000000') as string).split(',').map(Number);
  const denomsUpTo = Number(one('denoms-up-to', '100000'));
  mkdirSync(work, { recursive: true });
  const results: { holders: number; rows: number; mode: string; ms: number[]; refresh: string[] }[] = [];
  for (const holders of sizes) {
    const before = await chainAt(work, holders, 399);
    const after = await chainAt(work, holders, 400);
    const prev = openSnapshot(before);
    const next = openSnapshot(after);
    const rows = next.db.prepare('SELECT count(*) FROM richlist').pluck().get() as number;
    let cur: Snapshot = prev;
    const app = createRequestListener({ snapshots: { current: () => cur }, openapi: loadOpenApi(), options: appOptions({ corsOrigin: '', logError: () => undefined }) });
    const src = await listen(app, '127.0.0.1', 0);
    for (const mode of holders <= denomsUpTo ? ['no --denoms', '--denoms'] : ['no --denoms']) {
      const r = { holders, rows, mode, ms: [] as number[], refresh: [] as string[] };
      results.push(r);
      for (let run = 0; run < runs; run++) {
        const db = join(work, 'live.sqlite');
        for (const ext of ['', '-wal', '-shm']) rmSync(db + ext, { force: true });
        copyFileSync(before, db);
        cur = prev;
        const args = ['follow', '--db', db, '--from-api', src.url, '--interval', '50ms', '--richlist-interval', '10m'];
        if (mode === '--denoms') args.push('--denoms', BANK_RICH_DENOMS.join(','));
        const follow = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
        let log = '';
        follow.stderr.setEncoding('utf8').on('data', (s: string) => { log += s; });
        const until = async (re: RegExp): Promise<RegExpExecArray> => {
          for (;;) {
            const m = re.exec(log);
            if (m) return m;
            if (follow.exitCode !== null) throw new Error(`follow exited: ${log}`);
            await sleep(10);
          }
        };
        await until(/following /);
        if (mode === '--denoms') r.refresh.push((await until(/rich list at height 399: .*/))[0]);
        await sleep(300);
        cur = next;
        const m = await until(/heights 400\.\.400 .*applied in (\d+) ms.*/);
        r.ms.push(Number(m[1]));
        process.stdout.write(`${rows} rich-list rows, ${mode}, run ${run + 1}: batch ${m[1]} ms, load ${loadavg()[0].toFixed(2)}\n`);
        if (argv.includes('--verbose')) process.stdout.write(`  ${m[0]}\n`);
        follow.kill('SIGTERM');
        await new Promise((done) => follow.once('exit', done));
      }
    }
    await src.close();
    prev.close();
    next.close();
  }
  const base = new Map<string, number>();
  for (const r of results) {
    const med = median(r.ms);
    if (!base.has(r.mode)) base.set(r.mode, med);
    process.stdout.write(`${String(r.rows).padStart(8)} rows, ${r.mode.padEnd(11)}: median ${med} ms over ${r.ms.length} runs (${r.ms.join(', ')}), `
      + `${(med / (base.get(r.mode) as number)).toFixed(2)}x the smallest\n`);
    if (r.refresh.length) process.stdout.write(`    first refresh: ${r.refresh[0].replace(/^.*rich list at height 399: /, '')}\n`);
  }
}

main().catch((e: Error) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
