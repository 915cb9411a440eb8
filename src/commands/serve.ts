import cluster from 'node:cluster';
import { availableParallelism } from 'node:os';
import type { CommandModule } from 'yargs';
import { runPrimary, tellPrimary } from '../cluster';
import { DEMO_VMS, demoSnapshotPath } from '../demo';
import { DEFAULT_LIMITS, Limits } from '../http/limits';
import { createLogger, errorFields, LOG_LEVELS, Logger, LogLevel } from '../http/log';
import type { SnapshotHolder as SnapshotHolderType } from '../snapshot/holder';
import type { Snapshot, VmType } from '../snapshot/open';

export interface ServeOptions {
  db?: string;
  demo: VmType;
  host: string;
  port: number;
  corsOrigin: string;
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
  /** processes serving the port; 1 (the default here; the CLI's is the core count) = no cluster */
  workers?: number;
}

const DEFAULT_CACHE_BYTES = 64 * 1024 * 1024;
const DEFAULT_CACHE_ENTRIES = 100_000;

/**
 * Express, the OpenAPI validator, prom-client, the OpenAPI document and better-sqlite3 are loaded
 * only by a process that serves: a cluster primary never needs them, and they are on the
 * critical path of cold start.
 */
async function httpStack() {
  const [{ createApp, createRequestListener }, { createMetrics }, { loadOpenApi }, { startServer }, { SnapshotHolder }, { ResponseCache }] = await Promise.all([
    import('../app'), import('../http/ops'), import('../openapi'), import('../server'), import('../snapshot/holder'), import('../http/caching'),
  ]);
  return { createApp, createRequestListener, createMetrics, loadOpenApi, startServer, SnapshotHolder, ResponseCache };
}

/** Opens the snapshot (or the bundled demo), serves it until SIGTERM/SIGINT, then exits 0. */
export async function runServe(o: ServeOptions): Promise<number> {
  const file = o.db ?? demoSnapshotPath(o.demo);
  const workers = o.get !== undefined ? 1 : o.workers ?? 1;
  if (!Number.isSafeInteger(workers) || workers < 1) throw new Error(`--workers must be a whole number ≥ 1, got ${o.workers}`);
  // In a cluster every process writes to the same stdout: each line says whose it is.
  const logger = createLogger(o.logLevel ?? 'info', undefined, workers > 1 ? { pid: process.pid } : {});
  if (workers > 1 && cluster.isPrimary) {
    // Refusals a worker would meet are found here first: one line, exit 1, nothing forked.
    await preflight(file, o);
    return runPrimary({ file, workers, logger });
  }
  if (o.get !== undefined) return answerOne(file, o, o.get);
  if (!cluster.isWorker) return serve(file, o, logger);
  try {
    return await serve(file, o, logger);
  } catch (e) {
    // The primary prints it, once for all workers (src/cluster.ts).
    await tellPrimary({ indexerApi: 'fatal', message: (e as Error).message });
    cluster.worker?.disconnect();
    return 1;
  }
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
function stopSignal(): { stopped: Promise<string>; off(): void } {
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
    off() {
      process.off('SIGTERM', onTerm);
      process.off('SIGINT', onInt);
      process.off('disconnect', onDisconnect);
    },
  };
}

/** One process serving the port (alone, or as a cluster worker) until SIGTERM/SIGINT. */
async function serve(file: string, o: ServeOptions, logger: Logger): Promise<number> {
  // Signals are handled from here on: SIGTERM/SIGINT arriving during start-up stop the server
  // as soon as it listens (exit 0), SIGHUP is a reload.
  const signals = stopSignal();
  let opened: SnapshotHolderType | undefined;
  const reload = (): void => { opened?.reload('SIGHUP'); };
  process.on('SIGHUP', reload);
  let stack;
  try {
    stack = await httpStack();
    opened = stack.SnapshotHolder.open(file, { verify: o.verify });
  } catch (e) {
    signals.off();
    process.off('SIGHUP', reload);
    throw e;
  }
  const holder = opened;
  const { createRequestListener, createMetrics, loadOpenApi, startServer, ResponseCache } = stack;
  const cacheEntries = o.cacheEntries ?? DEFAULT_CACHE_ENTRIES;
  const cacheBytes = o.cacheBytes ?? DEFAULT_CACHE_BYTES;
  for (const [name, v] of [['--cache-bytes', cacheBytes], ['--cache-entries', cacheEntries]] as const) {
    if (!Number.isSafeInteger(v) || v < 0) throw new Error(`${name} must be a whole number ≥ 0, got ${v}`);
  }
  const responseCache = cacheEntries > 0 && cacheBytes > 0 ? new ResponseCache(cacheBytes, cacheEntries) : undefined;
  const metrics = createMetrics(() => holder.current(), responseCache);
  holder.on('swap', (next: Snapshot, previous: Snapshot | undefined, reason: string) => {
    metrics.swapped();
    responseCache?.clear();
    logger.info('snapshot swapped', { reason, ...describe(next), previous_height: previous?.meta.height });
  });
  holder.on('refused', (err: unknown, reason: string) => {
    metrics.swapFailed();
    logger.error('new snapshot refused; still serving the old one', { reason, error: err instanceof Error ? err.message : String(err) });
  });
  holder.on('closed', (s: Snapshot) => logger.debug('snapshot closed', describe(s)));
  holder.on('watch-error', (err: unknown) => logger.warn('cannot watch the snapshot directory; polling only', errorFields(err)));

  let draining = false;
  const limits = limitsOf(o);
  if (cluster.isWorker) {
    const m = (holder.current() as Snapshot).meta;
    void tellPrimary({ indexerApi: 'serving', chainId: m.chainId, vmType: m.vmType, height: m.height });
  }
  const app = createRequestListener({
    snapshots: holder, openapi: loadOpenApi(), logger, metrics, responseCache,
    options: { corsOrigin: o.corsOrigin, cacheMaxAge: o.cacheMaxAge ?? 1, maxUrlLength: limits.maxUrlLength, draining: () => draining },
  });
  let running;
  try {
    running = await startServer(app, o.host, o.port, limits);
  } catch (e) {
    holder.close();
    signals.off();
    process.off('SIGHUP', reload);
    throw e;
  }
  if (o.watch ?? true) holder.watch({ pollMs: o.watchPollMs ?? 2_000 });
  const first = holder.current() as Snapshot;
  logger.info('listening', { url: running.url, pid: process.pid, ...describe(first) });
  if (cluster.isPrimary) {
    const m = first.meta;
    process.stderr.write(`indexer-api: serving ${file} (${m.chainId}, ${m.vmType}, height ${m.height}) on ${running.url}\n`);
  }

  const signal = await signals.stopped;
  draining = true;
  logger.info('shutting down', { signal, pid: process.pid });
  const finished = await running.close(o.shutdownTimeoutMs ?? 10_000);
  if (!finished) logger.warn('shutdown timeout: cut the connections still open', { pid: process.pid });
  holder.close();
  logger.info('stopped', { pid: process.pid });
  logger.flush();
  signals.off();
  process.off('SIGHUP', reload);
  // The IPC channel to the primary would keep a worker alive.
  if (cluster.isWorker) cluster.worker?.disconnect();
  return 0;
}

