/**
 * The serve stack, assembled in one place: snapshot holder, metrics, response cache, commit
 * watch, file watch, fault log, the app and its listener. `serve` (alone or as a cluster
 * worker), `serve --get` and the library's startServer() (src/index.ts) all run this one
 * assembly; they differ only in the settings they pass (docs/architecture.md#serve), so a
 * library user gets the server an operator runs.
 *
 * Loaded only by a process that serves (src/commands/serve.ts imports it lazily): Express, the
 * OpenAPI validator, prom-client and better-sqlite3 are on the critical path of cold start, and
 * a cluster primary never needs them.
 */
import type { RequestListener } from 'node:http';
import { Admission, admission, peerAddress } from '../http/admission';
import { CachePart, ResponseCache } from '../cache/store';
import { corsHeaders } from '../http/cors';
import { errorFields, Logger } from '../lib/log';
import { createMetrics, Metrics, MetricsChain } from '../http/ops';
import { changeOf, OpsPort, reportEvery, startOpsPort } from '../http/ops-port';
import cluster from 'node:cluster';
import type { ServeSettings } from '../settings/serve';
import { SnapshotHolder, type CheckStatus } from '../snapshot/holder';
import type { Snapshot } from '../snapshot/open';
import { checkPages } from '../snapshot/verify';
import { chainReadiness, rootReadiness } from './readiness';
import { chainIdOf, createRequestListener } from './routing';
import { ChainSet, ServedChain } from './chains';
import { PrimaryMessage, tellPrimary, WorkerMessage } from './cluster';
import { CommitWatch, registerLagMetrics, staleness, watchCommits } from './live';
import { loadOpenApi } from './openapi';
import { FIRST_PACKED_WIRE_FORMAT, WIRE_FORMAT_VERSION } from '../wire/format';
import { listen, RunningServer } from './server';
import { growingStatus } from './growth';

/** serve's settings (src/settings/serve.ts), and what each process adds: the file(s), the logger, whether it is a cluster worker. */
export interface ServeStackOptions extends ServeSettings {
  /** the snapshot file (a replica of one chain, served at the root) */
  file: string;
  /**
   * a replica of several chains (src/serve/chains.ts), each under `/{chain_id}/`: two or more
   * --db files, or --db-dir; `file` and `holder` are then not used
   */
  chains?: { files: readonly string[]; dir?: string };
  /** a holder made beforehand (serve --pull: empty until its first download); default: `file` opened here */
  holder?: SnapshotHolder;
  logger: Logger;
  /** this process is a cluster worker: a fault it meets goes to the other workers, and theirs to it */
  clusterWorker: boolean;
}

export interface ServeStack {
  /** the snapshot holder of a replica of one chain */
  readonly holder?: SnapshotHolder;
  /** the chains of a replica of several */
  readonly chains?: ChainSet;
  /** SIGHUP: every file opened again (a replica of several also looks at its files and --db-dir again) */
  reload(reason: string): void;
  readonly metrics: Metrics;
  /** `http://HOST:PORT` and the base URL (`http://HOST:PORT/minimove-1`), no trailing slash */
  readonly url: string;
  readonly port: number;
  /** the --ops-port URL, when this process answers it */
  readonly opsUrl?: string;
  /**
   * resolves once the start-up quick check passed (at once without one); rejects with its
   * failure — for a replica of several, a failure takes its chain out and never rejects
   */
  readonly verified: Promise<void>;
  /** draining from now on: /ready answers 503 and connections close after each response */
  drain(): void;
  /**
   * drain(), let in-flight requests finish (cut after `timeoutMs`), stop the watches and close the
   * snapshot; resolves true if nothing had to be cut. Idempotent. `quick`: no grace for requests
   * still in the kernel's buffers (RunningServer.close).
   */
  close(timeoutMs: number, quick?: boolean): Promise<boolean>;
}

/**
 * How a replica of one chain tells the operator to serve another chain from its file: it never
 * changes chains unless told (docs/scaling.md).
 */
export const ONE_CHAIN_HINT = (id: string): string =>
  `a replica never changes chains unless told: to serve ${JSON.stringify(id)}, restart serve with --expect-chain-id ${id}`;

