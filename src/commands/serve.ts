import cluster from 'node:cluster';
import type { CommandModule } from 'yargs';
import { DEFAULT_LIMITS, Limits } from '../http/limits';
import { createLogger, Logger, LogLevel } from '../http/log';
import { parseDuration } from '../lib/duration';
import type { Puller } from '../pull/puller';
import type { ServeStack, ServeStackOptions } from '../serve/assembly';
import { runPrimary, tellPrimary } from '../serve/cluster';
import { demoSnapshotPath } from '../serve/demo';
import { announceFromPrimary, awaitPrimaryAnnouncement, StdoutGate, stdoutGate } from '../serve/listen-line';
import type { Snapshot, VmType } from '../snapshot/open';
import { SERVE_DEFAULTS, SERVE_OPTIONS } from './options';

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
  /** admission (src/http/admission.ts): requests waiting per process, per client, and for how long */
  maxQueued?: number;
  maxQueuedPerClient?: number;
  maxQueueWaitMs?: number;
  /** the request header naming the client behind a load balancer (its last address) */
  clientIpHeader?: string;
  /** /health, /ready, /metrics also on this port, answered where no query runs */
  opsPort?: number;
  /** requests slower than this get a 'slow request' warn line, ms */
  slowRequestMs?: number;
}

/** Opens the snapshot (or the bundled demo), serves it until SIGTERM/SIGINT, then exits 0. */
export async function runServe(o: ServeOptions): Promise<number> {
  const file = o.db ?? demoSnapshotPath(o.demo);
  const workers = o.get !== undefined ? 1 : o.workers ?? 1;
  if (!Number.isSafeInteger(workers) || workers < 1) throw new Error(`--workers must be a whole number ≥ 1, got ${o.workers}`);
  // In a cluster every process writes to the same stdout: each line says whose it is.
  // --port 0: stdout's first line names the port the kernel picked (src/serve/listen-line.ts)
  const gate = o.port === 0 && o.get === undefined ? stdoutGate() : undefined;
  const logger = createLogger(o.logLevel ?? 'info', gate?.write, workers > 1 ? { pid: process.pid } : {});
  if (o.pull !== undefined && o.db === undefined) throw new Error('--pull needs --db: the local file the pulled snapshot is kept in');
  if (workers > 1 && cluster.isPrimary) return runClusterPrimary(file, o, workers, logger, gate);
  if (gate && cluster.isWorker) awaitPrimaryAnnouncement(gate);
  if (o.get !== undefined) return answerOne(file, o, o.get);
  if (!cluster.isWorker) return serve(file, o, logger, gate);
  try {
    return await serve(file, o, logger, gate);
  } catch (e) {
    // The primary prints it, once for all workers (src/serve/cluster.ts).
    await tellPrimary({ indexerApi: 'fatal', message: (e as Error).message });
    cluster.worker?.disconnect();
    return 1;
  }
}

