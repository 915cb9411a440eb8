/**
 * A hundred thousand open wallets on one replica (issue #36, bench/README.md "A hundred thousand
 * wallets"). The chain: a generated one (`generate --vm wasm --preset scale --txs 1000000`), served
 * whole by a source `serve`; the replica, crawled from it up to a lower height (`--replica`),
 * `follow`s it through a proxy in this process whose `/status` height advances one block every
 * `--block-ms` — a chain growing a block a second. The wallets: `--wallets` accounts with txs, each
 * polling the Initia wallet's activity URL (`txs/by_account/{addr}?pagination.reverse=true&
 * pagination.limit=10`, gzip accepted, If-None-Match with the ETag it holds, keeping the ETag a
 * 200 brings), sent by wrk (bench/wrk/wallets.lua) at a fixed offered rate (`--rate`, polls a
 * second over the whole population; latency counted from when each poll was due).
 *
 * Scenarios (`--scenarios`, comma-separated):
 * - `goal`: `serve --workers 2` with the default options (`--log-level warn`), following the
 *   chain, at `--rate`; all on this machine's cores, wrk included.
 * - `floor`: the goal's load on bench/floor.ts (bare node:http, one process, 304s from a Map).
 * - `frozen`: the same without follow (no new block).
 * - `reconnect`: `goal` with every poll on a new connection (Connection: close).
 * - `fetch`: `goal` with fetch()'s `Cache-Control: no-cache` beside If-None-Match.
 * - `xff`: `goal` behind one proxy address, each wallet named by X-Forwarded-For
 *   (`--client-ip-header x-forwarded-for`).
 * - `log`: `goal` with `--log-level info` (an access line per request, to a file).
 * - `cpu304`, `cpu200`: the cost of one answer from memory against the floor, in the same run:
 *   `serve --workers 1` pinned to one core (taskset), wrk to the other, frozen replica, paced at
 *   `--cpu-rate`; then bench/floor.ts (bare node:http answering from a Map) the same way.
 *   cpu304: every poll a revalidation answered 304 from a validator; cpu200: `--cpu200-wallets`
 *   wallets whose bodies all fit (`--cache-bytes 1g`), polled without If-None-Match, against the
 *   floor sending the same bytes.
 *
 * Each scenario runs `--runs` times (medians reported; runs of ours and the floor interleaved).
 * Reported: polls, their statuses (304 share, 503s), answered from a body / a validator (the
 * server's metrics), serve CPU µs per poll (utime + stime of every serve process over the
 * measured window), polls/s per core, latency p50 / p99 / max, blocks followed, load average.
 *
 *   node build/bench/wallets.js --chain FULL.sqlite --replica REPLICA.sqlite --work DIR
 *     [--wallets 100000] [--rate 20000] [--seconds 60] [--runs 3] [--block-ms 1000]
 *     [--scenarios goal,frozen,reconnect,fetch,xff,log,cpu304,cpu200] [--cpu-rate 15000]
 *     [--cpu200-wallets 20000] [--threads 2] [--cli DIR (another build's checkout)]
 */
