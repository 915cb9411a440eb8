/**
 * A normal client beside hostile ones (docs/reliability.md#overload): `serve` on --db, N hostile
 * clients (each its own address, 127.0.0.10…) repeating --worst as fast as they are answered
 * (each request cache-busted with an extra parameter), and one normal client (127.0.0.200)
 * asking for a random block every 50 ms (open loop). Prints the normal client's p50 / p99 / max
 * and its failures, and what the hostile clients got (answers, 503s), per run and the median.
 *
 *   node build/bench/overload.js --db chain.sqlite --worst '/indexer/tx/v1/txs?…' [--hostile 8]
 *     [--seconds 20] [--runs 3] [--workers N] [--cli bin/indexer-api] [--extra '--max-queued 64']
 *
 * --cli runs another build (e.g. an older checkout's bin/indexer-api) for a before/after in one run.
 */
import { spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..');

function arg(name: string, fallback?: string): string {
  const i = process.argv.indexOf(`--${name}`);
  if (i >= 0 && process.argv[i + 1] !== undefined) return process.argv[i + 1];
  if (fallback === undefined) throw new Error(`--${name} is required (see the header of bench/overload.ts)`);
  return fallback;
}

interface Answer { status: number; ms: number }

function get(url: string, agent: Agent): Promise<Answer> {
  const t0 = process.hrtime.bigint();
  return new Promise((done) => {
    const req = request(url, { agent }, (res) => {
      res.resume();
      res.once('end', () => done({ status: res.statusCode ?? 0, ms: Number(process.hrtime.bigint() - t0) / 1e6 }));
    });
    req.setTimeout(60_000, () => req.destroy());
    req.once('error', () => done({ status: 0, ms: Number(process.hrtime.bigint() - t0) / 1e6 }));
    req.end();
  });
}

const pct = (sorted: number[], p: number): number => sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] : NaN;
const median = (xs: number[]): number => pct([...xs].sort((a, b) => a - b), 0.5);

async function startServe(cli: string, db: string, workers: string, extra: string[]): Promise<{ url: string; stop(): Promise<void> }> {
  const proc = spawn(process.execPath, [cli, 'serve', '--db', db, '--port', '0', '--workers', workers, '--log-level', 'error', '--no-verify', ...extra], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const url = await new Promise<string>((done, fail) => {
    proc.stderr.setEncoding('utf8').on('data', (s: string) => {
      stderr += s;
      const m = /serving .* on (http:\/\/\S+)/.exec(stderr);
      if (m) done(m[1]);
    });
    proc.once('exit', (code) => fail(new Error(`serve exited ${code}: ${stderr}`)));
  });
  return {
    url,
    stop: () => new Promise<void>((done) => {
      const t = setTimeout(() => proc.kill('SIGKILL'), 30_000);
      proc.once('exit', () => { clearTimeout(t); done(); });
      proc.kill('SIGTERM');
    }),
  };
}

interface Run { p50: number; p99: number; max: number; normal: number; normalFailed: number; hostileOk: number; hostile503: number; hostileOther: number }

async function oneRun(cli: string, db: string, worst: string, hostile: number, seconds: number, workers: string, extra: string[]): Promise<Run> {
  const s = await startServe(cli, db, workers, extra);
  try {
    const probe = new Agent({ keepAlive: true });
    const status = await new Promise<{ height: number }>((done, fail) => {
      request(`${s.url}/status`, { agent: probe }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => { body += c; }).on('end', () => done(JSON.parse(body) as { height: number }));
      }).once('error', fail).end();
    });
    probe.destroy();
    const until = Date.now() + seconds * 1000;
    let bust = Math.floor(Math.random() * 1e9);
    const sep = worst.includes('?') ? '&' : '?';
    const hostileAnswers: Answer[] = [];
    const loops = Array.from({ length: hostile }, async (_, i) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1, localAddress: `127.0.0.${10 + i}` });
      while (Date.now() < until) hostileAnswers.push(await get(`${s.url}${worst}${sep}bench_bust=${bust++}`, agent));
      agent.destroy();
    });
    const normalAgent = new Agent({ keepAlive: true, localAddress: '127.0.0.200' });
    const normal: Promise<Answer>[] = [];
    // let the hostile clients fill the server first
    await new Promise((d) => setTimeout(d, 1_000));
    while (Date.now() < until - 1_000) {
      normal.push(get(`${s.url}/indexer/block/v1/blocks/${1 + Math.floor(Math.random() * status.height)}`, normalAgent));
      await new Promise((d) => setTimeout(d, 50));
    }
    const answers = await Promise.all(normal);
    await Promise.all(loops);
    normalAgent.destroy();
    const ok = answers.filter((a) => a.status === 200).map((a) => a.ms).sort((a, b) => a - b);
    const all = answers.map((a) => a.ms).sort((a, b) => a - b);
    return {
      p50: pct(all, 0.5), p99: pct(all, 0.99), max: all[all.length - 1], normal: answers.length, normalFailed: answers.length - ok.length,
      hostileOk: hostileAnswers.filter((a) => a.status === 200).length,
      hostile503: hostileAnswers.filter((a) => a.status === 503).length,
      hostileOther: hostileAnswers.filter((a) => a.status !== 200 && a.status !== 503).length,
    };
  } finally {
    await s.stop();
  }
}

async function main(): Promise<void> {
  const db = resolve(arg('db'));
  const worst = arg('worst');
  const hostile = Number(arg('hostile', '8'));
  const seconds = Number(arg('seconds', '20'));
  const runs = Number(arg('runs', '3'));
  const workers = arg('workers', '2');
  const cli = resolve(arg('cli', join(ROOT, 'bin', 'indexer-api')));
  const extra = arg('extra', '').split(' ').filter(Boolean);
  console.log(`# ${cli} --workers ${workers} ${extra.join(' ')}; ${hostile} hostile clients repeating ${worst}; a normal client every 50 ms; ${seconds} s × ${runs}`);
  const results: Run[] = [];
  for (let r = 0; r < runs; r++) {
    const x = await oneRun(cli, db, worst, hostile, seconds, workers, extra);
    results.push(x);
    console.log(`run ${r + 1}: normal p50 ${x.p50.toFixed(1)} ms, p99 ${x.p99.toFixed(1)} ms, max ${x.max.toFixed(0)} ms, ${x.normalFailed}/${x.normal} failed; hostile ${x.hostileOk} answered, ${x.hostile503} × 503, ${x.hostileOther} other`);
  }
  console.log(`median: normal p50 ${median(results.map((x) => x.p50)).toFixed(1)} ms, p99 ${median(results.map((x) => x.p99)).toFixed(1)} ms; hostile answered ${median(results.map((x) => x.hostileOk))}, 503 ${median(results.map((x) => x.hostile503))}`);
}

main().catch((e: unknown) => { console.error(e instanceof Error ? e.message : e); process.exit(1); });
