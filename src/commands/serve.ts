import cluster from 'node:cluster';
import type { CommandModule } from 'yargs';
import { createLogger, Logger } from '../lib/log';
import type { Puller } from '../pull/puller';
import type { ServeStack } from '../serve/assembly';
import { runPrimary, tellPrimary } from '../serve/cluster';
import { demoSnapshotPath } from '../serve/demo';
import { announceFromPrimary, awaitPrimaryAnnouncement, StdoutGate, stdoutGate } from '../serve/listen-line';
import type { CheckStatus } from '../snapshot/holder';
import type { Snapshot } from '../snapshot/open';
import { checkServeArgs, resolveServe, SERVE_OPTIONS, ServeArgs, ServeConfig } from '../settings/serve';
import type { Alternatives } from '../settings/command-line';
import { checkInputDir, checkInputFile, checkOutputFile } from '../lib/paths';

/** How the command line names the listen address. */
const CLI_NAMES = { host: '--host', port: '--port' };

/**
 * The paths of the command line, checked before anything starts (a cluster forks no worker for
 * a path that cannot be served; src/lib/paths.ts): --db-dir a directory that can be listed, --pull's
 * --db a file that can be written, one --db a file that can be read. The files of a replica of
 * several chains are not: one that does not open takes only its chain out.
 */
export function checkServePaths(c: Pick<ServeConfig, 'file' | 'chains' | 'pull'>): void {
  if (c.chains?.dir !== undefined) checkInputDir('--db-dir', c.chains.dir);
  else if (c.pull !== undefined) checkOutputFile('--db', c.file, true);
  else if (c.chains === undefined) checkInputFile('--db', c.file, 'snapshot file');
}

/** Opens the snapshot (or the bundled demo), serves it until SIGTERM/SIGINT, then exits 0. */
export async function runServe(c: ServeConfig): Promise<number> {
  const { file, workers } = c;
  if (!cluster.isWorker) checkServePaths(c);
  // In a cluster every process writes to the same stdout: each line says whose it is.
  // --port 0: stdout's first line names the port the kernel picked (src/serve/listen-line.ts)
  const gate = c.stack.port === 0 && c.get === undefined ? stdoutGate() : undefined;
  const logger = createLogger(c.logLevel, gate?.write, workers > 1 ? { pid: process.pid } : {}, c.logFormat);
  if (workers > 1 && cluster.isPrimary) return runClusterPrimary(c, logger, gate);
  if (gate && cluster.isWorker) awaitPrimaryAnnouncement(gate);
  if (c.get !== undefined) return answerOne(c, c.get);
  if (!cluster.isWorker) return serve(file, c, logger, gate);
  try {
    return await serve(file, c, logger, gate);
  } catch (e) {
    // The primary prints it, once for all workers (src/serve/cluster.ts).
    await tellPrimary({ indexerApi: 'fatal', message: (e as Error).message });
    cluster.worker?.disconnect();
    return 1;
  }
}

/** `--workers N`: checks what a worker would refuse, pulls first with --pull, then forks (src/serve/cluster.ts). */
async function runClusterPrimary(c: ServeConfig, logger: Logger, gate: StdoutGate | undefined): Promise<number> {
  if (gate) announceFromPrimary(gate, c.stack.baseUrl);
  const primary = { file: c.file, workers: c.workers, logger, shutdownTimeoutMs: c.shutdownTimeoutMs, ops: opsAddress(c), baseUrl: c.stack.baseUrl };
  if (c.pull === undefined) {
    // Refusals a worker would meet are found here first: one line, exit 1, nothing forked.
    await preflight(c);
    return runPrimary(primary);
  }
  const [{ pullBeforeFork, PULL_NOTE }, { PrimaryNotes }] = await Promise.all([import('../pull/serve-pull'), import('../serve/cluster')]);
  // a manifest of another chain, refused: every worker's /ready lists it
  const notes = new PrimaryNotes();
  const puller = await pullBeforeFork(c.file, pullOptions(c), logger, (r) => notes.set(PULL_NOTE, r));
  try {
    await preflight(c);
    return await runPrimary({ ...primary, notes });
  } finally {
    puller.close();
  }
}

function pullOptions(c: ServeConfig): { pull: string; pullIntervalMs: number; verify: boolean; expectChainId?: string } {
  const pull = c.pull as NonNullable<ServeConfig['pull']>;
  return { pull: pull.url, pullIntervalMs: pull.intervalMs, verify: c.stack.verifyAtStart, expectChainId: c.stack.expectChainId };
}

/**
 * What the cluster primary checks before it forks, without loading better-sqlite3 (a primary
 * stays light): the snapshot file's path, SQLite header, size and schema version (the checks
 * that need SQLite — meta, --verify — stay in the workers), and that the address can be
 * listened on. Each failure throws one message (the CLI prints it as one line).
 */