/** The same for a file of a replica of several chains. */
const CHAIN_FILE_HINT = (id: string): string =>
  `a served file keeps its chain: to serve ${JSON.stringify(id)} from it, take it out of --db-dir and put it back, or restart serve`;

/** Opens the snapshot(s) (unless given a holder), builds the app and listens; nothing is left open if it throws. */
export async function assembleServeStack(o: ServeStackOptions): Promise<ServeStack> {
  // Every file is quick-checked on a worker thread before it is ready: a replacement before it
  // is swapped in (the old file serves meanwhile), a file added to --db-dir before its chain is
  // ready; verifyAtStart decides whether the files there at start are checked too.
  const chains =
    o.chains === undefined
      ? undefined
      : ChainSet.open({
          files: o.chains.files,
          dir: o.chains.dir,
          base: o.baseUrl,
          open: (file) => SnapshotHolder.open(file, { check: checkPages, otherChainHint: CHAIN_FILE_HINT }),
          // --watch-poll-ms, or every 2 s when it is 0 (watch only) or --no-watch: files come and go in --db-dir either way
          rescanMs: o.watchPollMs || DIR_RESCAN_MS,
          checkAtStart: o.verifyAtStart,
        });
  const holder = chains
    ? undefined
    : (o.holder ??
      SnapshotHolder.open(o.file, {
        check: checkPages,
        otherChainHint: ONE_CHAIN_HINT,
        ...(o.expectChainId === undefined ? {} : { pin: { chainId: o.expectChainId, by: '--expect-chain-id' } }),
      }));
  // started before anything listens: /ready (and the ops port's first report) says 'checking' from the start
  const startCheck = holder !== undefined && o.verifyAtStart && holder.current() !== undefined ? startUpCheck(holder, o.logger) : undefined;
  // a failure is the caller's to act on (below, `verified`); never an unhandled rejection
  startCheck?.catch(() => {});
  let draining = false;
  let metrics: Metrics;
  let running: RunningServer;
  let ops: { port?: OpsPort; stop(): void } | undefined;
  let admitted: Admission | undefined;
  /** what each served file set up (watches, log listeners), undone when it leaves or at close */
  const attached = new Map<SnapshotHolder, () => void>();
  // what a failed start and close() both undo, whatever was started so far
  const teardown = async (): Promise<void> => {
    for (const undo of attached.values()) undo();
    attached.clear();
    admitted?.close();
    ops?.stop();
    await ops?.port?.close();
    chains?.close();
    holder?.close();
  };
  try {
    const responseCache = o.cacheValidatorBytes > 0 ? new ResponseCache(o.cacheBytes, o.cacheEntries, true, o.cacheValidatorBytes) : undefined;
    const chainList = chains && ((): MetricsChain[] => chains.list().map((c) => ({ id: c.id, current: () => c.holder.current() })));
    metrics = createMetrics(() => holder?.current(), responseCache, chainList);
    const counted = metrics;
    // the start-up check, counted when it ends (begun before the metrics existed)
    startCheck?.then(
      () => counted.checked(checkHow((holder as SnapshotHolder).checkStatus())),
      () => counted.checked('failed'),
    );
    registerLagMetrics(metrics.registry, () => holder?.current(), chainList);
    const appOptions = {
      ...o,
      draining: () => draining,
      stale: staleness(o),
      grownStatus: o.growth === undefined ? undefined : growingStatus(o.growth),
    };
    // one file served: its events logged, its cache part kept in step, its watches started
    const attach = (h: SnapshotHolder, chain?: ServedChain): void => {
      const part = responseCache?.part(chain?.id ?? '');
      const undoLog = logHolderEvents(h, o.logger, metrics, part, o.clusterWorker, chain?.id);
      if (o.watchPollMs !== undefined) h.watch({ pollMs: o.watchPollMs });
      const commits: CommitWatch | undefined =
        o.commitPollMs > 0
          ? watchCommits(h, o.commitPollMs, (e) => o.logger.debug('commit probe failed', { ...errorFields(e), ...(chain ? { chain: chain.id } : {}) }))
          : undefined;
      attached.set(h, () => {
        commits?.close();
        undoLog();
      });
    };
    if (chains) {
      const onAdd = (c: ServedChain, atStart = false): void => {
        attach(c.holder, c);
        const s = c.holder.current();
        // not ready until its check passed ('snapshot verified'); one that fails is dropped, listed at / and /ready
        if (!atStart)
          o.logger.info('chain added', { chain: c.id, file: c.file, height: s?.meta.height, vm_type: s?.meta.vmType, checking: c.holder.checking() });
      };
      for (const c of chains.list()) onAdd(c, true);
      chains.on('add', (c: ServedChain) => onAdd(c));
      chains.on('checked', (c: ServedChain, ms: number) => {
        const how = checkHow(c.holder.checkStatus());
        metrics.checked(how);
        o.logger.info('snapshot verified', { chain: c.id, file: c.file, ms, how });
      });
      chains.on('remove', (c: ServedChain, why: string | undefined, shutdown: boolean) => {
        attached.get(c.holder)?.();
        attached.delete(c.holder);
        responseCache?.dropPart(c.id);
        // stopping closes every chain: that is the 'stopped' line, not a chain leaving the replica
        if (!shutdown) o.logger.info('chain removed', { chain: c.id, file: c.file, ...(why ? { reason: why } : {}) });
      });
      chains.on('refused', (file: string, error: string) => o.logger.error('snapshot file not served', { file, error }));
      for (const r of chains.refused()) o.logger.error('snapshot file not served', { file: r.file, error: r.error });
    } else {
      const h = holder as SnapshotHolder;
      if (!o.clusterWorker || cluster.worker?.id === 1) olderFormat(o.logger, h.current());
    }
    const app = createRequestListener(
      {
        snapshots: holder,
        chains,
        openapi: loadOpenApi(),
        logger: o.logger,
        metrics,
        responseCache,
        options: appOptions,
      },
      (inner) => (admitted = admitRequests(inner, o, metrics, chains !== undefined)).listener,
    );
    ops = await startOps(o, metrics, chains ? () => rootReadiness(chains, appOptions, draining) : chainReadiness(holder as SnapshotHolder, appOptions));
    running = await listen(app, o.host, o.port, o.limits, {
      shed: (info) => o.logger.warn('near the file-descriptor limit: closed the oldest idle connections', info),
    });
    if (holder) attach(holder);
  } catch (e) {
    await teardown();
    throw e;
  }
  // a failure is the caller's to act on (serve stops, --get refuses)
  const verified = chains ? chains.checked() : (startCheck ?? Promise.resolve());

  const address = running.server.address();
  let closed: Promise<boolean> | undefined;
  return {
    holder,
    chains,
    metrics,
    url: running.url + o.baseUrl,
    opsUrl: ops?.port?.url,
    port: typeof address === 'object' && address !== null ? address.port : o.port,
    verified,
    reload: (reason) => {
      if (holder) {
        void holder.reload(reason);
        return;
      }
      chains?.rescan();
      for (const c of chains?.list() ?? []) void c.holder.reload(reason);
    },
    drain: () => {
      draining = true;
    },
    close: (timeoutMs, quick) =>
      (closed ??= (async () => {
        draining = true;
        const finished = await running.close(timeoutMs, quick);
        if (!finished) o.logger.warn('shutdown timeout: cut the connections still open', { pid: process.pid });
        await teardown();
        return finished;
      })()),
  };
}

