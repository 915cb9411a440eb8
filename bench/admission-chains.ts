/**
 * Admission across chains (issue #31, src/http/admission.ts `groupOf`): one process serving two
 * chains, chain A flooded, chain B asked at a normal rate. The server is admission() over a
 * listener that burns --busy-ms of CPU per request (a synchronous query), in a child process
 * (this file with --serve) so that its blocking does not delay the clients' clocks; no snapshot,
 * no `serve`: only the queue is measured. Requests are `/{chain}/x`, the client named by X-Client.
 *
 *   chain A: --a-clients clients (keys a0…), each keeping --a-outstanding requests in flight,
 *            sending the next one as soon as one is answered (after --a-retry-ms on a 503);
 *   chain B: --b-clients clients (keys b0…), each asking one request every --b-every-ms (open loop).
 *
 * Each run starts a fresh server, lets the flood fill the queue for --warmup-s, then measures B for
 * --seconds: p50 / p99 / max of B's 200s, B's 503s, A's 200s per s, the queue's sheds. Runs
 * alternate with groupOf (the chain: the first path segment) and without (one queue), --runs of
 * each; prints each run and the medians, with the 1-minute load average at each run's start.
 *
 *   node build/bench/admission-chains.js [--a-clients 32] [--a-outstanding 9] [--a-retry-ms 50]
 *     [--b-clients 3] [--b-every-ms 50] [--busy-ms 2] [--seconds 8] [--warmup-s 2] [--runs 3]
 *     [--max-queued 256] [--max-queued-per-client 64] [--max-wait-ms 5000]
 *
 * (the admission limits default to serve's: src/settings/serve.ts)
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { admission, ShedReason } from '../src/http/admission';
import { defaultServeSettings } from '../src/settings/serve';

/** serve's admission settings, the defaults of this bench's */
const serveAdmission = defaultServeSettings().admission;

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? Number(process.argv[i + 1]) : fallback;
}

interface ServerOptions { grouped: boolean; busyMs: number; maxQueued: number; maxQueuedPerClient: number; maxWaitMs: number }
interface ServerReport { shed: Record<ShedReason, number>; runs: Record<string, number> }

