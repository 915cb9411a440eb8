/**
 * Restarts and new files under load (issue #42, bench/README.md "Restarts under load"): a
 * hundred thousand wallets poll a replica at a steady offered rate (open loop: bench/wrk/wallets.lua
 * keeps its schedule whatever the server does), and in the middle of it something an operator
 * does happens:
 *
 * - `restart`: SIGTERM to serve, and the same command started again on the same port (a deploy);
 * - `copy`: a copy of the same file renamed over --db (a hot swap to another inode);
 * - `pull`: serve --pull, and a later version of the chain published (`--later`: a file built
 *   independently, e.g. crawled to another height) — the replica downloads, checks and swaps it.
 *
 * wrk runs in windows of one second, back to back, from `--before` seconds before the event to
 * `--after` seconds after it, so each second has its own row: polls answered, answers that were
 * not 2xx/3xx (503s and other 5xx), socket errors (the seconds nothing listens), p99, and serve's
 * CPU (every process of it, sampled every 100 ms, carried across the restart). Reported besides:
 * the time from the new process's start to /ready 200 (restart), or from the event to the swap;
 * the CPU per poll over the first cycle of the population after it (wallets ÷ rate seconds from
 * /ready or the swap) against the steady state before the event and against bench/floor.ts (a
 * bare node:http server answering the same 304s from a Map) in the same run.
 *
 *   node build/bench/restarts.js --chain wasm1m.sqlite --work DIR [--later LATER.sqlite]
 *     [--wallets 100000] [--rate 20000] [--before 10] [--after 60] [--workers 1,2]
 *     [--events restart,copy,pull] [--threads 2] [--cli DIR (another build's checkout: the release before)]
 *
 * With `pull`, --chain is the version served first and --later the one published during the run.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, copyFileSync, createReadStream, existsSync, mkdirSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { toBech32 } from '../src/lib/address';
import { cpuSeconds, freePort, metrics, ROOT, seed, startListening, stop, wrk } from './wallet-kit';

function opt(argv: string[], name: string, dflt: string): string {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : dflt;
}

interface Options {
  chain: string; later: string; work: string; wallets: number; rate: number; before: number; after: number;
  workers: number[]; events: string[]; threads: number; cli: string;
}

interface Second { t: number; polls: number; bad: number; socket: number; p99: number; cpu: number }

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** serve's CPU over its processes, carried across a restart (the old processes' last sample kept). */
class CpuMeter {
  private carried = 0;
  private last = 0;
  private pid = 0;
  private readonly timer: NodeJS.Timeout;
  constructor(private readonly current: () => number | undefined) {
    this.timer = setInterval(() => this.sample(), 100);
  }
  sample(): number {
    const pid = this.current();
    if (pid !== undefined && pid !== this.pid) { this.carried += this.last; this.last = 0; this.pid = pid; }
    if (pid !== undefined) { const t = cpuSeconds(pid); if (t > 0) this.last = t; }
    return this.carried + this.last;
  }
  close(): void { clearInterval(this.timer); }
}

async function readyAt(url: string, since: number, timeoutMs = 600_000): Promise<number> {
  for (;;) {
    try {
      const r = await fetch(`${url}/ready`);
      await r.arrayBuffer();
      if (r.status === 200) return Date.now() - since;
    } catch { /* not listening yet */ }
    if (Date.now() - since > timeoutMs) throw new Error(`${url}/ready not 200 after ${timeoutMs} ms`);
    await sleep(50);
  }
}

/** A static file server over `dir` (the origin `publish` writes and `serve --pull` reads). */
function origin(dir: string): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const file = join(dir, decodeURIComponent(new URL(req.url as string, 'http://x').pathname));
    if (!file.startsWith(dir) || !existsSync(file)) { res.statusCode = 404; res.end(); return; }
    res.setHeader('content-length', statSync(file).size);
    createReadStream(file).pipe(res);
  });
  return new Promise((done) => server.listen(0, '127.0.0.1', () => done({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })));
}

function run(bin: string, args: string[]): Promise<void> {
  return new Promise((done, fail) => {
    const p = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (b: Buffer) => { err += b.toString(); });
    p.once('exit', (c) => (c === 0 ? done() : fail(new Error(`${args.join(' ')} exited ${c}: ${err}`))));
  });
}

interface Result {
  event: string; workers: number; build: string; load: number; readyMs: number; swapMs: number;
  seconds: Second[]; steadyUs: number; firstCycleUs: number; floorUs: number; firstCyclePolls: number;
  badAfterReady: number; socketErrors: number; versionHits: number;
}