/** How often --db-dir is looked at again without --watch (ms). */
const DIR_RESCAN_MS = 2_000;

/**
 * Admission and fair share in front of the app (docs/reliability.md#overload): requests wait in a
 * bounded queue, the least-served client first; beyond it a fast 503 with Retry-After.
 */
function admitRequests(app: RequestListener, o: ServeStackOptions, metrics: Metrics, byChain: boolean): Admission {
  const a = o.admission;
  const cors = corsHeaders(o.corsOrigin);
  const header = a.clientIpHeader?.toLowerCase();
  const admitted = admission(app, {
    // the queue's limits, as the settings name them (src/settings/serve.ts)
    ...a,
    clientOf: header === undefined ? peerAddress : (req) => lastAddress(req.headers[header]) ?? peerAddress(req),
    extraHeaders: (req) => {
      const h = cors(req.headers.origin);
      const pairs: [string, string][] = [];
      for (let i = 0; i < h.length; i += 2) pairs.push([h[i], h[i + 1]]);
      return pairs;
    },
    onShed: (reason) => metrics.shed(reason),
    // a replica of several chains shares the process fairly between them first, then between clients
    ...(byChain ? { groupOf: chainIdOf } : {}),
    onBurst: (b) => o.logger.warn('overloaded: requests answered 503 instead of being run', { ...b, pid: process.pid }),
  });
  metrics.watchQueue(admitted.queued);
  return admitted;
}

