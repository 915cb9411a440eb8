import cluster from 'node:cluster';
import type { CommandModule } from 'yargs';
import { runPrimary, tellPrimary, WorkerMessage } from '../cluster';
import { demoSnapshotPath } from '../demo';
import { DEFAULT_LIMITS, Limits } from '../http/limits';
import { announceFromPrimary, awaitPrimaryAnnouncement, StdoutGate, stdoutGate } from '../listen-line';
import { createLogger, errorFields, Logger, LogLevel } from '../http/log';
import { parseDuration } from '../pull/duration';
import { SERVE_DEFAULTS, SERVE_OPTIONS } from './options';
import type { SnapshotHolder as SnapshotHolderType } from '../snapshot/holder';
import type { Snapshot, VmType } from '../snapshot/open';

export interface ServeOptions {
  db?: string;
  demo: VmType;
  host: string;
  port: number;
  corsOrigin: string;
  /** quick-check the file at start, while listening with /ready 503 (renamed-over files are always checked) */
  verify: boolean;
  /** answer one GET in-process, print the body, exit 0 iff 200 */
  get?: string;
  /** default info; warn and error drop the per-request lines */
  logLevel?: LogLevel;
  /** Cache-Control max-age of a 200, seconds (default 1) */
  cacheMaxAge?: number;
  /** response cache byte cap (default 64 MiB) and entry cap (default 100,000); either 0 = no cache */
  cacheEntries?: number;
  cacheBytes?: number;
  /** reload when the file at --db is replaced (default true), and the stat poll interval */
  watch?: boolean;
  watchPollMs?: number;
  requestTimeoutMs?: number;
  headersTimeoutMs?: number;
  keepAliveTimeoutMs?: number;
  maxHeaderSize?: number;
  maxUrlLength?: number;
  /** in-flight requests get this long to finish on SIGTERM before connections are cut */
  shutdownTimeoutMs?: number;
  /** the built-in explorer at / (default true; --no-explorer: / is the JSON 404 again) */
  explorer?: boolean;
  /** processes serving the port; 1 (the default here; the CLI's is the core count) = no cluster */
  workers?: number;
  /** /ready answers 503 when the newest block is older than this many seconds (off by default) */
  maxLagS?: number;
  /** how often to look for a batch committed by `follow` (PRAGMA data_version), ms; 0 = never */
  commitPollMs?: number;
  /** `--pull URL/manifest.json`: keep --db equal to a publish directory's newest file (src/pull/) */
  pull?: string;
  /** poll interval of --pull: "30s", "500ms", "2m" or seconds */
  pullInterval?: string | number;
}

/**
 * Express, the OpenAPI validator, prom-client, the OpenAPI document and better-sqlite3 are loaded
 * only by a process that serves: a cluster primary never needs them, and they are on the
 * critical path of cold start.
 */
async function httpStack() {
  const [{ createApp, createRequestListener }, { createMetrics }, { loadOpenApi }, { startServer }, { SnapshotHolder }, { ResponseCache }, live, verify] = await Promise.all([
    import('../app'), import('../http/ops'), import('../openapi'), import('../server'), import('../snapshot/holder'), import('../http/caching'),
    import('../follow/live'), import('../snapshot/verify'),
  ]);
  return { createApp, createRequestListener, createMetrics, loadOpenApi, startServer, SnapshotHolder, ResponseCache, live, verify };
}

/** Opens the snapshot (or the bundled demo), serves it until SIGTERM/SIGINT, then exits 0. */
export async function runServe(o: ServeOptions): Promise<number> {
  const file = o.db ?? demoSnapshotPath(o.demo);
  const workers = o.get !== undefined ? 1 : o.workers ?? 1;
  if (!Number.isSafeInteger(workers) || workers < 1) throw new Error(`--workers must be a whole number ≥ 1, got ${o.workers}`);
  // In a cluster every process writes to the same stdout: each line says whose it is.
  // --port 0: stdout's first line names the port the kernel picked (src/listen-line.ts)
  const gate = o.port === 0 && o.get === undefined ? stdoutGate() : undefined;
  const logger = createLogger(o.logLevel ?? 'info', gate?.write, workers > 1 ? { pid: process.pid } : {});
  if (o.pull !== undefined && o.db === undefined) throw new Error('--pull needs --db: the local file the pulled snapshot is kept in');
  if (workers > 1 && cluster.isPrimary) {
    if (gate) announceFromPrimary(gate);
    if (o.pull !== undefined && o.get === undefined) {
      const { pullBeforeFork } = await import('../pull/serve-pull');
      const puller = await pullBeforeFork(file, pullOptions(o), logger);
      try {
        await preflight(file, o);
        return await runPrimary({ file, workers, logger, shutdownTimeoutMs: o.shutdownTimeoutMs ?? SERVE_DEFAULTS.shutdownTimeoutMs });
      } finally { puller.close(); }
    }
    // Refusals a worker would meet are found here first: one line, exit 1, nothing forked.
    await preflight(file, o);
    return runPrimary({ file, workers, logger, shutdownTimeoutMs: o.shutdownTimeoutMs ?? SERVE_DEFAULTS.shutdownTimeoutMs });
  }
  if (gate && cluster.isWorker) awaitPrimaryAnnouncement(gate);
  if (o.get !== undefined) return answerOne(file, o, o.get);
  if (!cluster.isWorker) return serve(file, o, logger, gate);
  try {
    return await serve(file, o, logger, gate);
  } catch (e) {
    // The primary prints it, once for all workers (src/cluster.ts).
    await tellPrimary({ indexerApi: 'fatal', message: (e as Error).message });
    cluster.worker?.disconnect();
    return 1;
  }
}