/** The child: admission over a listener burning busyMs per request; { url } once listening, its report on 'report'. */
function serve(o: ServerOptions): void {
  const shed: Record<ShedReason, number> = { queue_full: 0, client_queue_full: 0, waited_too_long: 0 };
  const runs: Record<string, number> = {};
  const chainOf = (url: string | undefined): string => (url ?? '/').split(/[/?]/)[1];
  const { listener } = admission((req, res) => {
    const chain = chainOf(req.url);
    runs[chain] = (runs[chain] ?? 0) + 1;
    const until = process.hrtime.bigint() + BigInt(Math.round(o.busyMs * 1e6));
    while (process.hrtime.bigint() < until) { /* the synchronous query */ }
    res.end('{}');
  }, {
    maxQueued: o.maxQueued, maxQueuedPerClient: o.maxQueuedPerClient, maxWaitMs: o.maxWaitMs,
    clientOf: (req) => String(req.headers['x-client']),
    ...(o.grouped ? { groupOf: (req) => chainOf(req.url) } : {}),
    onShed: (r) => { shed[r]++; },
  });
  const server = createServer(listener);
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => process.send?.({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
  process.on('message', (m: string) => {
    if (m === 'report') process.send?.({ shed: { ...shed }, runs: { ...runs } });
    if (m === 'close') process.exit(0);
  });
  process.on('disconnect', () => process.exit(0));
}

interface Answer { status: number; ms: number; at: number }

function get(url: string, agent: Agent, client: string): Promise<Answer> {
  const t0 = process.hrtime.bigint();
  return new Promise((done) => {
    const req = request(url, { agent, headers: { 'X-Client': client } }, (res) => {
      res.resume();
      res.once('end', () => done({ status: res.statusCode ?? 0, ms: Number(process.hrtime.bigint() - t0) / 1e6, at: Date.now() }));
    });
    req.setTimeout(60_000, () => req.destroy());
    req.once('error', () => done({ status: 0, ms: Number(process.hrtime.bigint() - t0) / 1e6, at: Date.now() }));
    req.end();
  });
}

const sleep = (ms: number): Promise<void> => new Promise((d) => setTimeout(d, ms));
const pct = (sorted: number[], p: number): number => sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] : NaN;
const median = (xs: number[]): number => pct([...xs].sort((a, b) => a - b), 0.5);

interface Run { grouped: boolean; load: number; bAsked: number; bOk: number; b503: number; bOther: number; p50: number; p99: number; max: number; aOkPerS: number; a503PerS: number; shed: Record<ShedReason, number>; runs: Record<string, number> }

async function run(grouped: boolean): Promise<Run> {
  const load = loadavg()[0];
  const o: ServerOptions = {
    grouped, busyMs: arg('busy-ms', 2),
    maxQueued: arg('max-queued', serveAdmission.maxQueued), maxQueuedPerClient: arg('max-queued-per-client', serveAdmission.maxQueuedPerClient), maxWaitMs: arg('max-wait-ms', serveAdmission.maxWaitMs),
  };
  const child = fork(__filename, ['--serve', JSON.stringify(o)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const [{ url }] = await once(child, 'message') as [{ url: string }];
  const report = async (): Promise<ServerReport> => { child.send('report'); return (await once(child, 'message'))[0] as ServerReport; };
  const agent = new Agent({ keepAlive: true });
  let stopped = false;
  let measuring = false;
  const a: Answer[] = [];
  const retryMs = arg('a-retry-ms', 50);
  const flood = async (key: string): Promise<void> => {
    while (!stopped) {
      const r = await get(`${url}/a/x`, agent, key);
      if (measuring) a.push(r);
      if (r.status !== 200) await sleep(retryMs);
    }
  };
  const aClients = arg('a-clients', 32);
  const floods: Promise<void>[] = [];
  for (let i = 0; i < aClients; i++) for (let j = 0; j < arg('a-outstanding', 9); j++) floods.push(flood(`a${i}`));
  await sleep(arg('warmup-s', 2) * 1000);
  const before = await report();
  measuring = true;
  const b: Promise<Answer>[] = [];
  const seconds = arg('seconds', 8);
  const every = arg('b-every-ms', 50);
  const bClients = arg('b-clients', 3);
  const t0 = Date.now();
  const ticks: Promise<void>[] = [];
  for (let i = 0; i < bClients; i++) {
    ticks.push((async () => {
      await sleep((every * i) / bClients);
      for (let k = 0; Date.now() - t0 < seconds * 1000; k++) {
        b.push(get(`${url}/b/x`, agent, `b${i}`));
        const next = t0 + (every * i) / bClients + (k + 1) * every;
        await sleep(Math.max(0, next - Date.now()));
      }
    })());
  }
  await Promise.all(ticks);
  const after = await report();
  measuring = false;
  const bAnswers = await Promise.all(b);
  stopped = true;
  child.send('close');
  agent.destroy();
  if (child.exitCode === null) await once(child, 'exit');
  await Promise.allSettled(floods);
  const ok = bAnswers.filter((r) => r.status === 200).map((r) => r.ms).sort((x, y) => x - y);
  const aIn = a.filter((r) => r.at - t0 <= seconds * 1000);
  const diff = <K extends string>(x: Record<K, number>, y: Record<K, number>): Record<K, number> =>
    Object.fromEntries(Object.keys(x).map((k) => [k, x[k as K] - (y[k as K] ?? 0)])) as Record<K, number>;
  return {
    grouped, load, bAsked: bAnswers.length, bOk: ok.length,
    b503: bAnswers.filter((r) => r.status === 503).length, bOther: bAnswers.filter((r) => r.status !== 200 && r.status !== 503).length,
    p50: pct(ok, 0.5), p99: pct(ok, 0.99), max: ok[ok.length - 1] ?? NaN,
    aOkPerS: aIn.filter((r) => r.status === 200).length / seconds, a503PerS: aIn.filter((r) => r.status === 503).length / seconds,
    shed: diff(after.shed, before.shed), runs: diff(after.runs, before.runs),
  };
}

const f = (x: number): string => (Number.isNaN(x) ? '—' : x.toFixed(1));

async function main(): Promise<void> {
  const runs: Run[] = [];
  console.log(`chain A: ${arg('a-clients', 32)} clients × ${arg('a-outstanding', 9)} in flight; chain B: ${arg('b-clients', 3)} clients, one request each every ${arg('b-every-ms', 50)} ms; ${arg('busy-ms', 2)} ms CPU per request; ${arg('seconds', 8)} s measured per run`);
  console.log('mode       load  B asked  B 200  B 503  B other  B p50 ms  B p99 ms  B max ms  A 200/s  A 503/s  runs A/B   shed queue_full/client/waited');
  for (let i = 0; i < arg('runs', 3); i++) {
    for (const grouped of [true, false]) {
      const r = await run(grouped);
      runs.push(r);
      console.log(`${(grouped ? 'groupOf' : 'one queue').padEnd(9)} ${r.load.toFixed(2).padStart(5)} ${String(r.bAsked).padStart(8)} ${String(r.bOk).padStart(6)} ${String(r.b503).padStart(6)} ${String(r.bOther).padStart(8)} ${f(r.p50).padStart(9)} ${f(r.p99).padStart(9)} ${f(r.max).padStart(9)} ${f(r.aOkPerS).padStart(8)} ${f(r.a503PerS).padStart(8)}  ${`${r.runs.a ?? 0}/${r.runs.b ?? 0}`.padEnd(10)} ${r.shed.queue_full}/${r.shed.client_queue_full}/${r.shed.waited_too_long}`);
    }
  }
  console.log('\nmedians of the runs:');
  for (const grouped of [true, false]) {
    const rs = runs.filter((r) => r.grouped === grouped);
    const m = (k: (r: Run) => number): string => f(median(rs.map(k)));
    console.log(`${(grouped ? 'groupOf' : 'one queue').padEnd(9)}  loads ${rs.map((r) => r.load.toFixed(2)).join('/')}  B 200 ${m((r) => r.bOk)} of ${m((r) => r.bAsked)}  B 503 ${m((r) => r.b503)}  B p50 ${m((r) => r.p50)} ms  B p99 ${m((r) => r.p99)} ms  B max ${m((r) => r.max)} ms  A 200/s ${m((r) => r.aOkPerS)}`);
  }
}

if (process.argv[2] === '--serve') serve(JSON.parse(process.argv[3]) as ServerOptions);
else main().catch((e: unknown) => { console.error(e); process.exit(1); });
