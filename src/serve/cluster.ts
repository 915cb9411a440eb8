import cluster, { Worker } from 'node:cluster';
import { isSingleExecutable } from '../assets';
import type { Logger } from '../lib/log';

/**
 * `serve --workers N`: the primary forks N workers that share the port (each runs the same
 * command line and opens its own read-only snapshot), restarts one that crashes, and forwards
 * SIGHUP (hot swap) and SIGTERM/SIGINT (graceful shutdown) to all of them.
 *
 * The primary forks first and loads nothing else — no snapshot, no HTTP stack — so that the
 * workers start at once (cold start). A worker that cannot start sends the reason
 * (WorkerMessage 'fatal') instead of printing it, and the primary prints it once; a worker
 * whose files passed their start-up check sends what it serves ('serving'); the primary's one
 * line on stderr comes once every worker has (each checks the files itself, and until its check
 * passes a chain of a replica of several answers 503 on that worker); one
 * that meets a damaged file sends 'fault', which the primary passes to the others.
 */

export type WorkerMessage =
  | { indexerApi: 'fatal'; message: string }
  /** a worker that was listening found its snapshot unservable (start-up check): stop them all */
  | { indexerApi: 'refused'; message: string }
  | { indexerApi: 'serving'; chainId: string; vmType: string; height: number; what?: string; check?: string }
  /**
   * a request of this worker met a storage error on snapshot `snapshotId`: the primary passes it
   * to the other workers, so the whole replica leaves rotation (/ready 503), not one worker of it
   */
  | { indexerApi: 'fault'; snapshotId: string; code?: string; message: string }
  /** --ops-port: this worker's readiness and metrics (prom-client's JSON), once a second */
  | { indexerApi: 'ops'; at: number; ready: boolean; readyBody: string; metrics: unknown[] };

/**
 * What the primary tells the workers: a refusal noted under `key` (serve --pull: a manifest of
 * another chain, `refused` undefined once cleared), for the holder's notServed() — so /ready of
 * every worker lists it.
 */
export type PrimaryMessage = { indexerApi: 'note'; key: string; refused?: { file: string; error: string } };

/** The primary's newest note of each key: sent to each worker once it listens, and to all when one changes. */
export class PrimaryNotes {
  private readonly last = new Map<string, PrimaryMessage>();
  private readonly listeners = new Set<(m: PrimaryMessage) => void>();

  set(key: string, refused: { file: string; error: string } | undefined): void {
    const m: PrimaryMessage = { indexerApi: 'note', key, ...(refused === undefined ? {} : { refused }) };
    this.last.set(key, m);
    for (const l of this.listeners) l(m);
  }

  all(): PrimaryMessage[] {
    return [...this.last.values()];
  }

  onChange(l: (m: PrimaryMessage) => void): void {
    this.listeners.add(l);
  }
}

/** In a worker: tells the primary (see WorkerMessage); resolves once sent. */
export function tellPrimary(m: WorkerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) {
      resolve();
      return;
    }
    process.send(m, undefined, {}, () => resolve());
  });
}

export interface PrimaryOptions {
  file: string;
  workers: number;
  logger: Logger;
  /** the workers' --shutdown-timeout-ms: one still alive KILL_GRACE_MS after it is killed */
  shutdownTimeoutMs: number;
  /** --ops-port: the primary answers /health, /ready, /metrics for all workers there */
  ops?: { host: string; port: number };
  /** --base-url (parseBaseUrl's form): the "serving … on URL" line names it */
  baseUrl?: string;
  /** what the workers are told (PrimaryNotes) */
  notes?: PrimaryNotes;
}

/** A worker that dies sooner than this after its start counts toward the restart back-off. */
const STABLE_MS = 5_000;
const MAX_BACKOFF_MS = 10_000;
/**
 * A worker cuts its connections at its shutdown timeout, but only once its event loop runs: one
 * blocked in a long synchronous query cannot. The primary kills what is still alive this long
 * after the timeout, so a shutdown always ends (systemd and Kubernetes would kill it later anyway).
 */
const KILL_GRACE_MS = 2_000;