import { ChildProcess, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { cpuSeconds, freePort, json, metrics, ROOT, walletPaths, seed, startListening, stop, type Wrk, wrk } from './wallet-kit';

interface Options {
  chain: string; replica: string; work: string; wallets: number; rate: number; seconds: number; runs: number; blockMs: number;
  scenarios: string[]; cpuRate: number; cpu200Wallets: number; threads: number; cli: string;
}

function opt(argv: string[], name: string, dflt: string): string {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : dflt;
}

/** The source as a chain growing one block per tick: /status says `allowed`, all else passes through. */
function growingProxy(source: string, start: number): { server: Server; url: Promise<string>; advance(): void; height(): number } {
  let allowed = start;
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  const server = createServer((req, res) => {
    const target = new URL(req.url as string, source);
    if (target.pathname === '/status') {
      void json<Record<string, unknown>>(target.href).then((s) => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ ...s, height: Math.min(Number(s.height), allowed) }));
      }, () => { res.statusCode = 502; res.end(); });
      return;
    }
    const up = request(target, { agent, headers: { 'accept-encoding': req.headers['accept-encoding'] ?? 'identity' } }, (r: IncomingMessage) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => { res.statusCode = 502; res.end(); });
    up.end();
  });
  const url = new Promise<string>((done) => server.listen(0, '127.0.0.1', () => done(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
  return { server, url, advance: () => { allowed++; }, height: () => allowed };
}

interface Row {
  scenario: string; server: string; run: number; load: number; polls: number; pollsPerS: number; share304: number; s503: number; other: number;
  bodyHits: number; validatorHits: number; cpuUsPerPoll: number; pollsPerCore: number; p50: number; p99: number; max: number; blocks: number;
  /** the load generator's and the follower's CPU over the run, in cores */
  wrkCores: number; followCores: number;
}

const median = (a: number[]): number => { const s = [...a].sort((x, y) => x - y); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };

async function main(argv: string[]): Promise<void> {
  const o: Options = {
    chain: resolve(opt(argv, 'chain', '')), replica: resolve(opt(argv, 'replica', '')), work: resolve(opt(argv, 'work', '/tmp/wallets-bench')),
    wallets: Number(opt(argv, 'wallets', '100000')), rate: Number(opt(argv, 'rate', '20000')), seconds: Number(opt(argv, 'seconds', '60')),
    runs: Number(opt(argv, 'runs', '3')), blockMs: Number(opt(argv, 'block-ms', '1000')),
    scenarios: opt(argv, 'scenarios', 'goal,frozen,reconnect,fetch,xff,log,cpu304,cpu200').split(','),
    cpuRate: Number(opt(argv, 'cpu-rate', '15000')), cpu200Wallets: Number(opt(argv, 'cpu200-wallets', '20000')),
    threads: Number(opt(argv, 'threads', '2')), cli: resolve(opt(argv, 'cli', ROOT)),
  };
  mkdirSync(o.work, { recursive: true });
  const bin = join(o.cli, 'bin', 'indexer-api');
  const { paths, height: start, accounts } = walletPaths(o.replica, o.wallets);
  process.stdout.write(`replica at height ${start}, ${accounts} accounts with txs, ${paths.length} wallets, ${o.rate} polls/s offered, ${o.seconds} s a run, ${o.runs} runs; load ${loadavg()[0].toFixed(2)}\n`);
  const src = await startListening([bin, 'serve', '--db', o.chain, '--port', '0', '--workers', '1', '--log-level', 'warn', '--no-explorer']);
  const rows: Row[] = [];
  try {
    // the ETags the wallets hold: the replica's answers (data-derived, the same on every replica at this height)
    const tsv = join(o.work, `wallets-${paths.length}.tsv`);
    if (!existsSync(tsv)) {
      const frozen = await startListening([bin, 'serve', '--db', o.replica, '--port', '0', '--workers', '2', '--log-level', 'warn', '--no-verify']);
      try { await seed(frozen.url, paths, tsv); } finally { await stop(frozen.proc); }
    }
    for (let run = 1; run <= o.runs; run++) {
      for (const scenario of o.scenarios) {
        if (scenario === 'cpu304' || scenario === 'cpu200') {
          rows.push(...await cpuScenario(scenario, run, bin, o, tsv, paths));
        } else if (scenario === 'floor') {
          rows.push(await floorScenario(run, o, tsv));
        } else {
          rows.push(await liveScenario(scenario, run, bin, o, tsv, src.url, start));
        }
        const r = rows[rows.length - 1];
        process.stdout.write(`${JSON.stringify(r)}\n`);
      }
    }
  } finally {
    await stop(src.proc);
  }
  printTable(rows, o);
}

/** A serve of the replica (a fresh copy at `start`), following the growing chain unless frozen, under wrk at the offered rate. */
async function liveScenario(scenario: string, run: number, bin: string, o: Options, tsv: string, source: string, start: number): Promise<Row> {
  const file = join(o.work, 'replica.sqlite');
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}.writer.lock`]) rmSync(f, { force: true });
  copyFileSync(o.replica, file);
  const live = scenario !== 'frozen';
  const proxy = growingProxy(source, start);
  const purl = await proxy.url;
  let follow: ChildProcess | undefined;
  let tick: NodeJS.Timeout | undefined;
  if (live) {
    follow = spawn(process.execPath, [bin, 'follow', '--db', file, '--from-api', purl, '--interval', '200ms'], { stdio: ['ignore', 'ignore', openSync(join(o.work, `follow-${scenario}.log`), 'w')] });
    await new Promise((r) => setTimeout(r, 3000));
  }
  const extra = scenario === 'xff' ? ['--client-ip-header', 'x-forwarded-for'] : [];
  const level = scenario === 'log' ? 'info' : 'warn';
  const opsPort = await freePort();
  const serve = await startListening([bin, 'serve', '--db', file, '--port', '0', '--workers', '2', '--log-level', level, '--log-format', 'json',
    '--ops-port', String(opsPort), ...extra], { out: join(o.work, `serve-${scenario}.log`) });
  try {
    const ops = `http://127.0.0.1:${opsPort}`;
    const mode = scenario === 'reconnect' ? 'reconnect' : scenario === 'xff' ? 'xff' : scenario === 'fetch' ? 'fetch' : '';
    // warm-up: every wallet's first revalidation in each worker (computed by the app, its validator
    // kept there), at any rate — a wallet's polls reach whichever worker its connection is on
    const wallets = readFileSync(tsv, 'utf8').split('\n').filter(Boolean).length;
    for (let chunk = 0; chunk < 12; chunk++) {
      await wrk(serve.url, tsv, { rate: 0, seconds: 20, threads: o.threads, mode });
      const held = (await metrics(ops)).get('indexer_api_response_cache_validators') ?? 0;
      if (held >= 0.97 * 2 * wallets) break;
    }
    if (live) tick = setInterval(() => proxy.advance(), o.blockMs);
    await new Promise((r) => setTimeout(r, 2000));
    const m0 = await metrics(ops);
    const h0 = (await json<{ height: number }>(`${serve.url}/status`)).height;
    const c0 = cpuSeconds(serve.proc.pid as number);
    const fc0 = follow ? cpuSeconds(follow.pid as number, false) : 0;
    const load = loadavg()[0];
    const w = await wrk(serve.url, tsv, { rate: o.rate, seconds: o.seconds, threads: o.threads, mode });
    const c1 = cpuSeconds(serve.proc.pid as number);
    const fc1 = follow ? cpuSeconds(follow.pid as number, false) : 0;
    const m1 = await metrics(ops);
    const h1 = (await json<{ height: number }>(`${serve.url}/status`)).height;
    return rowOf(scenario, 'ours', run, load, w, c1 - c0, m0, m1, h1 - h0, fc1 - fc0);
  } finally {
    if (tick) clearInterval(tick);
    await stop(serve.proc);
    await stop(follow);
    proxy.server.close();
  }
}


