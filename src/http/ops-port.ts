import { fsReason } from '../lib/paths';
import { Worker } from 'node:worker_threads';

/**
 * `serve --ops-port`: /health, /ready and /metrics on a port of their own, answered by a thread
 * that runs no query (docs/reliability.md#overload). The serving thread (or, in a cluster, the
 * primary on behalf of its workers) posts what the three answers are about once a second, and
 * at once when its readiness changes; a thread that is busy in a long query simply posts later,
 * and the answers say how old they are.
 *
 * /health is 200 while the serving side has reported within HEALTH_STALE_MS (a process that has
 * not been able to report for that long is stuck: let the orchestrator restart it); /ready is
 * the last reported readiness while it is younger than READY_STALE_MS, 503 after.
 */

export interface OpsState {
  /** when the serving side produced this report, ms since the epoch */
  at: number;
  ready: boolean;
  /** /ready's JSON body, 200 or 503 */
  readyBody: string;
  /** /metrics: Prometheus text */
  metrics: string;
  metricsType: string;
}

export const REPORT_EVERY_MS = 1_000;
export const READY_STALE_MS = 10_000;
export const HEALTH_STALE_MS = 60_000;

export interface OpsPort {
  url: string;
  post(state: OpsState): void;
  close(): Promise<void>;
}

/**
 * The thread's whole program. It runs as evaluated code (the bundle and the single executable
 * have no separate file for it), so it must not refer to anything outside itself.
 */
function opsThread(): void {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { parentPort, workerData } = require('node:worker_threads') as typeof import('node:worker_threads');
  const { createServer } = require('node:http') as typeof import('node:http');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const d = workerData as { host: string; port: number; readyStaleMs: number; healthStaleMs: number };
  let state: OpsState | undefined;
  const json = (res: import('node:http').ServerResponse, status: number, body: string, type = 'application/json'): void => {
    res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  };
  const err = (code: number, message: string): string => JSON.stringify({ code, message, details: [] });
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/health' && path !== '/ready' && path !== '/metrics') {
      json(res, 404, err(5, 'not found: the operations port answers /health, /ready and /metrics'));
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      json(res, 405, err(12, `method not allowed: ${String(req.method).slice(0, 20)} ${path}`));
      return;
    }
    const age = state ? Date.now() - state.at : Infinity;
    if (path === '/health') {
      if (age <= d.healthStaleMs) json(res, 200, '{"status":"ok"}');
      else json(res, 503, err(14, state ? `the serving process has not reported for ${age} ms` : 'the serving process has not reported yet'));
    } else if (path === '/ready') {
      if (!state) json(res, 503, err(14, 'starting'));
      else if (age > d.readyStaleMs) json(res, 503, err(14, `the serving process has not reported for ${age} ms`));
      else json(res, state.ready ? 200 : 503, state.readyBody);
    } else if (!state) {
      json(res, 503, err(14, 'no metrics reported yet'));
    } else {
      json(res, 200, state.metrics, state.metricsType);
    }
  });
  parentPort?.on('message', (m: OpsState | 'close') => {
    if (m === 'close') {
      server.close(() => process.exit(0));
      server.closeAllConnections();
      return;
    }
    state = m;
  });
  server.once('error', (e: NodeJS.ErrnoException) => {
    parentPort?.postMessage({ error: fsReason(e) });
  });
  server.listen(d.port, d.host, () => {
    const a = server.address() as import('node:net').AddressInfo;
    parentPort?.postMessage({ listening: `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}` });
  });
}

/** Starts the operations thread listening on host:port; rejects with one line if it cannot. */
export function startOpsPort(host: string, port: number): Promise<OpsPort> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(`(${opsThread.toString()})()`, {
      eval: true,
      workerData: { host, port, readyStaleMs: READY_STALE_MS, healthStaleMs: HEALTH_STALE_MS },
    });
    worker.unref();
    let exited: Promise<void> | undefined;
    worker.once('error', (e) => reject(new Error(`--ops-port: ${e.message}`)));
    worker.once('message', (m: { listening?: string; error?: string }) => {
      if (m.error !== undefined) {
        void worker.terminate();
        reject(new Error(`cannot listen on ${host}:${port} (--ops-port): ${m.error}`));
        return;
      }
      resolve({
        url: m.listening as string,
        post: (state) => worker.postMessage(state),
        close: () =>
          (exited ??= new Promise<void>((done) => {
            worker.once('exit', () => done());
            worker.postMessage('close');
          })),
      });
    });
  });
}

/**
 * How often the serving side looks whether its readiness changed, to report it at once: the
 * balancer's check (deploy/haproxy.cfg, every 500 ms, `rise 1`) must not see a readiness older
 * than that. With reports only once a second, a replica that had just become ready still
 * answered "no snapshot is loaded" here for up to a second; HAProxy, which starts a server at
 * the edge of up and takes it out on one failed check, then had all three replicas out at once
 * (the 3-replica scale test lost ~1,300 requests, test/scale/replicas.test.ts).
 */
export const READINESS_POLL_MS = 50;

export interface Reporter {
  /** reports now, out of turn (e.g. readiness changed); the last report sent is never an older one */
  now(): void;
  stop(): void;
}

/**
 * Reports, now and every REPORT_EVERY_MS, what `report()` says (readiness and metrics) to
 * `send`; also at once whenever `changed()` (asked every READINESS_POLL_MS, so it must be cheap)
 * returns true. A report that fails is skipped; one that finishes after a later one started is
 * dropped, so an old readiness never replaces a newer one.
 */
export function reportEvery<T>(report: () => Promise<T>, send: (state: T) => void, changed?: () => boolean): Reporter {
  let stopped = false;
  let started = 0;
  let sent = 0;
  const once = (): void => {
    const n = ++started;
    report().then(
      (s) => {
        if (stopped || n < sent) return;
        sent = n;
        send(s);
      },
      () => {},
    );
  };
  once();
  const timer = setInterval(once, REPORT_EVERY_MS);
  timer.unref();
  const poll = changed
    ? setInterval(() => {
        if (changed()) once();
      }, READINESS_POLL_MS)
    : undefined;
  poll?.unref();
  return {
    now: once,
    stop: () => {
      stopped = true;
      clearInterval(timer);
      clearInterval(poll);
    },
  };
}

/** `changed` for reportEvery: true when `current()` differs from what it was at the last call. */
export function changeOf(current: () => string): () => boolean {
  let last = current();
  return () => {
    const now = current();
    if (now === last) return false;
    last = now;
    return true;
  };
}