async function preflight(c: ServeConfig): Promise<void> {
  const { checkSnapshotHeader } = await import('../snapshot/file-check');
  // a replica of several chains: a file that does not open takes only its chain out (the workers say which)
  if (c.chains === undefined) checkSnapshotHeader(c.file);
  if (c.stack.port === 0) return;
  const [{ createServer }, { listenErrorText }] = await Promise.all([import('node:net'), import('../serve/server')]);
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (e: NodeJS.ErrnoException) => reject(new Error(listenErrorText(e, c.stack.host, c.stack.port, CLI_NAMES))));
    probe.listen(c.stack.port, c.stack.host, () => probe.close(() => resolve()));
  });
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
  const stopped = new Promise<string>((resolve) => {
    stop = resolve;
  });
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
    onReload: (r) => {
      reload = r;
    },
    off() {
      process.off('SIGTERM', onTerm);
      process.off('SIGINT', onInt);
      process.off('SIGHUP', onHup);
      process.off('disconnect', onDisconnect);
    },
  };
}

/** --ops-port in a cluster: the primary answers it (src/serve/cluster.ts). */
function opsAddress(c: ServeConfig): { host: string; port: number } | undefined {
  return c.stack.opsPort === undefined ? undefined : { host: c.stack.host, port: c.stack.opsPort };
}

/**
 * The serve stack over --db, or (single process with --pull) over the holder the puller fills,
 * with that puller not yet started. A cluster worker serves what its primary pulls (the rename
 * is a hot swap).
 */
async function openStack(file: string, c: ServeConfig, logger: Logger): Promise<{ stack: ServeStack; puller?: Puller }> {
  const { assembleServeStack } = await import('../serve/assembly');
  const settings = { ...c.stack, file, chains: c.chains, logger, clusterWorker: cluster.isWorker };
  if (c.pull === undefined || cluster.isWorker) return { stack: await assembleServeStack(settings) };
  const [{ holderForPull }, { SnapshotHolder }, { checkPages }, { ONE_CHAIN_HINT }] = await Promise.all([
    import('../pull/serve-pull'),
    import('../snapshot/holder'),
    import('../snapshot/verify'),
    import('../serve/assembly'),
  ]);
  const pin = c.stack.expectChainId === undefined ? {} : { pin: { chainId: c.stack.expectChainId, by: '--expect-chain-id' } };
  const { holder, puller } = await holderForPull(file, pullOptions(c), SnapshotHolder, logger, { check: checkPages, otherChainHint: ONE_CHAIN_HINT, ...pin });
  return { stack: await assembleServeStack({ ...settings, holder }), puller };
}

/** The one "serving" line on stderr, once the snapshot passed its start-up check (a worker tells its primary instead). */
function announceServing(file: string, c: ServeConfig, stack: ServeStack, first: Snapshot | undefined): void {
  const url = stack.url;
  if (stack.chains) {
    const list = stack.chains.list();
    const each = list.map((ch) => `${ch.id}: ${ch.holder.current()?.meta.vmType}, height ${ch.holder.current()?.meta.height}`).join('; ');
    const what = `${list.length} chain${list.length === 1 ? '' : 's'}${c.chains?.dir === undefined ? '' : ` of ${c.chains.dir}`} (${each || 'none yet'})`;
    const where = `${what} under ${c.stack.baseUrl}/{chain_id}/`;
    if (cluster.isWorker) void tellPrimary({ indexerApi: 'serving', chainId: '', vmType: '', height: 0, what: where });
    else process.stderr.write(`indexer-api: serving ${where} on ${url.slice(0, url.length - c.stack.baseUrl.length)}\n`);
    return;
  }
  if (!first) {
    if (cluster.isPrimary)
      process.stderr.write(`indexer-api: serving nothing yet on ${url} (/ready is 503 until ${c.pull?.url} names a file that downloads and verifies)\n`);
    return;
  }
  const m = first.meta;
  const check = checkWords(stack.holder?.checkStatus());
  if (cluster.isWorker) void tellPrimary({ indexerApi: 'serving', chainId: m.chainId, vmType: m.vmType, height: m.height, check });
  else process.stderr.write(`indexer-api: serving ${file} (${m.chainId}, ${m.vmType}, height ${m.height}; ${check}) on ${url}\n`);
}

/** What the serving line says of the file's start-up check (/ready and /metrics say it too). */
function checkWords(s: CheckStatus | undefined): string {
  if (s === undefined || s.state === 'none') return 'not checked: --no-verify';
  if (s.state === 'running') return 'check running: /ready is 503 until it passes';
  if (s.state === 'failed') return 'check failed';
  return s.how === 'recorded'
    ? `pages checked ${s.checked_at}${s.ms === undefined ? '' : ` in ${s.ms} ms`}, unchanged since: not read again`
    : `pages checked${s.ms === undefined ? '' : ` in ${s.ms} ms`}`;
}