async function scenario(event: string, workers: number, o: Options, bin: string, tsvOf: (url: string) => Promise<string>): Promise<Result> {
  const db = join(o.work, 'db.sqlite');
  for (const f of [db, `${db}-wal`, `${db}-shm`, `${db}.manifest.json`]) rmSync(f, { force: true });
  copyFileSync(o.chain, db);
  const port = await freePort();
  let pub: { server: Server; url: string } | undefined;
  const pubDir = join(o.work, 'origin');
  const args = ['serve', '--db', db, '--port', String(port), '--workers', String(workers), '--log-level', 'warn', '--no-explorer'];
  if (event === 'pull') {
    rmSync(pubDir, { recursive: true, force: true });
    mkdirSync(pubDir, { recursive: true });
    await run(bin, ['publish', '--db', o.chain, '--to', pubDir, '--compress', 'none', '--quiet']);
    pub = await origin(pubDir);
    args.push('--pull', `${pub.url}/manifest.json`, '--pull-interval', '2000');
  }
  // stderr kept (its one-line reasons, the serving line) in the work directory
  const log = openSync(join(o.work, `serve-${event}-${workers}.log`), 'a');
  const start = (): ChildProcess => spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'ignore', log] });
  let serve: ChildProcess | undefined = start();
  const url = `http://127.0.0.1:${port}`;
  const meter = new CpuMeter(() => serve?.pid);
  try {
    await readyAt(url, Date.now());
    const tsv = await tsvOf(url);
    // a cycle of the population with the ETags it holds: every worker has seen every wallet (the steady state)
    await wrk(url, tsv, { rate: o.rate, seconds: Math.ceil(o.wallets / o.rate) * 2, threads: o.threads, mode: '' });
    const load = loadavg()[0];
    const seconds: Second[] = [];
    let eventAt = 0;
    let readyMs = NaN;
    let swapMs = NaN;
    let readyT = NaN;
    const m0 = await metrics(url);
    const swaps0 = m0.get('indexer_api_snapshot_swaps_total') ?? 0;
    const fire = async (): Promise<void> => {
      eventAt = Date.now();
      if (event === 'restart') {
        await stop(serve);
        const started = Date.now();
        serve = start();
        readyMs = await readyAt(url, started);
        readyT = (Date.now() - eventAt) / 1000;
      } else if (event === 'copy') {
        const tmp = `${db}.incoming`;
        copyFileSync(o.chain, tmp);
        eventAt = Date.now();
        renameSync(tmp, db);
      } else {
        await run(bin, ['publish', '--db', o.later, '--to', pubDir, '--compress', 'none', '--quiet']);
        eventAt = Date.now();
      }
      if (event !== 'restart') {
        for (;;) {
          const m = await metrics(url).catch(() => undefined);
          if (m !== undefined && (m.get('indexer_api_snapshot_swaps_total') ?? 0) > swaps0) break;
          if (Date.now() - eventAt > 600_000) throw new Error(`${event}: no swap in 600 s`);
          await sleep(50);
        }
        swapMs = Date.now() - eventAt;
        readyT = swapMs / 1000;
      }
    };
    let fired: Promise<void> | undefined;
    const total = o.before + o.after;
    for (let i = 0; i < total; i++) {
      if (i === o.before) fired = fire();
      const c0 = meter.sample();
      const t0 = Date.now();
      const w = await wrk(url, tsv, { rate: o.rate, seconds: 1, threads: o.threads, mode: '' }).catch(() => undefined);
      const c1 = meter.sample();
      const socket = w ? w.errors.connect + w.errors.read + w.errors.write + w.errors.timeout : 0;
      seconds.push({ t: eventAt ? (t0 - eventAt) / 1000 : i - o.before, polls: w ? w.requests - w.errors.status : 0, bad: w?.errors.status ?? 0, socket, p99: w?.p99 ?? NaN, cpu: c1 - c0 });
    }
    await fired;
    const m1 = await metrics(url).catch(() => new Map<string, number>());
    const before = seconds.filter((s) => s.t < 0);
    const cycle = o.wallets / o.rate;
    const first = seconds.filter((s) => s.t >= readyT && s.t < readyT + cycle);
    const perPoll = (rows: Second[]): number => (rows.reduce((a, s) => a + s.cpu, 0) / Math.max(1, rows.reduce((a, s) => a + s.polls, 0))) * 1e6;
    const afterReady = seconds.filter((s) => s.t >= readyT);
    return {
      event, workers, build: o.cli === ROOT ? 'this' : o.cli, load, readyMs, swapMs, seconds,
      steadyUs: perPoll(before), firstCycleUs: perPoll(first), floorUs: NaN, firstCyclePolls: first.reduce((a, s) => a + s.polls, 0),
      badAfterReady: afterReady.reduce((a, s) => a + s.bad, 0), socketErrors: seconds.reduce((a, s) => a + s.socket, 0),
      versionHits: m1.get('indexer_api_response_cache_version_hits_total') ?? 0,
    };
  } finally {
    meter.close();
    await stop(serve);
    closeSync(log);
    pub?.server.close();
  }
}