/** `--workers N`: checks what a worker would refuse, pulls first with --pull, then forks (src/serve/cluster.ts). */
async function runClusterPrimary(file: string, o: ServeOptions, workers: number, logger: Logger, gate: StdoutGate | undefined): Promise<number> {
  if (gate) announceFromPrimary(gate);
  const shutdownTimeoutMs = o.shutdownTimeoutMs ?? SERVE_DEFAULTS.shutdownTimeoutMs;
  if (o.pull === undefined) {
    // Refusals a worker would meet are found here first: one line, exit 1, nothing forked.
    await preflight(file, o);
    return runPrimary({ file, workers, logger, shutdownTimeoutMs, ops: opsAddress(o) });
  }
  const { pullBeforeFork } = await import('../pull/serve-pull');
  const puller = await pullBeforeFork(file, pullOptions(o), logger);
  try {
    await preflight(file, o);
    return await runPrimary({ file, workers, logger, shutdownTimeoutMs, ops: opsAddress(o) });
  } finally { puller.close(); }
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

/**
 * The process signals `serve` answers: SIGTERM/SIGINT (and, in a worker, the primary going away)
 * resolve `stopped`; SIGHUP calls `reload`. `off()` removes the handlers.
 */
function processSignals(): { stopped: Promise<string>; stop(reason: string): void; onReload(reload: () => void): void; off(): void } {
  let stop: (signal: string) => void = () => {};
  const stopped = new Promise<string>((resolve) => { stop = resolve; });
  let reload = (): void => {};
  const onTerm = (): void => stop('SIGTERM');
  const onInt = (): void => stop('SIGINT');
  // A worker whose primary is gone has nobody to restart or stop it.
  const onDisconnect = (): void => stop('disconnect');
  const onHup = (): void => reload();
  process.on('SIGTERM', onTerm);
  process.on('SIGINT', onInt);
  process.on('SIGHUP', onHup);
  if (cluster.isWorker) process.on('disconnect', onDisconnect);
  return {
    stopped,
    stop: (reason) => stop(reason),
    onReload: (r) => { reload = r; },
    off() {
      process.off('SIGTERM', onTerm);
      process.off('SIGINT', onInt);
      process.off('SIGHUP', onHup);
      process.off('disconnect', onDisconnect);
    },
  };
}

/** What `serve`'s options ask of the one serve stack (src/serve/assembly.ts). */
function stackOptions(file: string, o: ServeOptions, logger: Logger): ServeStackOptions {
  return {
    file, host: o.host, port: o.port, limits: limitsOf(o), logger, corsOrigin: o.corsOrigin,
    cacheMaxAge: o.cacheMaxAge ?? SERVE_DEFAULTS.cacheMaxAge,
    cacheBytes: o.cacheBytes ?? SERVE_DEFAULTS.cacheBytes,
    cacheEntries: o.cacheEntries ?? SERVE_DEFAULTS.cacheEntries,
    explorer: o.explorer ?? true,
    maxLagS: o.maxLagS,
    verifyAtStart: o.verify,
    watchPollMs: o.watch ?? true ? o.watchPollMs ?? SERVE_DEFAULTS.watchPollMs : undefined,
    commitPollMs: o.commitPollMs ?? SERVE_DEFAULTS.commitPollMs,
    clusterWorker: cluster.isWorker,
    admission: {
      maxQueued: o.maxQueued ?? SERVE_DEFAULTS.maxQueued,
      maxQueuedPerClient: o.maxQueuedPerClient ?? SERVE_DEFAULTS.maxQueuedPerClient,
      maxWaitMs: o.maxQueueWaitMs ?? SERVE_DEFAULTS.maxQueueWaitMs,
      clientIpHeader: o.clientIpHeader,
    },
    slowRequestMs: o.slowRequestMs ?? SERVE_DEFAULTS.slowRequestMs,
    opsPort: o.opsPort,
  };
}

/** --ops-port in a cluster: the primary answers it (src/serve/cluster.ts). */
function opsAddress(o: ServeOptions): { host: string; port: number } | undefined {
  return o.opsPort === undefined ? undefined : { host: o.host, port: o.opsPort };
}

/**
 * The serve stack over --db, or (single process with --pull) over the holder the puller fills,
 * with that puller not yet started. A cluster worker serves what its primary pulls (the rename
 * is a hot swap).
 */
async function openStack(file: string, o: ServeOptions, logger: Logger): Promise<{ stack: ServeStack; puller?: Puller }> {
  const { assembleServeStack } = await import('../serve/assembly');
  if (o.pull === undefined || cluster.isWorker) return { stack: await assembleServeStack(stackOptions(file, o, logger)) };
  const [{ holderForPull }, { SnapshotHolder }, { checkPages }] = await Promise.all([
    import('../pull/serve-pull'), import('../snapshot/holder'), import('../snapshot/verify'),
  ]);
  const { holder, puller } = await holderForPull(file, pullOptions(o), SnapshotHolder, logger, checkPages);
  return { stack: await assembleServeStack({ ...stackOptions(file, o, logger), holder }), puller };
}

/** The one "serving" line on stderr, once the snapshot passed its start-up check (a worker tells its primary instead). */
function announceServing(file: string, o: ServeOptions, url: string, first: Snapshot | undefined): void {
  if (!first) {
    if (cluster.isPrimary) process.stderr.write(`indexer-api: serving nothing yet on ${url} (/ready is 503 until ${o.pull} names a file that downloads and verifies)\n`);
    return;
  }
  const m = first.meta;
  if (cluster.isWorker) void tellPrimary({ indexerApi: 'serving', chainId: m.chainId, vmType: m.vmType, height: m.height });
  else process.stderr.write(`indexer-api: serving ${file} (${m.chainId}, ${m.vmType}, height ${m.height}) on ${url}\n`);
}

/** After the stop signal: drain, close the stack, say why it stopped; the exit code. */
async function shutDown(stack: ServeStack, o: ServeOptions, logger: Logger, signal: string, refusal: string | undefined): Promise<number> {
  logger.info('shutting down', { signal, pid: process.pid });
  const finished = await stack.close(o.shutdownTimeoutMs ?? SERVE_DEFAULTS.shutdownTimeoutMs);
  logger.info('stopped', { pid: process.pid });
  logger.flush();
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

/** One process serving the port (alone, or as a cluster worker) until SIGTERM/SIGINT. */
async function serve(file: string, o: ServeOptions, logger: Logger, gate?: StdoutGate): Promise<number> {
  // Signals are handled from here on: SIGTERM/SIGINT arriving during start-up stop the server
  // as soon as it listens (exit 0), SIGHUP is a reload.
  const signals = processSignals();
  let opened;
  try {
    opened = await openStack(file, o, logger);
  } catch (e) {
    signals.off();
    throw e;
  }
  const { stack, puller } = opened;
  signals.onReload(() => { void stack.holder.reload('SIGHUP'); });
  if (!cluster.isWorker) gate?.open(stack.url);
  puller?.start();
  const first = stack.holder.current();
  logger.info('listening', { url: stack.url, pid: process.pid, ...(first ? describe(first) : { file, pull: o.pull }) });
  // A start-up check that fails stops the server (exit 1).
  let refusal: string | undefined;
  let stopping = false;
  stack.verified.then(() => { if (!stopping) announceServing(file, o, stack.url, first); }, (e: unknown) => {
    refusal = e instanceof Error ? e.message : String(e);
    signals.stop('start-up check failed');
  });
  const signal = await signals.stopped;
  stopping = true;
  stack.drain();
  puller?.close();
  try {
    return await shutDown(stack, o, logger, signal, refusal);
  } finally {
    signals.off();
  }
}

/** --get: answer one request in-process and print the body (stdout carries only the body). */
async function answerOne(file: string, o: ServeOptions, path: string): Promise<number> {
  const { assembleServeStack } = await import('../serve/assembly');
  const logger = createLogger('error', (t) => { process.stderr.write(t); });
  const stack = await assembleServeStack({
    ...stackOptions(file, o, logger), host: '127.0.0.1', port: 0,
    // one request: nothing to cache, watch or hand to other workers
    cacheBytes: 0, cacheEntries: 0, watchPollMs: undefined, commitPollMs: 0, clusterWorker: false,
  });
  try {
    // the quick check, when asked for, comes before the answer (a damaged file is refused, exit 1)
    await stack.verified;
    const res = await fetch(stack.url + (path.startsWith('/') ? path : `/${path}`));
    process.stdout.write(await res.text() + '\n');
    return res.status === 200 ? 0 : 1;
  } finally {
    await stack.close(SERVE_DEFAULTS.shutdownTimeoutMs);
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
