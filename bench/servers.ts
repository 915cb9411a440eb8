import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import type { Captured } from './bare';
import { freePort } from '../test/support/net';

export { freePort };

/** Starting, stopping and reading from the servers under test. */


export interface Running {
  url: string;
  proc: ChildProcess;
  /** stdout JSON lines, when kept (e.g. to learn worker pids) */
  lines: Record<string, unknown>[];
  stop(): Promise<void>;
}

function pinnedSpawn(cpus: string | undefined, cmd: string, args: string[], keepStdout: boolean): ChildProcess {
  const [c, a] = cpus === undefined ? [cmd, args] : ['taskset', ['-c', cpus, cmd, ...args]];
  return spawn(c, a, { stdio: ['ignore', keepStdout ? 'pipe' : 'ignore', 'pipe'], env: withoutIndexerEnv() });
}

function withoutIndexerEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('INDEXER_API_')));
}

const live = new Set<Running>();

/** Stops every server still running (the runner's Ctrl-C / SIGTERM). */
export function stopAll(): Promise<void[]> {
  return Promise.all([...live].map((r) => r.stop()));
}

function started(proc: ChildProcess, url: string, ready: (stdout: string, stderr: string) => boolean, keepStdout: boolean): Promise<Running> {
  return new Promise((resolve, reject) => {
    let out = '';
    let partial = '';
    let err = '';
    const lines: Record<string, unknown>[] = [];
    const exited = new Promise<void>((done) => proc.once('exit', () => done()));
    const stop = async (): Promise<void> => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(t);
    };
    let done = false;
    const check = (): void => {
      if (!done && ready(out, err)) {
        done = true;
        const r = { url, proc, lines, stop };
        live.add(r);
        exited.then(() => live.delete(r), () => {});
        resolve(r);
      }
    };
    proc.stdout?.setEncoding('utf8').on('data', (s: string) => {
      if (out.length < 4096) out += s;
      partial += s;
      let nl: number;
      while ((nl = partial.indexOf('\n')) >= 0) {
        const line = partial.slice(0, nl);
        partial = partial.slice(nl + 1);
        if (line.startsWith('{')) lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      check();
    });
    proc.stderr?.setEncoding('utf8').on('data', (s: string) => { err += s; check(); });
    proc.once('exit', (code) => { if (!done) reject(new Error(`server exited (${code}) before it was ready: ${err}`)); });
    if (!keepStdout) proc.stdout?.resume();
  });
}

/** `indexer-api serve` (log level info, the lines discarded unless kept). */
export async function startOurs(root: string, db: string, opts: { cpus?: string; workers?: number; keepStdout?: boolean; extra?: string[] } = {}): Promise<Running> {
  const port = await freePort();
  const args = [join(root, 'bin', 'indexer-api'), 'serve', '--db', db, '--port', String(port), '--workers', String(opts.workers ?? 1), ...(opts.extra ?? [])];
  const proc = pinnedSpawn(opts.cpus, process.execPath, args, opts.keepStdout ?? false);
  const url = `http://127.0.0.1:${port}`;
  return started(proc, url, (_out, err) => err.includes(` on ${url}`), opts.keepStdout ?? false);
}

/** bench/bare.ts over the responses captured from our server. */
export async function startBare(root: string, captured: Record<string, Captured>, scratch: string, cpus?: string): Promise<Running> {
  const port = await freePort();
  const file = join(scratch, `captured-${port}.json`);
  writeFileSync(file, JSON.stringify(captured));
  const proc = pinnedSpawn(cpus, process.execPath, [join(root, 'build', 'bench', 'bare.js'), file, String(port)], true);
  return started(proc, `http://127.0.0.1:${port}`, (out) => out.startsWith('listening'), true);
}

/** Status, the headers a client caches by, and the exact body bytes of one GET. */
export function capture(url: string): Promise<Captured> {
  return new Promise((resolve, reject) => {
    request(url, { agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (b: Buffer) => chunks.push(b));
      res.on('end', () => {
        const headers: Captured['headers'] = {};
        for (const h of ['content-type', 'content-length', 'etag', 'cache-control', 'access-control-allow-origin']) {
          if (res.headers[h] !== undefined) headers[h] = res.headers[h];
        }
        resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks).toString('base64') });
      });
      res.on('error', reject);
    }).on('error', reject).end();
  });
}

let ticksPerSecond: number | undefined;

/** CPU time (user + system) a process has used so far, seconds, from /proc/<pid>/stat. */
export function cpuSecondsOf(pid: number): number | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // fields[0] is field 3 (state): utime and stime are fields 14 and 15
    ticksPerSecond ??= Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
    return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
  } catch {
    return undefined;
  }
}

/** Resident memory of a process from /proc/<pid>/status, KiB. */
export function rssOf(pid: number): { rss: number; anon: number; file: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string): number => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
    return { rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile') };
  } catch {
    return undefined;
  }
}
