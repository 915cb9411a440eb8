import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * One load run against one URL: `wrk` (C, one thread) when installed, else autocannon (Node),
 * pinned with `taskset` to the CPUs given, so the load generator and the server do not share
 * a core.
 */

export type LoadTool = 'wrk' | 'autocannon';

export interface LoadResult {
  rps: number;
  /** latency percentiles, ms */
  p50: number;
  p99: number;
  requests: number;
  /** socket errors, timeouts and non-2xx/3xx answers */
  errors: number;
  /** CPU time (user + system) the server process spent per request, µs, when measured */
  cpuUs?: number;
}

export interface LoadOptions {
  url: string;
  connections: number;
  seconds: number;
  /** taskset CPU list for the load generator, e.g. "1"; undefined = not pinned */
  cpus?: string;
  tool: LoadTool;
  root: string;
  /**
   * Append `bench_r=<n>` to the URL, n counting up from a random start, so that every request is
   * a URL the server has not seen (wrk only): the response cache and the per-URL validation
   * memo never hit — the miss path.
   */
  rotate?: boolean;
  /** where to write the wrk script for `rotate` */
  scratch?: string;
  /** a wrk Lua script of the caller's (wrk only; e.g. bench/cold-mix.ts's URL walker) */
  script?: string;
}

export const ROTATE_PARAM = 'bench_r';

export function defaultTool(): LoadTool {
  return spawnSync('wrk', ['--version'], { encoding: 'utf8' }).error ? 'autocannon' : 'wrk';
}

export function hasTaskset(): boolean {
  return !spawnSync('taskset', ['-c', '0', 'true']).error;
}

function pinned(cpus: string | undefined, cmd: string, args: string[]): [string, string[]] {
  return cpus === undefined ? [cmd, args] : ['taskset', ['-c', cpus, cmd, ...args]];
}

function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => { out += s; });
    child.stderr.setEncoding('utf8').on('data', (s: string) => { err += s; });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${err}`))));
  });
}

/** "1.23ms" / "456.00us" / "1.02s" → ms */
function wrkMs(text: string): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(text.trim());
  if (!m) throw new Error(`wrk: cannot read the latency ${text}`);
  const v = Number(m[1]);
  return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v;
}

function parseWrk(out: string): LoadResult {
  const pct = (p: string): number => {
    const m = new RegExp(`^\\s+${p}%\\s+(\\S+)\\s*$`, 'm').exec(out);
    if (!m) throw new Error(`wrk: no ${p}% latency in:\n${out}`);
    return wrkMs(m[1]);
  };
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(out);
  const total = /(\d+) requests in/.exec(out);
  if (!rps || !total) throw new Error(`wrk: unexpected output:\n${out}`);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  const errors = (socket ? socket.slice(1).reduce((a, b) => a + Number(b), 0) : 0) + (non2xx ? Number(non2xx[1]) : 0);
  return { rps: Number(rps[1]), p50: pct('50'), p99: pct('99'), requests: Number(total[1]), errors };
}

interface AutocannonJson {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  errors: number; timeouts: number; non2xx: number;
}

export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  if (o.tool === 'wrk') {
    const script: string[] = o.script ? ['-s', o.script] : [];
    if (o.rotate && !o.script) {
      const u = new URL(o.url);
      const path = u.pathname + u.search;
      const file = join(o.scratch ?? tmpdir(), `rotate-${process.pid}-${Math.random().toString(36).slice(2)}.lua`);
      writeFileSync(file, [
        `local base = ${JSON.stringify(`${path}${u.search ? '&' : '?'}${ROTATE_PARAM}=`)}`,
        `local n = ${Math.floor(Math.random() * 1e12)}`,
        'request = function()',
        '  n = n + 1',
        '  return wrk.format("GET", base .. string.format("%d", n))',
        'end',
      ].join('\n'));
      script.push('-s', file);
    }
    const [cmd, args] = pinned(o.cpus, 'wrk', ['-t1', `-c${o.connections}`, `-d${o.seconds}s`, '--timeout', '30s', '--latency', ...script, o.url]);
    return parseWrk(await run(cmd, args));
  }
  if (o.rotate) throw new Error('bench: --rotate needs wrk');
  const cli = join(o.root, 'node_modules', 'autocannon', 'autocannon.js');
  const [cmd, args] = pinned(o.cpus, process.execPath, [cli, '-c', String(o.connections), '-d', String(o.seconds), '-t', '30', '-j', o.url]);
  const r = JSON.parse(await run(cmd, args)) as AutocannonJson;
  return {
    rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, requests: r.requests.total,
    errors: r.errors + r.timeouts + r.non2xx,
  };
}
