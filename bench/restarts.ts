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
 *     [--events restart,copy,pull,cycles] [--pin] [--threads 2] [--cli DIR (another build's checkout: the release before)]
 *     [--family activity|nft (the wallets' activity pages, or their NFT pages: tokens/by_account)]
 *
 * With `pull`, --chain is the version served first and --later the one published during the run.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, copyFileSync, createReadStream, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { cpuSeconds, freePort, metrics, ROOT, seed, startListening, stop, walletPaths, wrk } from './wallet-kit';

/** The commit a checkout's build records (build/build-info.json). */
function buildCommit(dir: string): string {
  try {
    return String((JSON.parse(readFileSync(join(dir, 'build', 'build-info.json'), 'utf8')) as { commit?: string }).commit ?? 'unknown');
  } catch {
    return 'unknown';
  }
}

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
  badAfterReady: number; socketErrors: number; versionHits: number; clientP99: number; wrkBad: number;
}

/** What the sampler keeps of the server's counters (per process: a restart starts them at 0). */
interface Snapshot { pid: number; polls: number; bad: number; buckets: [number, number][]; cpu?: number }

const WALLET_ROUTE = 'route="/indexer/tx/v1/txs/by_account/:account"';

function snapshotOf(m: Map<string, number>, pid: number): Snapshot {
  let polls = 0;
  let bad = 0;
  const buckets: [number, number][] = [];
  for (const [k, v] of m) {
    if (k.startsWith('indexer_api_http_requests_total{')) {
      const status = Number(/status="(\d+)"/.exec(k)?.[1]);
      if (k.includes(WALLET_ROUTE) && status < 400) polls += v;
      if (status >= 500) bad += v;
    } else if (k.startsWith('indexer_api_http_request_duration_seconds_bucket{') && k.includes(WALLET_ROUTE)) {
      const le = /le="([^"]+)"/.exec(k)?.[1];
      buckets.push([le === '+Inf' ? Infinity : Number(le), v]);
    }
  }
  buckets.sort((a, b) => a[0] - b[0]);
  return { pid, polls, bad, buckets };
}

/** The second's polls, 5xx, and p99 (ms, the server's: the upper bound of the bucket holding it) between two samples. */
function diff(now: Snapshot, before: Snapshot | undefined): { polls: number; bad: number; p99: number } {
  const polls = now.polls - (before?.polls ?? 0);
  const bad = now.bad - (before?.bad ?? 0);
  const counts = now.buckets.map(([le, v], i) => [le, v - (before?.buckets[i]?.[1] ?? 0)] as [number, number]);
  const n = counts.length ? counts[counts.length - 1][1] : 0;
  const hit = counts.find(([, c]) => c >= 0.99 * n);
  return { polls, bad, p99: n === 0 || hit === undefined ? NaN : hit[0] * 1000 };
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
    args.push('--pull', `${pub.url}/manifest.json`, '--pull-interval', '2s');
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
    // one wrk for the whole run (its schedule never restarts); a sampler reads the server's own
    // counters and its CPU every second (the new process's counters start again from 0)
    const total = o.before + o.after;
    const started = Date.now();
    const load2 = wrk(url, tsv, { rate: o.rate, seconds: total, threads: o.threads, mode: '' });
    let prev: Snapshot | undefined;
    let sampling = true;
    const sampler = (async () => {
      let next = started + 1000;
      let fired: Promise<void> | undefined;
      while (sampling && Date.now() < started + total * 1000) {
        await sleep(Math.max(0, next - Date.now()));
        next += 1000;
        if (fired === undefined && Date.now() >= started + o.before * 1000) fired = fire();
        const cpu = meter.sample();
        const m = await metrics(url).catch(() => undefined);
        const snap = m === undefined ? undefined : snapshotOf(m, serve?.pid ?? 0);
        const at = Date.now();
        if (snap !== undefined) {
          const base = prev !== undefined && prev.pid === snap.pid ? prev : undefined;
          const d = diff(snap, base);
          seconds.push({ t: (at - (eventAt || started + o.before * 1000)) / 1000, polls: d.polls, bad: d.bad, socket: 0, p99: d.p99, cpu: cpu - (prev?.cpu ?? cpu) });
          prev = { ...snap, cpu };
        } else {
          seconds.push({ t: (at - (eventAt || started + o.before * 1000)) / 1000, polls: 0, bad: 0, socket: 0, p99: NaN, cpu: cpu - (prev?.cpu ?? cpu) });
          if (prev) prev = { ...prev, cpu };
        }
      }
      await fired;
    })();
    const w = await load2.catch((e: unknown) => { process.stderr.write(`wrk: ${(e as Error).message}\n`); return undefined; });
    sampling = false;
    await sampler;
    const socketErrors = w ? w.errors.connect + w.errors.read + w.errors.write + w.errors.timeout : NaN;
    const m1 = await metrics(url).catch(() => new Map<string, number>());
    // a row at t covers the second before it: the steady state is the rows before the event (but the
    // first, wrk's ramp), the first cycle the rows that start at /ready (or the swap) or later, for
    // wallets ÷ rate seconds (the new process's start-up CPU falls in the row before)
    const before = seconds.filter((s) => s.t <= 0).slice(1);
    const cycle = o.wallets / o.rate;
    const first = seconds.filter((s) => s.t - 1 >= readyT - 0.05 && s.t - 1 < readyT + cycle);
    const perPoll = (rows: Second[]): number => (rows.reduce((a, s) => a + s.cpu, 0) / Math.max(1, rows.reduce((a, s) => a + s.polls, 0))) * 1e6;
    const afterReady = seconds.filter((s) => s.t >= readyT);
    return {
      event, workers, build: o.cli === ROOT ? 'this' : o.cli, load, readyMs, swapMs, seconds,
      steadyUs: perPoll(before), firstCycleUs: perPoll(first), floorUs: NaN, firstCyclePolls: first.reduce((a, s) => a + s.polls, 0),
      badAfterReady: afterReady.reduce((a, s) => a + s.bad, 0), socketErrors, clientP99: w?.p99 ?? NaN, wrkBad: w?.errors.status ?? NaN,
      versionHits: m1.get('indexer_api_response_cache_version_hits_total') ?? 0,
    };
  } finally {
    meter.close();
    await stop(serve);
    closeSync(log);
    pub?.server.close();
  }
}