/** After the stop signal: drain, close the stack, say why it stopped; the exit code. */
async function shutDown(stack: ServeStack, c: ServeConfig, logger: Logger, signal: string, refusal: string | undefined): Promise<number> {
  logger.info('shutting down', { signal, pid: process.pid });
  const finished = await stack.close(c.shutdownTimeoutMs);
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
async function serve(file: string, c: ServeConfig, logger: Logger, gate?: StdoutGate): Promise<number> {
  // Signals are handled from here on: SIGTERM/SIGINT arriving during start-up stop the server
  // as soon as it listens (exit 0), SIGHUP is a reload.
  const signals = processSignals();
  let opened;
  try {
    opened = await openStack(file, c, logger);
  } catch (e) {
    signals.off();
    // loaded already: the assembly listens through it
    const { ListenError, listenErrorText } = await import('../serve/server');
    throw e instanceof ListenError ? new Error(listenErrorText(e.error, e.host, e.port, CLI_NAMES)) : e;
  }
  const { stack, puller } = opened;
  signals.onReload(() => {
    stack.reload('SIGHUP');
  });
  if (!cluster.isWorker) gate?.open(stack.url);
  puller?.start();
  const first = stack.holder?.current();
  if (c.stack.growth !== undefined && first !== undefined) {
    logger.info('growing demo chain: /status advances one block per interval', {
      from: c.stack.growth.startHeight,
      to: first.meta.height,
      block_ms: c.stack.growth.blockMs,
    });
  }
  logger.info('listening', {
    url: stack.url,
    pid: process.pid,
    ...(stack.holder ? { check: stack.holder.checkStatus().state } : {}),
    ...(stack.chains ? { chains: stack.chains.list().map((ch) => ch.id) } : first ? describe(first) : { file, pull: c.pull?.url }),
  });
  // A start-up check that fails stops the server (exit 1).
  let refusal: string | undefined;
  let stopping = false;
  stack.verified.then(
    () => {
      if (!stopping) announceServing(file, c, stack, first);
    },
    (e: unknown) => {
      refusal = e instanceof Error ? e.message : String(e);
      signals.stop('start-up check failed');
    },
  );
  const signal = await signals.stopped;
  stopping = true;
  stack.drain();
  puller?.close();
  try {
    return await shutDown(stack, c, logger, signal, refusal);
  } finally {
    signals.off();
  }
}

/** --get: answer one request in-process and print the body (stdout carries only the body). */
async function answerOne(c: ServeConfig, path: string): Promise<number> {
  const { assembleServeStack } = await import('../serve/assembly');
  const logger = createLogger(
    'error',
    (t) => {
      process.stderr.write(t);
    },
    {},
    c.logFormat,
  );
  // one request: resolveServe left nothing to cache, watch or hand to other workers, and no second port
  const stack = await assembleServeStack({ ...c.stack, file: c.file, chains: c.chains, logger, clusterWorker: false });
  try {
    // the quick check, when asked for, comes before the answer (a damaged file is refused, exit 1)
    await stack.verified;
    // stack.url ends with --base-url: the path is one of the API's, as at the root (a replica of
    // several chains: /{chain_id}/… or /, the chain list)
    const res = await fetch(stack.url + (path.startsWith('/') ? path : `/${path}`));
    process.stdout.write((await res.text()) + '\n');
    return res.status === 200 ? 0 : 1;
  } finally {
    await stack.close(c.shutdownTimeoutMs);
    logger.flush();
  }
}

export const serveCommand: CommandModule<object, ServeArgs> & Alternatives = {
  command: 'serve',
  describe: 'Serve the read API from a snapshot file',
  builder: (y) =>
    y
      .options(SERVE_OPTIONS)
      .check((a) => {
        checkServeArgs(a as unknown as ServeArgs, process.argv);
        return true;
      })
      .example('$0 serve', 'serve the bundled Move demo on http://127.0.0.1:8080')
      .example('$0 serve --db chain.sqlite --host 0.0.0.0 --port 8080', 'serve a snapshot to the network')
      .example('$0 serve --db fixture.sqlite --port 0 --workers 1', 'CI: a free port, named on the first line of stdout')
      .example(
        '$0 serve --pull http://origin/snapshots/manifest.json --db /var/lib/indexer-api/local.sqlite',
        'a replica that keeps itself current from a `publish` directory',
      )
      .example('$0 serve --db minimove-1.sqlite --base-url /minimove-1/', 'behind a proxy that keeps the prefix: http://HOST:8080/minimove-1/indexer/…')
      .example('$0 serve --demo evm --get /status', 'print /status of the EVM demo and exit')
      .example(
        '$0 serve --demo move --start-height 300 --block-ms 1000 --port 9000',
        'a demo chain growing a block a second, for `follow --from-api http://127.0.0.1:9000` (make demo-live)',
      ) as never,
  // what to serve, said in different ways (src/settings/command-line.ts)
  alternatives: [['db', 'db-dir', 'demo']],
  handler: async (argv) => {
    process.exitCode = await runServe(resolveServe(argv, demoSnapshotPath));
  },
};
