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
 * Groups (several chains in one process, `groupOf` naming a request's chain): the same fair
 * share one level up. The next request comes from the group with the least attained service
 * (decayed the same way) among the groups with requests waiting, then from the least-served
 * client of that group; a flood of one chain, from however many clients, gets at most an even
 * share of the process while another chain has requests waiting. Shedding is fair too: when the
 * queue is full, a request of a group holding less than its share of it (`maxQueued` ÷ the
 * groups with requests waiting, its own counted) is admitted, and the newest waiting request of
 * the group holding the most is answered 503 (`queue_full`) in its place; any other request
 * finding the queue full is answered 503 as without groups. A client is a client of one group:
 * `maxQueuedPerClient` and the attained service that orders clients are per (group, client), so
 * that a client flooding one chain (or a proxy in front of many users) still has its requests
 * to another chain queued and served in turn; one client may then have up to `maxQueuedPerClient`
 * waiting in each chain, all of them within `maxQueued`. Without `groupOf` there is one group and
 * everything is as described in the first paragraph: its cost per request is unchanged (no group
 * is looked up or charged; a turn does not compare groups).
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
  /**
   * which group (chain) a request belongs to, for the fair share between groups (see above);
   * absent: one group, the behaviour without groups
   */
  groupOf?: (req: IncomingMessage) => string;
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
  /** arrival order (which job of a group is the newest) */
  seq: number;
}

/** ms of this process's time used recently (decayed from `at`) */
interface Service {
  served: number;
  at: number;
}

interface Client extends Service {
  key: string;
  group: Group;
  jobs: Job[];
}

interface Group extends Service {
  key: string;
  /** its clients seen recently */
  clients: Map<string, Client>;
  /** those with requests waiting */
  waiting: Set<Client>;
  /** its requests waiting */
  queued: number;
}

export const peerAddress = (req: IncomingMessage): string => req.socket.remoteAddress ?? '';

export interface Admission {
  listener: RequestListener;
  /** requests waiting now */
  queued(): number;
  /** requests waiting now per group seen recently, 0s included (without `groupOf`: the one group '') */
  queuedBy(): Map<string, number>;
  /** stops its timers (the server around it is closing) */
  close(): void;
}