/** The last address of a forwarding header (the one the nearest proxy added). */
function lastAddress(v: string | string[] | undefined): string | undefined {
  const text = Array.isArray(v) ? v[v.length - 1] : v;
  if (!text) return undefined;
  const last = text.slice(text.lastIndexOf(',') + 1).trim();
  return last === '' ? undefined : last;
}

/**
 * --ops-port: a thread of this process answers /health, /ready, /metrics from what this side
 * reports once a second (src/http/ops-port.ts); a cluster worker reports to the primary instead.
 */
async function startOps(
  o: ServeStackOptions,
  metrics: Metrics,
  ready: () => { ready: boolean; body: string },
): Promise<{ port?: OpsPort; stop(): void } | undefined> {
  if (o.opsPort === undefined) return undefined;
  // a swap, a drain, a damaged file, the end of the start-up check: reported within
  // READINESS_POLL_MS, not at the next second (src/http/ops-port.ts)
  // (not-ready reasons may carry a changing figure, e.g. the lag: only ready / which snapshot count)
  const changed = changeOf(() => {
    const r = ready();
    return r.ready ? r.body : 'not ready';
  });
  if (o.clusterWorker) {
    const reporter = reportEvery(
      async () => {
        const r = ready();
        return { indexerApi: 'ops' as const, at: Date.now(), ready: r.ready, readyBody: r.body, metrics: await metrics.registry.getMetricsAsJSON() };
      },
      (m) => {
        void tellPrimary(m);
      },
      changed,
    );
    return { stop: reporter.stop };
  }
  const port = await startOpsPort(o.host, o.opsPort);
  o.logger.info('operations port listening', { url: port.url });
  const reporter = reportEvery(
    async () => {
      const r = ready();
      return { at: Date.now(), ready: r.ready, readyBody: r.body, metrics: await metrics.registry.metrics(), metricsType: metrics.registry.contentType };
    },
    (s) => port.post(s),
    changed,
  );
  return { port, stop: reporter.stop };
}

/**
 * The start-up quick check reads the whole file (≈7 s per GB, docs/reliability.md): it runs on
 * a thread while the server listens with /ready 503 (the holder's checking()).
 */
async function startUpCheck(holder: SnapshotHolder, logger: Logger): Promise<void> {
  const started = process.hrtime.bigint();
  const where = { file: holder.file };
  try {
    await holder.checkCurrent();
  } catch (e) {
    logger.error('snapshot failed its start-up check', { ...where, error: e instanceof Error ? e.message : String(e) });
    throw e;
  }
  const ms = Math.round(Number(process.hrtime.bigint() - started) / 1e6);
  const c = holder.checkStatus();
  if (c.state === 'passed' && c.how === 'recorded') {
    logger.info('snapshot verified', {
      ...where,
      ms,
      how: 'recorded',
      checked_at: c.checked_at,
      note: 'this unchanged file passed its check before: its pages were not read again (docs/reliability.md)',
    });
  } else logger.info('snapshot verified', { ...where, ms, how: 'read' });
}

/** How a passed check is counted (indexer_api_snapshot_checks_total). */
const checkHow = (c: CheckStatus): 'read' | 'recorded' | 'failed' => (c.state === 'passed' ? c.how : 'failed');

function describe(s: Snapshot): Record<string, unknown> {
  return { file: s.file, snapshot_id: s.meta.snapshotId, chain_id: s.meta.chainId, height: s.meta.height };
}

function olderFormat(logger: Logger, s: Snapshot | undefined, chain?: string): void {
  if (s !== undefined && s.meta.wireFormat < FIRST_PACKED_WIRE_FORMAT) {
    logger.warn(
      `snapshot stores wire format ${s.meta.wireFormat} (uncompressed rows): served as it is, without gzip; ` +
        `\`indexer-api import --base ${s.file} --out NEW.sqlite\` renders it as wire format ${WIRE_FORMAT_VERSION}`,
      { ...(chain === undefined ? {} : { chain }), ...describe(s) },
    );
  }
}