function pullOptions(o: ServeOptions): { pull: string; pullIntervalMs: number; verify: boolean } {
  return { pull: o.pull as string, pullIntervalMs: parseDuration(o.pullInterval ?? SERVE_DEFAULTS.pullInterval, '--pull-interval'), verify: o.verify };
}

/**
 * What the cluster primary checks before it forks, without loading better-sqlite3 (a primary
 * stays light): the snapshot file's path, SQLite header, size and schema version (the checks
 * that need SQLite — meta, --verify — stay in the workers), and that the address can be
 * listened on. Each failure throws one message (the CLI prints it as one line).
 */
async function preflight(file: string, o: ServeOptions): Promise<void> {
  const { checkSnapshotHeader } = await import('../snapshot/file-check');
  checkSnapshotHeader(file);
  if (o.port === 0) return;
  const { createServer } = await import('node:net');
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (e: NodeJS.ErrnoException) => {
      reject(new Error(`cannot listen on ${o.host}:${o.port}: ${e.code === 'EADDRINUSE' ? 'address in use' : e.code ?? e.message}`));
    });
    probe.listen(o.port, o.host, () => probe.close(() => resolve()));
  });
}

function limitsOf(o: ServeOptions): Limits {
  return {
    requestTimeoutMs: o.requestTimeoutMs ?? DEFAULT_LIMITS.requestTimeoutMs,
    headersTimeoutMs: o.headersTimeoutMs ?? DEFAULT_LIMITS.headersTimeoutMs,
    keepAliveTimeoutMs: o.keepAliveTimeoutMs ?? DEFAULT_LIMITS.keepAliveTimeoutMs,
    maxHeaderSize: o.maxHeaderSize ?? DEFAULT_LIMITS.maxHeaderSize,
    maxUrlLength: o.maxUrlLength ?? DEFAULT_LIMITS.maxUrlLength,
  };
}

function describe(s: Snapshot): Record<string, unknown> {
  return { file: s.file, snapshot_id: s.meta.snapshotId, chain_id: s.meta.chainId, height: s.meta.height };
}

/** Resolves with the signal that asks this process to stop; `off()` removes the handlers. */
function stopSignal(): { stopped: Promise<string>; stop(reason: string): void; off(): void } {
  let stop: (signal: string) => void = () => {};
  const stopped = new Promise<string>((resolve) => { stop = resolve; });
  const onTerm = (): void => stop('SIGTERM');
  const onInt = (): void => stop('SIGINT');
  // A worker whose primary is gone has nobody to restart or stop it.
  const onDisconnect = (): void => stop('disconnect');
  process.on('SIGTERM', onTerm);
  process.on('SIGINT', onInt);
  if (cluster.isWorker) process.on('disconnect', onDisconnect);
  return {
    stopped,
    stop: (reason) => stop(reason),
    off() {
      process.off('SIGTERM', onTerm);
      process.off('SIGINT', onInt);
      process.off('disconnect', onDisconnect);
    },
  };
}