/** The goal's load (every wallet, `--rate`, unpinned) on the floor server: what this machine, wrk included, gives a bare node:http. */
async function floorScenario(run: number, o: Options, tsv: string): Promise<Row> {
  const floor = await startListening([join(ROOT, 'build', 'bench', 'floor.js'), '--paths', tsv, '--port', '0']);
  try {
    await wrk(floor.url, tsv, { rate: 0, seconds: 3, threads: o.threads, mode: '' });
    const c0 = cpuSeconds(floor.proc.pid as number);
    const load = loadavg()[0];
    const w = await wrk(floor.url, tsv, { rate: o.rate, seconds: o.seconds, threads: o.threads, mode: '' });
    return rowOf('goal', 'floor', run, load, w, cpuSeconds(floor.proc.pid as number) - c0, new Map(), new Map(), 0);
  } finally {
    await stop(floor.proc);
  }
}

/** One answer from memory against the floor: ours pinned to CPU 1, wrk to CPU 0, then the floor the same way. */
async function cpuScenario(scenario: string, run: number, bin: string, o: Options, tsv: string, paths: string[]): Promise<Row[]> {
  const two = scenario === 'cpu200';
  const n = two ? Math.min(o.cpu200Wallets, paths.length) : paths.length;
  const file = join(o.work, `${scenario}.tsv`);
  writeFileSync(file, readFileSync(tsv, 'utf8').split('\n').slice(0, n).join('\n') + '\n');
  const mode = two ? 'nocond' : '';
  const out: Row[] = [];
  const serve = await startListening([bin, 'serve', '--db', o.replica, '--port', '0', '--workers', '1', '--log-level', 'warn', '--no-verify',
    ...(two ? ['--cache-bytes', '1g', '--cache-entries', String(2 * n)] : [])], { cpus: '1' });
  try {
    // warm-up: validators (and, plain GETs, bodies: second sight) for every wallet
    for (let i = 0; i < 3; i++) await wrk(serve.url, file, { rate: 0, seconds: Math.ceil(n / 2500) + 2, threads: 1, mode, cpus: '0' });
    const m0 = await metrics(serve.url);
    const c0 = cpuSeconds(serve.proc.pid as number);
    const load = loadavg()[0];
    const w = await wrk(serve.url, file, { rate: o.cpuRate, seconds: Math.min(o.seconds, 30), threads: 1, mode, cpus: '0' });
    const c1 = cpuSeconds(serve.proc.pid as number);
    const m1 = await metrics(serve.url);
    out.push(rowOf(scenario, 'ours', run, load, w, c1 - c0, m0, m1, 0));
    const floor = await startListening([join(ROOT, 'build', 'bench', 'floor.js'), '--paths', file, '--port', '0', ...(two ? ['--bodies-from', serve.url] : [])], { cpus: '1' });
    try {
      await wrk(floor.url, file, { rate: 0, seconds: 3, threads: 1, mode, cpus: '0' });
      const f0 = cpuSeconds(floor.proc.pid as number);
      const fload = loadavg()[0];
      const fw = await wrk(floor.url, file, { rate: o.cpuRate, seconds: Math.min(o.seconds, 30), threads: 1, mode, cpus: '0' });
      const f1 = cpuSeconds(floor.proc.pid as number);
      out.push(rowOf(scenario, 'floor', run, fload, fw, f1 - f0, new Map(), new Map(), 0));
    } finally {
      await stop(floor.proc);
    }
  } finally {
    await stop(serve.proc);
  }
  return out;
}