/**
 * What a holder reports, into the log, the metrics and the response cache (`part`: its chain's):
 * swaps, refused files, and faults — a damaged file takes its chain out of rotation (/ready 503,
 * one error line; a replica of one chain, the replica), and in a cluster on every worker, not one
 * of them. `chain`: the chain id of a replica of several (a field of every line). Returns the undo.
 */
function logHolderEvents(
  holder: SnapshotHolder,
  logger: Logger,
  metrics: Metrics,
  part: CachePart | undefined,
  clusterWorker: boolean,
  chain?: string,
): () => void {
  const tag = chain === undefined ? {} : { chain };
  const first = !clusterWorker || cluster.worker?.id === 1;
  const onSwap = (next: Snapshot, previous: Snapshot | undefined, reason: string): void => {
    metrics.swapped();
    // a batch of the same file drops what its change records name; another file empties the part
    part?.sync(next);
    // A batch committed by `follow` (src/serve/live.ts) is routine: debug, not info.
    logger[reason === 'new batch' ? 'debug' : 'info']('snapshot swapped', { ...tag, reason, ...describe(next), previous_height: previous?.meta.height });
    if (reason !== 'new batch' && first) olderFormat(logger, next, chain);
  };
  const onRefused = (err: unknown, reason: string): void => {
    metrics.swapFailed();
    logger.error('new snapshot refused; still serving the old one', { ...tag, reason, error: err instanceof Error ? err.message : String(err) });
  };
  const onFault = (s: Snapshot, err: Error & { code?: string; fromWorker?: true }): void => {
    if (err.fromWorker) {
      logger.warn('another worker found the snapshot file damaged: /ready answers 503 until a good file is swapped in', {
        ...tag,
        file: s.file,
        code: err.code,
      });
      return;
    }
    logger.error('snapshot file is damaged: /ready answers 503 until a good file is swapped in', { ...tag, file: s.file, code: err.code, error: err.message });
    if (clusterWorker) void tellPrimary({ indexerApi: 'fault', snapshotId: s.meta.snapshotId, code: err.code, message: err.message });
  };
  const onClosed = (s: Snapshot): void => logger.debug('snapshot closed', { ...tag, ...describe(s) });
  // a replacement's check (a hot swap, a pull): counted; the swap or refusal line says the rest
  const onChecked = (c: CheckStatus): void => {
    metrics.checked(checkHow(c));
    if (c.state === 'passed' && c.how === 'recorded')
      logger.info('replacement snapshot passed its check before, unchanged since: pages not read again', {
        ...tag,
        file: holder.file,
        checked_at: c.checked_at,
      });
  };
  const onWatchError = (err: unknown): void => logger.warn('cannot watch the snapshot directory; polling only', { ...tag, ...errorFields(err) });
  holder.on('swap', onSwap);
  holder.on('refused', onRefused);
  holder.on('fault', onFault);
  holder.on('closed', onClosed);
  holder.on('checked', onChecked);
  holder.on('watch-error', onWatchError);
  const onWorkerFault = (m: WorkerMessage | PrimaryMessage): void => {
    // the primary's puller refused a manifest (or no longer does): /ready lists it
    if (m?.indexerApi === 'note') {
      holder.note(m.key, m.refused);
      return;
    }
    const s = holder.current();
    if (m?.indexerApi !== 'fault' || !s || s.meta.snapshotId !== m.snapshotId) return;
    holder.reportFault(s, Object.assign(new Error(m.message), { code: m.code, fromWorker: true as const }));
  };
  if (clusterWorker) process.on('message', onWorkerFault);
  return () => {
    holder.off('checked', onChecked);
    holder.off('swap', onSwap);
    holder.off('refused', onRefused);
    holder.off('fault', onFault);
    holder.off('watch-error', onWatchError);
    // 'closed' stays: the holder closes its snapshots after this (a chain leaving the replica)
    if (clusterWorker) process.off('message', onWorkerFault);
  };
}