/** One process serving the port (alone, or as a cluster worker) until SIGTERM/SIGINT. */
async function serve(file: string, o: ServeOptions, logger: Logger, gate?: StdoutGate): Promise<number> {
  // Signals are handled from here on: SIGTERM/SIGINT arriving during start-up stop the server
  // as soon as it listens (exit 0), SIGHUP is a reload.
  const signals = stopSignal();
  let opened: SnapshotHolderType | undefined;
  const reload = (): void => { opened?.reload('SIGHUP'); };
  process.on('SIGHUP', reload);
  let stack;
  let puller: import('../pull/puller').Puller | undefined;
  try {
    stack = await httpStack();
    // Every replacement is quick-checked on a worker thread before it is swapped in (the old
    // file serves meanwhile); --no-verify only skips the check at start. A cluster worker serves
    // what its primary pulls (the rename is a hot swap).
    const check = stack.verify.checkPages;
    if (o.pull !== undefined && !cluster.isWorker) {
      const { holderForPull } = await import('../pull/serve-pull');
      ({ holder: opened, puller } = await holderForPull(file, pullOptions(o), stack.SnapshotHolder, logger, check));
    } else {
      opened = stack.SnapshotHolder.open(file, { check });
    }
  } catch (e) {
    signals.off();
    process.off('SIGHUP', reload);
    throw e;
  }
  const holder = opened;
  const { createRequestListener, createMetrics, loadOpenApi, startServer, ResponseCache, live } = stack;
  if (o.maxLagS !== undefined && !(o.maxLagS > 0)) throw new Error(`--max-lag-s must be a number of seconds > 0, got ${o.maxLagS}`);
  const cacheEntries = o.cacheEntries ?? SERVE_DEFAULTS.cacheEntries;
  const cacheBytes = o.cacheBytes ?? SERVE_DEFAULTS.cacheBytes;
  for (const [name, v] of [['--cache-bytes', cacheBytes], ['--cache-entries', cacheEntries]] as const) {
    if (!Number.isSafeInteger(v) || v < 0) throw new Error(`${name} must be a whole number ≥ 0, got ${v}`);
  }
  const responseCache = cacheEntries > 0 && cacheBytes > 0 ? new ResponseCache(cacheBytes, cacheEntries) : undefined;
  const metrics = createMetrics(() => holder.current(), responseCache);
  live.registerLagMetrics(metrics.registry, () => holder.current());
  holder.on('swap', (next: Snapshot, previous: Snapshot | undefined, reason: string) => {
    metrics.swapped();
    responseCache?.clear();
    // A batch committed by `follow` (src/follow/live.ts) is routine: debug, not info.
    logger[reason === 'new batch' ? 'debug' : 'info']('snapshot swapped', { reason, ...describe(next), previous_height: previous?.meta.height });
  });
  holder.on('refused', (err: unknown, reason: string) => {
    metrics.swapFailed();
    logger.error('new snapshot refused; still serving the old one', { reason, error: err instanceof Error ? err.message : String(err) });
  });
  holder.on('fault', (s: Snapshot, err: Error & { code?: string; fromWorker?: true }) => {
    if (err.fromWorker) {
      logger.warn('another worker found the snapshot file damaged: /ready answers 503 until a good file is swapped in', { file: s.file, code: err.code });
      return;
    }
    logger.error('snapshot file is damaged: /ready answers 503 until a good file is swapped in', { file: s.file, code: err.code, error: err.message });
    if (cluster.isWorker) void tellPrimary({ indexerApi: 'fault', snapshotId: s.meta.snapshotId, code: err.code, message: err.message });
  });
  // A cluster is one replica: a fault another worker met takes this one out of rotation too.
  const onWorkerFault = (m: WorkerMessage): void => {
    const s = holder.current();
    if (m?.indexerApi !== 'fault' || !s || s.meta.snapshotId !== m.snapshotId) return;
    holder.reportFault(s, Object.assign(new Error(m.message), { code: m.code, fromWorker: true as const }));
  };
  if (cluster.isWorker) process.on('message', onWorkerFault);
  holder.on('closed', (s: Snapshot) => logger.debug('snapshot closed', describe(s)));
  holder.on('watch-error', (err: unknown) => logger.warn('cannot watch the snapshot directory; polling only', errorFields(err)));

  let draining = false;
  // The start-up quick check reads the whole file (≈10 s per GB, docs/reliability.md): it runs
  // on a thread while the server listens with /ready 503; a failure stops the server (exit 1).
  let verifying = o.verify;
  let refusal: string | undefined;
  const limits = limitsOf(o);
  const app = createRequestListener({
    snapshots: holder, openapi: loadOpenApi(), logger, metrics, responseCache,
    options: {
      corsOrigin: o.corsOrigin, cacheMaxAge: o.cacheMaxAge ?? SERVE_DEFAULTS.cacheMaxAge, maxUrlLength: limits.maxUrlLength, draining: () => draining,
      explorer: o.explorer ?? true, stale: live.staleness(o.maxLagS),
      notReady: () => (verifying ? 'verifying the snapshot (quick check)' : undefined),
    },
  });
  let running;
  try {
    running = await startServer(app, o.host, o.port, limits, {
      shed: (info) => logger.warn('near the file-descriptor limit: closed the oldest idle connections', info),
    });
  } catch (e) {
    holder.close();
    signals.off();
    process.off('SIGHUP', reload);
    process.off('message', onWorkerFault);
    throw e;
  }
  if (o.watch ?? true) holder.watch({ pollMs: o.watchPollMs ?? SERVE_DEFAULTS.watchPollMs });
  if (!cluster.isWorker) gate?.open(running.url);
  const commitPollMs = o.commitPollMs ?? SERVE_DEFAULTS.commitPollMs;
  const commits = commitPollMs > 0 ? live.watchCommits(holder, commitPollMs, (e) => logger.debug('commit probe failed', errorFields(e))) : undefined;
  puller?.start();
  const first = holder.current();
  logger.info('listening', { url: running.url, pid: process.pid, ...(first ? describe(first) : { file, pull: o.pull }) });
  // The one "serving" line on stderr says the server is ready (its snapshot checked).
  const announce = (): void => {
    if (!first) {
      if (cluster.isPrimary) process.stderr.write(`indexer-api: serving nothing yet on ${running.url} (/ready is 503 until ${o.pull} names a file that downloads and verifies)\n`);
      return;
    }
    const m = first.meta;
    if (cluster.isWorker) void tellPrimary({ indexerApi: 'serving', chainId: m.chainId, vmType: m.vmType, height: m.height });
    else process.stderr.write(`indexer-api: serving ${file} (${m.chainId}, ${m.vmType}, height ${m.height}) on ${running.url}\n`);
  };
  if (!verifying || !first) {
    verifying = false;
    announce();
  } else {
    const started = process.hrtime.bigint();
    stack.verify.checkPages(file).then(() => {
      verifying = false;
      logger.info('snapshot verified', { file, ms: Math.round(Number(process.hrtime.bigint() - started) / 1e6) });
      if (!draining) announce();
    }, (e: unknown) => {
      refusal = e instanceof Error ? e.message : String(e);
      logger.error('snapshot failed its start-up check; stopping', { file, error: refusal });
      signals.stop('start-up check failed');
    });
  }

  const signal = await signals.stopped;
  draining = true;
  puller?.close();
  logger.info('shutting down', { signal, pid: process.pid });
  const finished = await running.close(o.shutdownTimeoutMs ?? SERVE_DEFAULTS.shutdownTimeoutMs);
  if (!finished) logger.warn('shutdown timeout: cut the connections still open', { pid: process.pid });
  commits?.close();
  holder.close();
  logger.info('stopped', { pid: process.pid });
  logger.flush();
  signals.off();
  process.off('SIGHUP', reload);
  process.off('message', onWorkerFault);
  if (refusal !== undefined) {
    // one line, like every start-up refusal (a cluster's primary prints it once for all)
    if (cluster.isWorker) await tellPrimary({ indexerApi: 'refused', message: refusal });
    else process.stderr.write(`indexer-api: ${refusal}\n`);
  }
  // The IPC channel to the primary would keep a worker alive.
  if (cluster.isWorker) cluster.worker?.disconnect();
  const code = refusal === undefined && finished ? 0 : 1;
  // Requests were cut: whatever still holds the event loop (a socket mid-write) must not keep a
  // stopped server alive past its shutdown timeout.
  if (!finished) setTimeout(() => process.exit(code), 1_000).unref();
  return code;
}