/**
 * `cycles`: the issue's own measure — a fresh process (a restart: nothing in memory), then one
 * poll of every wallet with the ETag it holds, three times over (wallets ÷ rate seconds each, at
 * the offered rate): CPU per poll of cycle 1 (every poll decided from the file's versions) against
 * cycles 2 and 3 (the steady state: validators), and the 304s decided from versions in each.
 * `--pin`: serve on CPU 1, wrk on CPU 0 (as bench/wallets.ts cpu304).
 */
async function cyclesScenario(workers: number, o: Options, bin: string, tsvOf: (url: string) => Promise<string>, pin: boolean): Promise<string> {
  const db = join(o.work, 'db.sqlite');
  if (!existsSync(db)) copyFileSync(o.chain, db);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const args = [bin, 'serve', '--db', db, '--port', String(port), '--workers', String(workers), '--log-level', 'warn', '--no-explorer'];
  const argv = pin ? ['taskset', '-c', '1', process.execPath, ...args] : [process.execPath, ...args];
  // the wallets' ETags, seeded by another process (seeding this one would fill its key table: no restart)
  if (!existsSync(await tsvOf(''))) {
    const seeder = spawn(process.execPath, args, { stdio: 'ignore' });
    try {
      await readyAt(url, Date.now());
      await tsvOf(url);
    } finally {
      await stop(seeder);
    }
  }
  const serve = spawn(argv[0], argv.slice(1), { stdio: 'ignore' });
  try {
    const readyMs = await readyAt(url, Date.now());
    const tsv = await tsvOf(url);
    const cycle = Math.ceil(o.wallets / o.rate);
    const out: string[] = [];
    for (let pass = 1; pass <= 3; pass++) {
      const m0 = await metrics(url);
      const c0 = cpuSeconds(serve.pid as number);
      const w = await wrk(url, tsv, { rate: o.rate, seconds: cycle, threads: pin ? 1 : o.threads, mode: '', ...(pin ? { cpus: '0' } : {}) });
      const c1 = cpuSeconds(serve.pid as number);
      const m1 = await metrics(url);
      const d = (k: string): number => (m1.get(k) ?? 0) - (m0.get(k) ?? 0);
      out.push(`| ${pass} | ${w.requests} | ${d('indexer_api_response_cache_version_hits_total')} | ${d('indexer_api_response_cache_validator_hits_total')} | ${d('indexer_api_response_cache_misses_total')} | ${(((c1 - c0) / Math.max(1, w.requests)) * 1e6).toFixed(1)} | ${w.p99.toFixed(1)} |`);
    }
    return [`\n### cycles, --workers ${workers}${pin ? ', pinned' : ''} (load ${loadavg()[0].toFixed(2)}; /ready ${readyMs} ms after the start)`, '',
      '| cycle | polls | decided from versions | 304s without the page | computed by the app | serve CPU µs a poll | p99 ms (wrk) |', '|---:|---:|---:|---:|---:|---:|---:|', ...out].join('\n');
  } finally {
    await stop(serve);
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
  const family = opt(argv, 'family', 'activity') === 'nft' ? 'nft' : 'activity';
  const { paths } = walletPaths(o.chain, o.wallets, family);
  o.wallets = paths.length;
  process.stdout.write(`${paths.length} wallets, ${o.rate} polls/s offered, build ${o.cli}; load ${loadavg()[0].toFixed(2)}\n`);
  // the ETags the wallets hold, as this build answers them (the release before: ETags of the bytes)
  // ('' asks for the file's name only: it may not exist yet)
  const tsvOf = async (url: string): Promise<string> => {
    // the build's commit in the name: a versioned ETag names the build (src/http/version-etag.ts)
    const tsv = join(o.work, `wallets-${family}-${paths.length}-${o.cli === ROOT ? 'this' : 'other'}-${buildCommit(o.cli)}.tsv`);
    if (url !== '' && !existsSync(tsv)) await seed(url, paths, tsv);
    return tsv;
  };
  const results: Result[] = [];
  for (const workers of o.workers) {
    for (const event of o.events) {
      if (event === 'cycles') {
        process.stdout.write(`${await cyclesScenario(workers, o, bin, tsvOf, argv.includes('--pin'))}\n`);
        process.stdout.write(`floor CPU µs a 304: ${(await floorUs(o, await tsvOf(''))).toFixed(1)}\n`);
        continue;
      }
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
      + `5xx after ready (server): ${r.badAfterReady}; wrk: not 2xx/3xx ${r.wrkBad}, socket errors ${r.socketErrors}, p99 ${r.clientP99} ms; version hits ${r.versionHits}`,
    '',
    '| s from the event | wallet polls answered (200/304) | 5xx | server p99 ms (≤ bucket) | serve CPU s | CPU µs a poll |',
    '|---:|---:|---:|---:|---:|---:|',
    ...r.seconds.map((s) => `| ${s.t.toFixed(1)} | ${s.polls} | ${s.bad} | ${Number.isFinite(s.p99) ? s.p99.toFixed(1) : '–'} | ${s.cpu.toFixed(2)} | ${s.polls > 0 ? ((s.cpu / s.polls) * 1e6).toFixed(0) : '–'} |`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

void main(process.argv.slice(2)).catch((e: unknown) => { process.stderr.write(`${(e as Error).stack}\n`); process.exit(1); });