export function admission(app: RequestListener, o: AdmissionOptions): Admission {
  const clientOf = o.clientOf ?? peerAddress;
  const groupOf = o.groupOf;
  const newGroup = (key: string, now: number): Group => ({ key, clients: new Map(), waiting: new Set(), queued: 0, served: 0, at: now });
  /** without groupOf: the one group, never looked up nor compared */
  const single: Group | undefined = groupOf ? undefined : newGroup('', Date.now());
  /** every group seen recently (its clients' and its own attained service decay over HALF_LIFE_MS) */
  const groups = new Map<string, Group>(single ? [['', single]] : []);
  /** the groups with requests waiting (with groupOf only) */
  const waitingGroups = new Set<Group>();
  let queued = 0;
  let seq = 0;
  let scheduled = false;
  let running: { client: Client; started: number } | undefined;
  let burst: (Burst & { first: number; timer?: NodeJS.Timeout }) | undefined;
  /** how long a run takes, moving average (for Retry-After) */
  let avgRunMs = 1;

  const decayed = (c: Service, now: number): number => c.served * 2 ** (-(now - c.at) / HALF_LIFE_MS);
  const charge = (c: Service, now: number, ms: number): void => {
    c.served = decayed(c, now) + ms;
    c.at = now;
  };

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
    const body = errorJson(
      GRPC.UNAVAILABLE,
      reason === 'waited_too_long'
        ? `server busy: the request waited ${now - job.queuedAt} ms for its turn; retry after ${retryAfter} s`
        : `server busy: ${queued} requests are waiting${reason === 'client_queue_full' ? ', too many of them yours' : ''}; retry after ${retryAfter} s`,
    );
    const headers: string[] = [
      'Content-Type',
      'application/json; charset=utf-8',
      'Cache-Control',
      'no-store',
      'Retry-After',
      String(retryAfter),
      'Content-Length',
      String(Buffer.byteLength(body)),
      ...(o.extraHeaders?.(job.req) ?? []).flat(),
    ];
    job.res.writeHead(503, headers);
    job.res.end(job.req.method === 'HEAD' ? undefined : body);
  };

  /** `c` has one job fewer waiting (taken from its front or its back) */
  const left = (c: Client): void => {
    const g = c.group;
    queued--;
    g.queued--;
    if (c.jobs.length === 0) g.waiting.delete(c);
    if (g.queued === 0 && !single) waitingGroups.delete(g);
  };

  /** the group whose turn it is: the least served of those waiting */
  const nextGroup = (now: number): Group | undefined => {
    if (single) return single.queued > 0 ? single : undefined;
    let g: Group | undefined;
    let least = Infinity;
    for (const w of waitingGroups) {
      const s = decayed(w, now);
      if (s < least) {
        g = w;
        least = s;
      }
    }
    return g;
  };

  const turn = (): void => {
    scheduled = false;
    const now = Date.now();
    if (running) {
      // the previous run's cost: everything up to this turn, its microtasks and writes included
      const ms = now - running.started;
      charge(running.client, now, ms);
      if (!single) charge(running.client.group, now, ms);
      avgRunMs = avgRunMs * 0.9 + ms * 0.1;
      running = undefined;
    }
    for (;;) {
      const g = nextGroup(now);
      if (!g) return;
      let c: Client | undefined;
      let least = Infinity;
      for (const w of g.waiting) {
        const s = decayed(w, now);
        if (s < least) {
          c = w;
          least = s;
        }
      }
      c = c as Client;
      const job = c.jobs.shift() as Job;
      left(c);
      if (job.res.destroyed) continue;
      if (now - job.queuedAt > o.maxWaitMs) {
        shed(job, 'waited_too_long');
        continue;
      }
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

  /**
   * The queue is full and a request of `g` arrives: when `g` holds less than its share, the newest
   * waiting request of the group holding the most is shed (true: admit the arrival in its place).
   */
  const makeRoom = (g: Group): boolean => {
    const n = waitingGroups.size + (g.queued === 0 ? 1 : 0);
    if (g.queued * n >= o.maxQueued) return false;
    let most: Group | undefined;
    for (const w of waitingGroups) if (!most || w.queued > most.queued) most = w;
    // the n groups hold maxQueued: the most any holds is at least maxQueued ÷ n, more than g's
    if (!most || most === g) return false;
    let from: Client | undefined;
    for (const c of most.waiting) if (!from || c.jobs[c.jobs.length - 1].seq > from.jobs[from.jobs.length - 1].seq) from = c;
    if (!from) return false;
    const victim = from.jobs.pop() as Job;
    left(from);
    shed(victim, 'queue_full');
    return true;
  };

  const forget = setInterval(() => {
    const now = Date.now();
    for (const [gk, g] of groups) {
      for (const [k, c] of g.clients) if (c.jobs.length === 0 && now - c.at > 10 * HALF_LIFE_MS) g.clients.delete(k);
      if (g !== single && g.clients.size === 0 && now - g.at > 10 * HALF_LIFE_MS) groups.delete(gk);
    }
  }, 10 * HALF_LIFE_MS);
  forget.unref();

  const listener: RequestListener = (req, res) => {
    const url = req.url ?? '';
    const q = url.indexOf('?');
    if (UNQUEUED.has(q < 0 ? url : url.slice(0, q))) {
      app(req, res);
      return;
    }
    const job: Job = { req, res, queuedAt: Date.now(), seq: seq++ };
    const full = queued >= o.maxQueued;
    if (full && single) {
      shed(job, 'queue_full');
      return;
    }
    let g = single;
    if (!g) {
      const gk = (groupOf as (req: IncomingMessage) => string)(req);
      g = groups.get(gk);
      if (!g) {
        g = newGroup(gk, job.queuedAt);
        groups.set(gk, g);
      }
    }
    const key = clientOf(req);
    let c = g.clients.get(key);
    if (c && c.jobs.length >= o.maxQueuedPerClient) {
      shed(job, 'client_queue_full');
      return;
    }
    if (full && !makeRoom(g)) {
      shed(job, 'queue_full');
      return;
    }
    if (!c) {
      c = { key, group: g, jobs: [], served: 0, at: job.queuedAt };
      g.clients.set(key, c);
    }
    c.jobs.push(job);
    g.waiting.add(c);
    if (g.queued++ === 0 && !single) waitingGroups.add(g);
    queued++;
    schedule();
  };
  return {
    listener,
    queued: () => queued,
    queuedBy: () => new Map([...groups].map(([k, g]) => [k, g.queued])),
    close: () => {
      clearInterval(forget);
      if (burst) clearTimeout(burst.timer);
    },
  };
}
