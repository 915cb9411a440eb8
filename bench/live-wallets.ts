/**
 * The wallet workload on a live chain (issue #30, bench/README.md "Live replica"): a replica that
 * `follow`s a chain making one block every --block-ms, polled by --wallets wallets, each asking
 * the Initia wallet's activity URL (`txs/by_account/{addr}?pagination.reverse=true&pagination.limit=10`)
 * every --period-s with browser-like revalidation (If-None-Match with the ETag it holds), plus
 * an explorer mix (the tx and block lists, a block and a tx by hash) at --explorer-rps.
 *
 * The chain: a generated one (`generate --preset scale --txs N`), served whole by a source
 * `serve`; the replica is crawled up to TOP − blocks-to-come, and `follow` reads the source
 * through a proxy in this process whose /status height advances one block every --block-ms —
 * a chain growing at that pace. The same load then runs on the frozen replica (follow stopped,
 * no new block: the ceiling), and, with --before DIR (a checkout of the release before with its
 * build/), on that release's `serve` following the same way.
 *
 * Reported per scenario: polls, the share of polls whose answer had not changed (the client saw
 * the same ETag as before), of those the share answered 304, the share of all requests answered
 * from the response cache (the server's hits_total: no row read), the server's CPU µs per
 * request (utime + stime of the serving process over the run), p50 / p99 latency.
 *
 *   node build/bench/live-wallets.js --work DIR [--txs 40000] [--wallets 2000] [--period-s 5]
 *     [--seconds 60] [--block-ms 1000] [--explorer-rps 20] [--before DIR] [--vm move]
 */
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent, createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { toBech32 } from '../src/lib/address';

const ROOT = resolve(__dirname, '..', '..');

function opt(argv: string[], name: string, dflt: string): string {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : dflt;
}

function cli(root: string, args: string[]): void {
  const r = spawnSync(process.execPath, [join(root, 'bin', 'indexer-api'), ...args], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`indexer-api ${args.join(' ')}: exit ${r.status}`);
}

interface Proc { proc: ChildProcess; url: string }

async function serve(root: string, db: string, extra: string[] = []): Promise<Proc> {
  const proc = spawn(process.execPath, [join(root, 'bin', 'indexer-api'), 'serve', '--db', db, '--port', '0', '--workers', '1', '--log-level', 'warn', ...extra],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((done, fail) => {
    let out = '';
    proc.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /listening (http:\/\/\S+)/.exec(out);
      if (m) done(m[1]);
    });
    proc.once('exit', (c) => fail(new Error(`serve exited ${c}`)));
  });
  proc.stdout!.resume();
  return { proc, url };
}

function stop(p: ChildProcess | undefined): Promise<void> {
  if (!p || p.exitCode !== null) return Promise.resolve();
  return new Promise((done) => { p.once('exit', () => done()); p.kill('SIGTERM'); });
}

async function json<T>(url: string): Promise<T> {
  return (await (await fetch(url)).json()) as T;
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

function cpuTicks(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]); // utime + stime, clock ticks
}

interface Result {
  scenario: string;
  requests: number;
  polls: number;
  unchangedPolls: number;
  unchanged304: number;
  hitShare: number;
  cpuUsPerRequest: number;
  p50: number;
  p99: number;
  blocks: number;
  errors: number;
}