export async function runPrimary(o: PrimaryOptions): Promise<number> {
  const ops = o.ops ? await primaryOps(o.ops, o.logger) : undefined;
  try {
    return await runWorkers(o, ops?.receive);
  } finally {
    await ops?.close();
  }
}

/**
 * The primary runs no query: it answers the operations port for the whole cluster from what
 * each worker reported last (src/http/ops-port.ts). Ready while any worker is; metrics summed
 * over the workers (prom-client's aggregation), each worker's last report.
 */
async function primaryOps(
  at: { host: string; port: number },
  logger: Logger,
): Promise<{ receive(w: Worker, m: Extract<WorkerMessage, { indexerApi: 'ops' }>): void; close(): Promise<void> }> {
  const [{ startOpsPort, reportEvery, READY_STALE_MS, HEALTH_STALE_MS }, { AggregatorRegistry }] = await Promise.all([
    import('../http/ops-port'),
    import('prom-client'),
  ]);
  const port = await startOpsPort(at.host, at.port);
  logger.info('operations port listening', { url: port.url });
  const last = new Map<number, Extract<WorkerMessage, { indexerApi: 'ops' }>>();
  const reporter = reportEvery(
    async () => {
      const now = Date.now();
      for (const [pid, r] of last) if (now - r.at > HEALTH_STALE_MS) last.delete(pid);
      const reports = [...last.values()];
      if (reports.length === 0) return undefined;
      const fresh = reports.filter((r) => now - r.at <= READY_STALE_MS);
      const ready = fresh.find((r) => r.ready) ?? fresh[0] ?? reports[0];
      const registry = AggregatorRegistry.aggregate((fresh.length ? fresh : reports).map((r) => r.metrics) as never);
      return {
        at: Math.max(...reports.map((r) => r.at)),
        ready: ready.ready,
        readyBody: ready.readyBody,
        metrics: await registry.metrics(),
        metricsType: registry.contentType,
      };
    },
    (s) => {
      if (s) port.post(s);
    },
  );
  return {
    receive: (w, m) => {
      if (w.process.pid === undefined) return;
      const before = last.get(w.process.pid);
      last.set(w.process.pid, m);
      // a worker's readiness changed (it reports that at once): answer it now, not next second
      if (before?.readyBody !== m.readyBody) reporter.now();
    },
    close: async () => {
      reporter.stop();
      await port.close();
    },
  };
}