/** Answers of the wallet route by status, from the server's counters (the floor answers only 304s; wrk counts what is not 2xx/3xx). */
function statuses(m0: Map<string, number>, m1: Map<string, number>): Map<string, number> | undefined {
  if (m1.size === 0) return undefined;
  const out = new Map<string, number>();
  for (const [k, v] of m1) {
    const m = /^indexer_api_http_requests_total\{.*route="\/indexer\/tx\/v1\/txs\/by_account\/:account",status="(\d+)"/.exec(k);
    if (m) out.set(m[1], (out.get(m[1]) ?? 0) + v - (m0.get(k) ?? 0));
  }
  let shed = 0;
  for (const [k, v] of m1) if (k.startsWith('indexer_api_http_shed_total')) shed += v - (m0.get(k) ?? 0);
  out.set('503', (out.get('503') ?? 0) + shed);
  return out;
}

function rowOf(scenario: string, server: string, run: number, load: number, w: Wrk, cpu: number, m0: Map<string, number>, m1: Map<string, number>, blocks: number, followCpu = 0): Row {
  const d = (k: string): number => (m1.get(k) ?? 0) - (m0.get(k) ?? 0);
  const polls = w.requests;
  const st = statuses(m0, m1) ?? new Map([['304', polls - w.errors.status], ['503', 0]]);
  return {
    scenario, server, run, load,
    polls, pollsPerS: polls / w.seconds,
    share304: (st.get('304') ?? 0) / Math.max(1, polls),
    s503: st.get('503') ?? 0,
    other: w.errors.status + w.errors.connect + w.errors.read + w.errors.write + w.errors.timeout - (st.get('503') ?? 0),
    bodyHits: d('indexer_api_response_cache_hits_total') / Math.max(1, polls),
    validatorHits: d('indexer_api_response_cache_validator_hits_total') / Math.max(1, polls),
    cpuUsPerPoll: (cpu * 1e6) / Math.max(1, polls),
    pollsPerCore: polls / Math.max(1e-9, cpu),
    p50: w.p50, p99: w.p99, max: w.max, blocks,
    wrkCores: w.cpu / w.seconds, followCores: followCpu / w.seconds,
  };
}

function printTable(rows: Row[], o: Options): void {
  const groups = new Map<string, Row[]>();
  for (const r of rows) {
    const k = `${r.scenario}\u0000${r.server}`;
    groups.set(k, [...(groups.get(k) ?? []), r]);
  }
  const pct = (x: number): string => `${(100 * x).toFixed(1)} %`;
  process.stdout.write(`\nmedians of ${o.runs} runs (load average at the start of each run: min–max)\n\n`);
  process.stdout.write('| scenario | server | polls/s | 304 | 503 | from a body | from a validator | serve CPU µs / poll | polls/s per core | p50 ms | p99 ms | max ms | blocks | wrk / follow cores | load |\n');
  process.stdout.write('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n');
  for (const [, g] of groups) {
    const m = (f: (r: Row) => number): number => median(g.map(f));
    const loads = g.map((r) => r.load);
    process.stdout.write(`| ${g[0].scenario} | ${g[0].server} | ${m((r) => r.pollsPerS).toFixed(0)} | ${pct(m((r) => r.share304))} | ${m((r) => r.s503)} | `
      + `${pct(m((r) => r.bodyHits))} | ${pct(m((r) => r.validatorHits))} | ${m((r) => r.cpuUsPerPoll).toFixed(1)} | ${m((r) => r.pollsPerCore).toFixed(0)} | `
      + `${m((r) => r.p50).toFixed(2)} | ${m((r) => r.p99).toFixed(2)} | ${m((r) => r.max).toFixed(1)} | ${m((r) => r.blocks)} | ${m((r) => r.wrkCores).toFixed(2)} / ${m((r) => r.followCores).toFixed(2)} | `
      + `${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)} |\n`);
  }
  // ours ÷ floor per run, then the median of the ratios
  for (const s of ['cpu304', 'cpu200']) {
    const ratios: number[] = [];
    for (let run = 1; run <= o.runs; run++) {
      const a = rows.find((r) => r.scenario === s && r.server === 'ours' && r.run === run);
      const b = rows.find((r) => r.scenario === s && r.server === 'floor' && r.run === run);
      if (a && b) ratios.push(a.cpuUsPerPoll / b.cpuUsPerPoll);
    }
    if (ratios.length) process.stdout.write(`\n${s}: ours ÷ floor, CPU per answer: median ${median(ratios).toFixed(2)}× (runs: ${ratios.map((r) => r.toFixed(2)).join(', ')})\n`);
  }
}

void main(process.argv.slice(2)).catch((e: unknown) => { process.stderr.write(`${(e as Error).stack}\n`); process.exit(1); });