async function metricValue(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

/** The load: wallets polling their account's activity, an explorer mix; measured over `seconds`. */
async function load(scenario: string, url: string, pid: number, accounts: string[], txHashes: string[], top: number, o: {
  wallets: number; periodS: number; seconds: number; explorerRps: number; tick?: () => void; blockMs: number;
}): Promise<Result> {
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const etags = new Map<number, string>();
  const lat: number[] = [];
  let polls = 0; let unchanged = 0; let unchanged304 = 0; let errors = 0; let requests = 0; let blocks = 0;
  const get = (path: string, headers: Record<string, string>): Promise<{ status: number; etag?: string }> => new Promise((done) => {
    const t = process.hrtime.bigint();
    const req = request(url + path, { agent, headers: { 'accept-encoding': 'gzip', ...headers } }, (res) => {
      res.resume();
      res.on('end', () => {
        lat.push(Number(process.hrtime.bigint() - t) / 1e6);
        requests++;
        done({ status: res.statusCode ?? 0, etag: res.headers.etag });
      });
    });
    req.on('error', () => { errors++; done({ status: 0 }); });
    req.end();
  });
  const poll = async (w: number): Promise<void> => {
    const held = etags.get(w);
    const r = await get(`/indexer/tx/v1/txs/by_account/${accounts[w % accounts.length]}?pagination.reverse=true&pagination.limit=10`, held ? { 'if-none-match': held } : {});
    if (r.status === 0) return;
    if (held !== undefined) {
      polls++;
      if (r.status === 304) { unchanged++; unchanged304++; } else if (r.etag === held) unchanged++;
    }
    if (r.etag) etags.set(w, r.etag);
  };
  // warm-up: every wallet's first poll (its ETag), spread over one period; not measured
  await runFor(o.periodS * 1000, o.wallets / o.periodS, (i) => poll(i % o.wallets));
  polls = 0; unchanged = 0; unchanged304 = 0; requests = 0; errors = 0; lat.length = 0;
  const hits0 = await metricValue(url, 'indexer_api_response_cache_hits_total');
  const cpu0 = cpuTicks(pid);
  const ticker = o.tick ? setInterval(() => { o.tick?.(); blocks++; }, o.blockMs) : undefined;
  let n = 0;
  const explorer = ['/indexer/tx/v1/txs?pagination.limit=10', '/indexer/block/v1/blocks?pagination.limit=10', '/status'];
  await Promise.all([
    runFor(o.seconds * 1000, o.wallets / o.periodS, (i) => poll(i % o.wallets)),
    runFor(o.seconds * 1000, o.explorerRps, async () => {
      const k = n++ % 5;
      const path = k < 3 ? explorer[k] : k === 3 ? `/indexer/block/v1/blocks/${1 + (n * 7919) % top}` : `/indexer/tx/v1/txs/${txHashes[(n * 104729) % txHashes.length]}`;
      await get(path, {});
    }),
  ]);
  if (ticker) clearInterval(ticker);
  const cpu = cpuTicks(pid) - cpu0;
  const hits = (await metricValue(url, 'indexer_api_response_cache_hits_total')) - hits0;
  agent.destroy();
  lat.sort((a, b) => a - b);
  const q = (p: number): number => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] ?? 0;
  return {
    scenario, requests, polls, unchangedPolls: unchanged, unchanged304, hitShare: requests ? hits / requests : 0,
    cpuUsPerRequest: requests ? (cpu * 1e6 / 100) / requests : 0, p50: q(0.5), p99: q(0.99), blocks, errors,
  };
}