/** --get: answer one request in-process and print the body (stdout carries only the body). */
async function answerOne(file: string, o: ServeOptions, path: string): Promise<number> {
  const { createApp, loadOpenApi, startServer, SnapshotHolder } = await httpStack();
  const holder = SnapshotHolder.open(file, { verify: o.verify });
  const logger = createLogger('error', (t) => { process.stderr.write(t); });
  const app = createApp({ snapshots: holder, openapi: loadOpenApi(), logger, options: { corsOrigin: o.corsOrigin, explorer: o.explorer ?? true } });
  const running = await startServer(app, '127.0.0.1', 0, limitsOf(o));
  try {
    const res = await fetch(running.url + (path.startsWith('/') ? path : `/${path}`));
    process.stdout.write(await res.text() + '\n');
    return res.status === 200 ? 0 : 1;
  } finally {
    await running.close();
    holder.close();
    logger.flush();
  }
}

export const serveCommand: CommandModule<object, ServeOptions> = {
  command: 'serve',
  describe: 'Serve the read API from a snapshot file',
  builder: (y) => y
    .options(SERVE_OPTIONS)
    .example('$0 serve', 'serve the bundled Move demo on http://127.0.0.1:8080')
    .example('$0 serve --db chain.sqlite --host 0.0.0.0 --port 8080', 'serve a snapshot to the network')
    .example('$0 serve --db fixture.sqlite --port 0 --workers 1', 'CI: a free port, named on the first line of stdout')
    .example('$0 serve --pull http://origin/snapshots/manifest.json --db /var/lib/indexer-api/local.sqlite', 'a replica that keeps itself current from a `publish` directory')
    .example('$0 serve --demo evm --get /status', 'print /status of the EVM demo and exit') as never,
  handler: async (argv) => { process.exitCode = await runServe(argv); },
};