/** --get: answer one request in-process and print the body (stdout carries only the body). */
async function answerOne(file: string, o: ServeOptions, path: string): Promise<number> {
  const { createApp, loadOpenApi, startServer, SnapshotHolder } = await httpStack();
  const holder = SnapshotHolder.open(file, { verify: o.verify });
  const logger = createLogger('error', (t) => { process.stderr.write(t); });
  const app = createApp({ snapshots: holder, openapi: loadOpenApi(), logger, options: { corsOrigin: o.corsOrigin } });
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
    .option('db', { type: 'string', describe: 'Snapshot file to serve (built by `import`). Default: the bundled demo snapshot chosen by --demo' })
    .option('demo', { choices: DEMO_VMS, default: 'move' as VmType, describe: 'Which bundled demo snapshot to serve when --db is not given' })
    .option('host', { type: 'string', default: '127.0.0.1', describe: 'Address to listen on (0.0.0.0 for all interfaces)' })
    .option('port', { type: 'number', default: 8080, describe: 'TCP port to listen on' })
    .option('cors-origin', { type: 'string', default: '*', describe: "Allowed CORS origins: '*', a comma-separated list (with *.domain patterns), or '' to disable" })
    .option('verify', { type: 'boolean', default: false, describe: 'Run a full quick_check of the snapshot before serving (reads the whole file)' })
    .option('get', { type: 'string', describe: 'Answer one GET request for this path in-process, print the body and exit (0 iff status 200)' })
    .option('workers', { type: 'number', default: availableParallelism(), defaultDescription: 'number of cores', describe: 'Processes serving the port (node:cluster); 1 = a single process, no cluster' })
    .option('log-level', { choices: LOG_LEVELS, default: 'info' as LogLevel, describe: 'JSON log lines on stdout: info logs one line per request; warn and error drop those' })
    .option('cache-max-age', { type: 'number', default: 1, describe: 'Cache-Control max-age (seconds) of 200 responses; each carries a strong ETag (snapshot id + URL)' })
    .option('cache-bytes', { type: 'number', default: DEFAULT_CACHE_BYTES, describe: 'In-process response cache of 200s (per worker), answered before Express: byte cap, least recently used out (0 = no cache)' })
    .option('cache-entries', { type: 'number', default: DEFAULT_CACHE_ENTRIES, describe: 'Entry cap of the response cache (0 = no cache)' })
    .option('watch', { type: 'boolean', default: true, describe: 'Hot-swap when the file at --db is replaced (rename over it); SIGHUP always reloads. --no-watch to disable' })
    .option('watch-poll-ms', { type: 'number', default: 2_000, describe: 'Stat poll interval backing up the file watch (0 = watch only)' })
    .option('request-timeout-ms', { type: 'number', default: DEFAULT_LIMITS.requestTimeoutMs, describe: 'A request must arrive completely within this (408 otherwise)' })
    .option('headers-timeout-ms', { type: 'number', default: DEFAULT_LIMITS.headersTimeoutMs, describe: 'Request headers must arrive within this: slow clients are cut off (capped at --request-timeout-ms)' })
    .option('keep-alive-timeout-ms', { type: 'number', default: DEFAULT_LIMITS.keepAliveTimeoutMs, describe: 'Idle keep-alive connections are closed after this' })
    .option('max-header-size', { type: 'number', default: DEFAULT_LIMITS.maxHeaderSize, describe: 'Request line + headers, bytes (431 beyond)' })
    .option('max-url-length', { type: 'number', default: DEFAULT_LIMITS.maxUrlLength, describe: 'Request URL, bytes (414 beyond)' })
    .option('shutdown-timeout-ms', { type: 'number', default: 10_000, describe: 'On SIGTERM/SIGINT, in-flight requests get this long to finish' })
    .example('$0 serve', 'serve the bundled Move demo on http://127.0.0.1:8080')
    .example('$0 serve --db chain.sqlite --host 0.0.0.0 --port 8080', 'serve a snapshot to the network')
    .example('$0 serve --demo evm --get /status', 'print /status of the EVM demo and exit') as never,
  handler: async (argv) => { process.exitCode = await runServe(argv); },
};