/** CPU per 304 of bench/floor.ts (bare node:http answering the same ETags from a Map), at the same rate. */
async function floorUs(o: Options, tsv: string): Promise<number> {
  const floor = await startListening([join(ROOT, 'build', 'bench', 'floor.js'), '--paths', tsv, '--port', '0']);
  try {
    await wrk(floor.url, tsv, { rate: o.rate, seconds: 3, threads: o.threads, mode: '' });
    const c0 = cpuSeconds(floor.proc.pid as number);
    const w = await wrk(floor.url, tsv, { rate: o.rate, seconds: 10, threads: o.threads, mode: '' });
    return ((cpuSeconds(floor.proc.pid as number) - c0) / Math.max(1, w.requests)) * 1e6;
  } finally {
    await stop(floor.proc);
  }
}

async function main(argv: string[]): Promise<void> {
  const o: Options = {
    chain: resolve(opt(argv, 'chain', '')), later: resolve(opt(argv, 'later', '')), work: resolve(opt(argv, 'work', '/tmp/restarts-bench')),
    wallets: Number(opt(argv, 'wallets', '100000')), rate: Number(opt(argv, 'rate', '20000')),
    before: Number(opt(argv, 'before', '10')), after: Number(opt(argv, 'after', '60')),
    workers: opt(argv, 'workers', '1,2').split(',').map(Number), events: opt(argv, 'events', 'restart,copy,pull').split(','),
    threads: Number(opt(argv, 'threads', '2')), cli: resolve(opt(argv, 'cli', ROOT)),
  };
  mkdirSync(o.work, { recursive: true });
  const bin = join(o.cli, 'bin', 'indexer-api');
  const db = new Database(o.chain, { readonly: true });
  const prefix = String(db.prepare("SELECT value FROM meta WHERE key = 'bech32_prefix'").pluck().get());
  const all = db.prepare('SELECT addr FROM accounts WHERE tx_count > 0 ORDER BY id').pluck().all() as Buffer[];
  db.close();
  const step = Math.max(1, all.length / o.wallets);
  const paths: string[] = [];
  for (let i = 0; paths.length < Math.min(o.wallets, all.length); i++) {
    paths.push(`/indexer/tx/v1/txs/by_account/${toBech32(all[Math.floor(i * step)], prefix)}?pagination.reverse=true&pagination.limit=10`);
  }
  o.wallets = paths.length;
  process.stdout.write(`${paths.length} wallets, ${o.rate} polls/s offered, build ${o.cli}; load ${loadavg()[0].toFixed(2)}\n`);
  // the ETags the wallets hold, as this build answers them (the release before: ETags of the bytes)
  const tsvOf = async (url: string): Promise<string> => {
    const tsv = join(o.work, `wallets-${paths.length}-${o.cli === ROOT ? 'this' : 'other'}.tsv`);
    if (!existsSync(tsv)) await seed(url, paths, tsv);
    return tsv;
  };
  const results: Result[] = [];
  for (const workers of o.workers) {
    for (const event of o.events) {
      const r = await scenario(event, workers, o, bin, tsvOf);
      r.floorUs = await floorUs(o, await tsvOf(''));
      results.push(r);
      process.stdout.write(`${JSON.stringify({ ...r, seconds: undefined })}\n`);
      print(r);
    }
  }
}

function print(r: Result): void {
  const lines = [
    `\n### ${r.event}, --workers ${r.workers}, build ${r.build} (load ${r.load.toFixed(2)} at the start)`,
    '',
    r.event === 'restart' ? `new process to /ready 200: ${r.readyMs} ms` : `event to swap: ${r.swapMs} ms`,
    `CPU µs per poll: steady ${r.steadyUs.toFixed(1)}, first cycle after ${r.event === 'restart' ? '/ready' : 'the swap'} ${r.firstCycleUs.toFixed(1)} `
      + `(${(r.firstCycleUs / r.steadyUs).toFixed(2)}× steady; ${r.firstCyclePolls} polls), floor ${r.floorUs.toFixed(1)}; `
      + `not 2xx/3xx after ready: ${r.badAfterReady}; socket errors in all: ${r.socketErrors}; version hits ${r.versionHits}`,
    '',
    '| s from the event | polls answered | not 2xx/3xx | socket errors | p99 ms | serve CPU s |',
    '|---:|---:|---:|---:|---:|---:|',
    ...r.seconds.map((s) => `| ${s.t.toFixed(1)} | ${s.polls} | ${s.bad} | ${s.socket} | ${Number.isFinite(s.p99) ? s.p99.toFixed(1) : '–'} | ${s.cpu.toFixed(2)} |`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

void main(process.argv.slice(2)).catch((e: unknown) => { process.stderr.write(`${(e as Error).stack}\n`); process.exit(1); });