function runWorkers(
  { file, workers, logger, shutdownTimeoutMs, baseUrl = '', notes }: PrimaryOptions,
  onOps?: (w: Worker, m: Extract<WorkerMessage, { indexerApi: 'ops' }>) => void,
): Promise<number> {
  if (isSingleExecutable()) {
    // fork() runs execPath with [exec, ...args]; a single executable ignores a script path but
    // sees it as its first argument, so the first argument is passed there instead.
    cluster.setupPrimary({ exec: process.argv[2], args: process.argv.slice(3) });
  }
  return new Promise<number>((resolve) => {
    let stopping = false;
    let anyListening = false;
    let fatal = false;
    let serving: Extract<WorkerMessage, { indexerApi: 'serving' }> | undefined;
    /** the workers that said they serve (a worker restarted before it did is another worker) */
    const servingWorkers = new Set<number>();
    let listeningAt: string | undefined;
    let crashes = 0;
    const started = new Map<Worker, number>();
    const exitCodes: number[] = [];

    const fork = (): void => {
      const w = cluster.fork();
      started.set(w, Date.now());
      logger.info('worker started', { worker: w.id, pid: w.process.pid });
    };
    const alive = (): number => Object.keys(cluster.workers ?? {}).length;
    const stopAll = (signal: NodeJS.Signals): void => {
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill(signal);
    };
    const stopped = (): void => {
      logger.info('stopped', { pid: process.pid });
      logger.flush();
      resolve(exitCodes.every((c) => c === 0) ? 0 : 1);
    };

    const announce = (): void => {
      if (!serving || !listeningAt || servingWorkers.size < workers) return;
      // a replica of several chains says what it serves (`what`, src/commands/serve.ts)
      const check = serving.check === undefined ? '' : `; ${serving.check}`;
      const what = serving.what ?? `${file} (${serving.chainId}, ${serving.vmType}, height ${serving.height}${check})`;
      process.stderr.write(`indexer-api: serving ${what} on ${listeningAt} (${workers} workers)\n`);
    };
    cluster.on('message', (w, m: WorkerMessage) => {
      if (m?.indexerApi === 'ops') {
        onOps?.(w, m);
        return;
      }
      if (m?.indexerApi === 'fault') {
        for (const other of Object.values(cluster.workers ?? {})) if (other && other !== w && other.isConnected()) other.send(m);
        return;
      }
      if (m?.indexerApi === 'serving') {
        const first = servingWorkers.size < workers;
        servingWorkers.add(w.id);
        serving ??= m;
        if (first) announce();
      }
      if (m?.indexerApi === 'refused') {
        if (!fatal) process.stderr.write(`indexer-api: ${m.message}\n`);
        fatal = true;
        if (!stopping) {
          stopping = true;
          exitCodes.push(1);
          stopAll('SIGTERM');
        }
        return;
      }
      if (m?.indexerApi === 'fatal') {
        if (anyListening) {
          logger.error('worker failed to start', { worker: w.id, pid: w.process.pid, error: m.message });
          return;
        }
        // One clear line, once, however many workers failed the same way.
        if (!fatal) process.stderr.write(`indexer-api: ${m.message}\n`);
        fatal = true;
      }
    });
    notes?.onChange((m) => {
      for (const w of Object.values(cluster.workers ?? {})) if (w?.isConnected()) w.send(m);
    });
    cluster.on('listening', (w, addr) => {
      // a worker listens once its stack is assembled (its message handler in place): what it must know
      for (const m of notes?.all() ?? []) if (w.isConnected()) w.send(m);
      if (anyListening) return;
      anyListening = true;
      const host = addr.addressType === 6 || String(addr.address).includes(':') ? `[${addr.address}]` : addr.address;
      listeningAt = `http://${host}:${addr.port}${baseUrl}`;
      announce();
    });
    cluster.on('exit', (w, code, signal) => {
      const lived = Date.now() - (started.get(w) ?? 0);
      started.delete(w);
      if (stopping) {
        // a worker still booting when the SIGTERM came has no handler for it yet: asked to stop, it stopped
        exitCodes.push(code ?? (signal === 'SIGTERM' ? 0 : 1));
        if (alive() === 0) stopped();
        return;
      }
      if (!anyListening) {
        // Could not even start (the worker told why, printed above): do not loop.
        logger.error('worker failed to start; stopping', { worker: w.id, pid: w.process.pid, code, signal });
        stopping = true;
        exitCodes.push(1);
        stopAll('SIGTERM');
        if (alive() === 0) stopped();
        return;
      }
      crashes = lived < STABLE_MS ? crashes + 1 : 0;
      const delay = crashes === 0 ? 0 : Math.min(MAX_BACKOFF_MS, 100 * 2 ** (crashes - 1));
      logger.error('worker exited; restarting it', { worker: w.id, pid: w.process.pid, code, signal, restart_in_ms: delay });
      setTimeout(() => {
        if (!stopping) fork();
      }, delay);
    });

    process.on('SIGHUP', () => {
      logger.info('reload requested; forwarding SIGHUP to the workers', { pid: process.pid });
      stopAll('SIGHUP');
    });
    const stop = (signal: NodeJS.Signals) => (): void => {
      if (stopping) return;
      stopping = true;
      logger.info('shutting down', { signal, pid: process.pid });
      stopAll('SIGTERM');
      setTimeout(() => {
        const left = Object.values(cluster.workers ?? {}).filter((w) => w !== undefined);
        if (left.length === 0) return;
        logger.warn('workers still running after the shutdown timeout: killed', {
          pids: left.map((w) => w.process.pid),
          shutdown_timeout_ms: shutdownTimeoutMs,
        });
        exitCodes.push(1);
        for (const w of left) w.process.kill('SIGKILL');
      }, shutdownTimeoutMs + KILL_GRACE_MS).unref();
      // every worker may be between a crash and its restart
      if (alive() === 0) stopped();
    };
    process.on('SIGTERM', stop('SIGTERM'));
    process.on('SIGINT', stop('SIGINT'));

    for (let i = 0; i < workers; i++) fork();
  });
}
