import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { errorJson, GRPC } from './errors';

/**
 * Admission and fair share of one serving process (docs/reliability.md#overload).
 *
 * better-sqlite3 answers synchronously: while one request's query runs, every other request of
 * this process waits, and Node would run the waiting ones first come, first served. Here each
 * request is queued instead and run one per event-loop turn, the next one always from the
 * client that has recently used the least time (its attained service, decaying with a half-life
 * of HALF_LIFE_MS). A client repeating expensive requests therefore waits behind the others; a
 * client asking for cheap things is answered after at most the one request already running.
 * Work waiting is bounded: beyond `maxQueued` requests in this process, `maxQueuedPerClient`
 * from one client, or `maxWaitMs` spent waiting, a request is answered at once with a 503 and
 * `Retry-After` instead of being run.
 *
 * The operations endpoints are never queued (they run no query).
 */

export interface AdmissionOptions {
  /** requests waiting in this process; one more gets a 503 at once */
  maxQueued: number;
  /** requests one client may have waiting; one more gets a 503 at once */
  maxQueuedPerClient: number;
  /** a request that has waited this long when its turn comes gets a 503 instead of running, ms */
  maxWaitMs: number;
  /** which client a request comes from (the peer address unless a trusted proxy names it) */
  clientOf?: (req: IncomingMessage) => string;
  /** headers every answer carries (CORS), added to the 503 */
  extraHeaders?: (req: IncomingMessage) => [string, string][];
  /** a request answered 503 here (for the metrics) */
  onShed?: (reason: ShedReason) => void;
  /** the end of a burst of 503s: one call per burst (for one log line) */
  onBurst?: (burst: Burst) => void;
}

export type ShedReason = 'queue_full' | 'client_queue_full' | 'waited_too_long';

export interface Burst {
  shed: number;
  by_reason: Record<ShedReason, number>;
  ms: number;
  max_queued: number;
}

/** The paths answered without queueing: they read no snapshot table (src/http/ops.ts). */
const UNQUEUED = new Set(['/health', '/ready', '/metrics']);
const HALF_LIFE_MS = 1_000;
/** A burst ends after this long without a 503. */
const BURST_QUIET_MS = 1_000;

interface Job {
  req: IncomingMessage;
  res: ServerResponse;
  queuedAt: number;
}

interface Client {
  key: string;
  jobs: Job[];
  /** ms of this process's time used recently (decayed) */
  served: number;
  at: number;
}

export const peerAddress = (req: IncomingMessage): string => req.socket.remoteAddress ?? '';

export interface Admission {
  listener: RequestListener;
  /** requests waiting now */
  queued(): number;
  /** stops its timers (the server around it is closing) */
  close(): void;
}

export function admission(app: RequestListener, o: AdmissionOptions): Admission {
  const clientOf = o.clientOf ?? peerAddress;
  /** every client seen recently (its attained service decays over HALF_LIFE_MS) */
  const clients = new Map<string, Client>();
  /** those with requests waiting */
  const waiting = new Set<Client>();
  let queued = 0;
  let scheduled = false;
  let running: { client: Client; started: number } | undefined;
  let burst: (Burst & { first: number; timer?: NodeJS.Timeout }) | undefined;
  /** how long a run takes, moving average (for Retry-After) */
  let avgRunMs = 1;

  const decayed = (c: Client, now: number): number => c.served * 2 ** (-(now - c.at) / HALF_LIFE_MS);

  const endBurst = (): void => {
    if (!burst) return;
    const { shed: n, by_reason, ms, max_queued } = burst;
    burst = undefined;
    o.onBurst?.({ shed: n, by_reason, ms, max_queued });
  };

  const shed = (job: Job, reason: ShedReason): void => {
    const now = Date.now();
    o.onShed?.(reason);
    burst ??= { shed: 0, by_reason: { queue_full: 0, client_queue_full: 0, waited_too_long: 0 }, ms: 0, max_queued: 0, first: now };
    burst.shed++;
    burst.by_reason[reason]++;
    burst.max_queued = Math.max(burst.max_queued, queued);
    burst.ms = now - burst.first;
    clearTimeout(burst.timer);
    burst.timer = setTimeout(endBurst, BURST_QUIET_MS);
    burst.timer.unref();
    if (job.res.destroyed || job.res.headersSent) return;
    const retryAfter = Math.max(1, Math.ceil((queued * avgRunMs) / 1000));
    const body = errorJson(GRPC.UNAVAILABLE, reason === 'waited_too_long'
      ? `server busy: the request waited ${now - job.queuedAt} ms for its turn; retry after ${retryAfter} s`
      : `server busy: ${queued} requests are waiting${reason === 'client_queue_full' ? ', too many of them yours' : ''}; retry after ${retryAfter} s`);
    const headers: string[] = [
      'Content-Type', 'application/json; charset=utf-8', 'Cache-Control', 'no-store',
      'Retry-After', String(retryAfter), 'Content-Length', String(Buffer.byteLength(body)),
      ...(o.extraHeaders?.(job.req) ?? []).flat(),
    ];
    job.res.writeHead(503, headers);
    job.res.end(job.req.method === 'HEAD' ? undefined : body);
  };

  const turn = (): void => {
    scheduled = false;
    const now = Date.now();
    if (running) {
      // the previous run's cost: everything up to this turn, its microtasks and writes included
      const ms = now - running.started;
      const c = running.client;
      c.served = decayed(c, now) + ms;
      c.at = now;
      avgRunMs = avgRunMs * 0.9 + ms * 0.1;
      running = undefined;
    }
    for (;;) {
      let c: Client | undefined;
      let least = Infinity;
      for (const w of waiting) {
        const s = decayed(w, now);
        if (s < least) { c = w; least = s; }
      }
      if (!c) return;
      const job = c.jobs.shift() as Job;
      queued--;
      if (c.jobs.length === 0) waiting.delete(c);
      if (job.res.destroyed) continue;
      if (now - job.queuedAt > o.maxWaitMs) { shed(job, 'waited_too_long'); continue; }
      running = { client: c, started: now };
      app(job.req, job.res);
      schedule();
      return;
    }
  };

  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(turn);
  };

  const forget = setInterval(() => {
    const now = Date.now();
    for (const [k, c] of clients) if (c.jobs.length === 0 && now - c.at > 10 * HALF_LIFE_MS) clients.delete(k);
  }, 10 * HALF_LIFE_MS);
  forget.unref();

  const listener: RequestListener = (req, res) => {
    const url = req.url ?? '';
    const q = url.indexOf('?');
    if (UNQUEUED.has(q < 0 ? url : url.slice(0, q))) { app(req, res); return; }
    const job: Job = { req, res, queuedAt: Date.now() };
    if (queued >= o.maxQueued) { shed(job, 'queue_full'); return; }
    const key = clientOf(req);
    let c = clients.get(key);
    if (c && c.jobs.length >= o.maxQueuedPerClient) { shed(job, 'client_queue_full'); return; }
    if (!c) {
      c = { key, jobs: [], served: 0, at: job.queuedAt };
      clients.set(key, c);
    }
    c.jobs.push(job);
    waiting.add(c);
    queued++;
    schedule();
  };
  return { listener, queued: () => queued, close: () => { clearInterval(forget); if (burst) clearTimeout(burst.timer); } };
}