/** Calls `fn` `rate` times a second for `ms`, spread evenly; waits for the calls in flight. */
async function runFor(ms: number, rate: number, fn: (i: number) => Promise<void>): Promise<void> {
  const start = Date.now();
  const inflight = new Set<Promise<void>>();
  let i = 0;
  while (Date.now() - start < ms) {
    const due = Math.floor(((Date.now() - start) / 1000) * rate);
    while (i < due) {
      const p = fn(i++).finally(() => inflight.delete(p));
      inflight.add(p);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  await Promise.all(inflight);
}

async function main(argv: string[]): Promise<void> {
  const work = resolve(opt(argv, 'work', join(ROOT, 'bench', 'results', 'live-wallets')));
  const txs = Number(opt(argv, 'txs', '40000'));
  const vm = opt(argv, 'vm', 'move');
  const o = {
    wallets: Number(opt(argv, 'wallets', '2000')), periodS: Number(opt(argv, 'period-s', '5')),
    seconds: Number(opt(argv, 'seconds', '60')), explorerRps: Number(opt(argv, 'explorer-rps', '20')),
    blockMs: Number(opt(argv, 'block-ms', '1000')),
  };
  const before = argv.includes('--before') ? resolve(opt(argv, 'before', '')) : undefined;
  mkdirSync(work, { recursive: true });
  const dump = join(work, `dump-${vm}-${txs}`);
  if (!existsSync(join(dump, '.complete'))) {
    cli(ROOT, ['generate', '--vm', vm, '--preset', 'scale', '--txs', String(txs), '--out', dump, '--force', '--quiet']);
    spawnSync('touch', [join(dump, '.complete')]);
  }
  const full = join(work, `full-${vm}-${txs}.sqlite`);
  if (!existsSync(full)) cli(ROOT, ['import', '--from-dump', dump, '--out', full, '--quiet']);
  const src = await serve(ROOT, full);
  const results: Result[] = [];
  try {
    const top = (await json<{ height: number }>(`${src.url}/status`)).height;
    const ahead = Math.ceil((o.seconds * 1000) / o.blockMs) * 3 + 20;
    const replica0 = join(work, `replica-${vm}-${txs}-${top - ahead}.sqlite`);
    if (!existsSync(replica0)) cli(ROOT, ['import', '--from-api', src.url, '--to-height', String(top - ahead), '--out', replica0, '--quiet']);
    const db = new Database(full, { readonly: true });
    const prefix = String(db.prepare("SELECT value FROM meta WHERE key = 'bech32_prefix'").pluck().get());
    const accounts = (db.prepare('SELECT addr FROM accounts WHERE tx_count > 0 ORDER BY id').pluck().all() as Buffer[]).map((a) => toBech32(a, prefix));
    const txHashes = (db.prepare('SELECT hash FROM txs WHERE height <= ? ORDER BY sequence DESC LIMIT 5000').pluck().all(top - ahead) as Buffer[]).map((h) => h.toString('hex').toUpperCase());
    db.close();
    process.stdout.write(`chain: ${vm}, ${txs} txs, height ${top}, ${accounts.length} accounts with txs; replica at ${top - ahead}; ${o.wallets} wallets every ${o.periodS} s, explorer ${o.explorerRps}/s, ${o.seconds} s per scenario, a block every ${o.blockMs} ms\n`);
    const scenarios: [string, string, boolean][] = [['frozen', ROOT, false], ['live', ROOT, true]];
    if (before) scenarios.push(['live, release before', before, true]);
    for (const [name, root, live] of scenarios) {
      const file = join(work, `run-${name.replace(/\W+/g, '-')}.sqlite`);
      for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
      copyFileSync(replica0, file);
      const proxy = growingProxy(src.url, top - ahead);
      const purl = await proxy.url;
      let follow: ChildProcess | undefined;
      if (live) {
        follow = spawn(process.execPath, [join(root, 'bin', 'indexer-api'), 'follow', '--db', file, '--from-api', purl, '--interval', '200ms', '--richlist-interval', '0'],
          { stdio: ['ignore', 'ignore', 'ignore'] });
        // the follower's first batch turns the file to WAL: serve opens it after
        await new Promise((r) => setTimeout(r, 3000));
      }
      const replica = await serve(root, file, ['--commit-poll-ms', '100']);
      try {
        const r = await load(name, replica.url, replica.proc.pid as number, accounts, txHashes, top - ahead, { ...o, tick: live ? proxy.advance : undefined });
        results.push(r);
        process.stdout.write(`${JSON.stringify(r)}\n`);
      } finally {
        await stop(replica.proc);
        await stop(follow);
        proxy.server.close();
      }
    }
  } finally {
    await stop(src.proc);
  }
  process.stdout.write('\n| scenario | requests | polls | unchanged polls | of those 304 | cache hits / requests | server CPU µs / request | p50 ms | p99 ms | blocks |\n|---|---|---|---|---|---|---|---|---|---|\n');
  for (const r of results) {
    process.stdout.write(`| ${r.scenario} | ${r.requests} | ${r.polls} | ${r.unchangedPolls} | ${(100 * r.unchanged304 / Math.max(1, r.unchangedPolls)).toFixed(1)} % | ${(100 * r.hitShare).toFixed(1)} % | ${r.cpuUsPerRequest.toFixed(0)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.blocks} |\n`);
  }
}

main(process.argv.slice(2)).catch((e) => { process.stderr.write(`${(e as Error).stack}\n`); process.exit(1); });
