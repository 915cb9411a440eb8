/**
 * What the wallet benchmarks share (bench/wallets.ts, bench/restarts.ts): children that print
 * `listening URL` (serve, the floor), their CPU, the server's metrics, wrk on the wallets'
 * schedule (bench/wrk/wallets.lua), the ETags the wallets hold.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createWriteStream, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createServer as netServer, type AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { toBech32 } from '../src/lib/address';

export const ROOT = resolve(__dirname, '..', '..');

export interface Proc { proc: ChildProcess; url: string; lines: string[] }

/** A child that prints `listening URL` first (serve, the floor). */
export function startListening(args: string[], o: { cpus?: string; out?: string } = {}): Promise<Proc> {
  const argv = o.cpus ? ['taskset', '-c', o.cpus, process.execPath, ...args] : [process.execPath, ...args];
  const proc = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const file = o.out ? createWriteStream(o.out) : undefined;
  return new Promise((done, fail) => {
    let buf = '';
    let found = false;
    proc.stdout!.on('data', (b: Buffer) => {
      if (file) file.write(b);
      if (found) return;
      buf += b.toString();
      const m = /listening (http:\/\/\S+)/.exec(buf);
      if (m) { found = true; done({ proc, url: m[1], lines }); }
    });
    proc.stderr!.on('data', (b: Buffer) => { lines.push(b.toString()); });
    proc.once('exit', (c) => { if (!found) fail(new Error(`${args.join(' ')} exited ${c}: ${lines.join('')}`)); });
  });
}

export function stop(p: ChildProcess | undefined): Promise<void> {
  if (!p || p.exitCode !== null || p.signalCode !== null) return Promise.resolve();
  return new Promise((done) => { p.once('exit', () => done()); p.kill('SIGTERM'); });
}

export async function json<T>(url: string): Promise<T> {
  return (await (await fetch(url)).json()) as T;
}

/** utime + stime of a process and its children (a cluster's workers), in seconds. */
let clockTicks: number | undefined;

/** The pids of `pid`'s children, from /proc (no process started: cheap enough to sample often). */
function childrenOf(pid: number): number[] {
  try {
    const out: number[] = [];
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
      if (text) out.push(...text.split(' ').map(Number));
    }
    return out;
  } catch { return []; }
}

export function cpuSeconds(pid: number, withChildren = true): number {
  const ticks = (p: number): number => {
    try {
      const f = readFileSync(`/proc/${p}/stat`, 'utf8');
      const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
      return Number(fields[11]) + Number(fields[12]);
    } catch { return 0; }
  };
  const children = withChildren ? childrenOf(pid) : [];
  clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK']).toString());
  return [pid, ...children].reduce((s, p) => s + ticks(p), 0) / clockTicks;
}

export async function metrics(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line === '') continue;
    const at = line.lastIndexOf(' ');
    const name = line.slice(0, at);
    out.set(name, (out.get(name) ?? 0) + Number(line.slice(at + 1)));
  }
  return out;
}

/** wrk's JSON line (bench/wrk/wallets.lua), and wrk's own CPU seconds over the run. */
export interface Wrk { requests: number; seconds: number; errors: Record<string, number>; p50: number; p90: number; p99: number; p999: number; max: number; cpu: number }

/**
 * wrk at `rate` polls a second on bench/wrk/wallets.lua's schedule (0: as fast as answered), over
 * `threads` event loops and `connections` (default 32 a thread: enough idle ones to keep the
 * schedule through a slow answer).
 */
export function wrk(url: string, file: string, o: { rate: number; seconds: number; threads: number; mode: string; cpus?: string; connections?: number }): Promise<Wrk> {
  const script = join(ROOT, 'bench', 'wrk', 'wallets.lua');
  const c = Math.max(o.threads, o.connections ?? 32 * o.threads);
  const args = ['-t', String(o.threads), '-c', String(c), '-d', `${o.seconds}s`, '--timeout', '10s', '-s', script, url, '--', file, String(o.rate), o.mode || '-', String(o.threads)];
  const argv = o.cpus ? ['taskset', '-c', o.cpus, 'wrk', ...args] : ['wrk', ...args];
  return new Promise((done, fail) => {
    const p = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    // wrk's own CPU (the load generator shares the machine): its /proc entry, read until it exits
    let cpu = 0;
    const sample = setInterval(() => { const t = cpuSeconds(p.pid as number, false); if (t > 0) cpu = t; }, 200);
    p.stdout.on('data', (b: Buffer) => { out += b.toString(); });
    p.stderr.on('data', (b: Buffer) => { err += b.toString(); });
    p.once('exit', (code) => {
      clearInterval(sample);
      const line = out.split('\n').find((l) => l.startsWith('{"requests"'));
      if (code !== 0 || !line) { fail(new Error(`wrk exited ${code}: ${err}${out}`)); return; }
      done({ ...JSON.parse(line) as Wrk, cpu });
    });
  });
}

/** Fetches each wallet's page once (gzip) and writes `path<TAB>etag` lines: the ETags the wallets hold. */
export async function seed(url: string, paths: string[], file: string): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  const etags: string[] = new Array(paths.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < paths.length) {
      const i = next++;
      // a 200 with its ETag, asked again after a 503 (the server shedding at its start) — never an
      // empty ETag, which would make that wallet a plain GET for the whole run
      for (let attempt = 1; ; attempt++) {
        const got = await new Promise<{ status: number; etag: string }>((done, fail) => {
          request(url + paths[i], { agent, headers: { 'accept-encoding': 'gzip, deflate, br' } }, (r) => {
            r.resume();
            r.on('end', () => done({ status: r.statusCode ?? 0, etag: String(r.headers.etag ?? '') }));
          }).on('error', fail).end();
        });
        if (got.status === 200 && got.etag !== '') { etags[i] = got.etag; break; }
        if (attempt === 5) throw new Error(`seed: ${paths[i]} answered ${got.status}${got.etag === '' ? ' without an ETag' : ''} five times`);
        await new Promise((d) => setTimeout(d, 100 * attempt));
      }
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  agent.destroy();
  writeFileSync(file, paths.map((p, i) => `${p}\t${etags[i]}`).join('\n') + '\n');
}

/** A port free now (for --ops-port: its log line is at info, which these runs do not log). */
export function freePort(): Promise<number> {
  return new Promise((done) => {
    const srv = netServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as AddressInfo).port;
      srv.close(() => done(port));
    });
  });
}

/**
 * The wallets of a snapshot file: `n` of its accounts with txs, spread over the id range (wallets
 * of every age), each the Initia wallet's activity URL — or, with `family` 'nft', `n` of its
 * accounts owning NFTs, each the wallet's NFT page (tokens/by_account). Also the file's height and
 * how many accounts there are to pick from.
 */
export function walletPaths(file: string, n: number, family: 'activity' | 'nft' = 'activity'): { paths: string[]; height: number; accounts: number } {
  const db = new Database(file, { readonly: true });
  const prefix = String(db.prepare("SELECT value FROM meta WHERE key = 'bech32_prefix'").pluck().get());
  const height = Number(db.prepare("SELECT value FROM meta WHERE key = 'max_height'").pluck().get());
  const all = db.prepare(`SELECT addr FROM accounts WHERE ${family === 'nft' ? 'nft_count' : 'tx_count'} > 0 ORDER BY id`).pluck().all() as Buffer[];
  db.close();
  const step = Math.max(1, all.length / n);
  const paths: string[] = [];
  for (let i = 0; paths.length < Math.min(n, all.length); i++) {
    const a = toBech32(all[Math.floor(i * step)], prefix);
    paths.push(family === 'nft' ? `/indexer/nft/v1/tokens/by_account/${a}?pagination.limit=10` : `/indexer/tx/v1/txs/by_account/${a}?pagination.reverse=true&pagination.limit=10`);
  }
  return { paths, height, accounts: all.length };
}
