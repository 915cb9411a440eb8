/**
 * The library entry of the `indexer-api` package (docs/ci.md): a real indexer API inside a test
 * process, with no child process and no fixed port.
 *
 *     const srv = await startServer({ db: 'fixture.sqlite', port: 0 });
 *     await fetch(`${srv.url}/indexer/block/v1/blocks`);
 *     await srv.close();
 *
 * The server is the one `indexer-api serve --workers 1` runs (same pipeline, same validation,
 * same response cache), minus the signal handling, which belongs to the test runner.
 */
import { DEMO_VMS, demoSnapshotPath } from './demo';

export type DemoVm = 'move' | 'wasm' | 'evm';
export type LogLevel = 'error' | 'warn' | 'info' | 'debug';
const LOG_LEVELS: readonly LogLevel[] = ['error', 'warn', 'info', 'debug'];

/**
 * The in-process server's own settings, smaller and quicker than `serve`'s
 * (src/lib/defaults.ts): a test suite's server holds a small cache and stops fast.
 */
const LIBRARY_DEFAULTS = {
  cacheBytes: 16 * 1024 * 1024,
  cacheEntries: 10_000,
  /** stat poll of `watch: true`, ms */
  watchPollMs: 500,
  /** in-flight requests get this long on close(), ms */
  closeTimeoutMs: 5_000,
} as const;

export interface StartServerOptions {
  /** snapshot file to serve (built by `indexer-api import`); give this or `demo` */
  db?: string;
  /** serve a bundled demo snapshot instead of `db` */
  demo?: DemoVm;
  /** TCP port; 0 (the default) picks a free one, read it from the result */
  port?: number;
  /** address to listen on (default 127.0.0.1) */
  host?: string;
  /** CORS origins: '*' (default), a comma-separated list, or '' for none */
  corsOrigin?: string;
  /** JSON log lines on stdout from this level (default 'error': quiet tests) */
  logLevel?: LogLevel;
  /** check every response against the OpenAPI document (default false; a contract test in your suite) */
  validateResponses?: boolean;
  /** hot-swap when the file at `db` is replaced (default false) */
  watch?: boolean;
}

export interface RunningIndexerApi {
  /** `http://127.0.0.1:PORT`, no trailing slash */
  url: string;
  port: number;
  /** the snapshot file being served */
  db: string;
  /** stops listening, lets in-flight requests finish, closes the snapshot file; idempotent */
  close(): Promise<void>;
}

function snapshotFile(o: StartServerOptions): string {
  if (o.db !== undefined && o.demo !== undefined) throw new Error('startServer: pass db or demo, not both');
  if (o.db !== undefined) {
    if (typeof o.db !== 'string' || o.db === '') throw new Error(`startServer: db must be a snapshot file path, got ${JSON.stringify(o.db)}`);
    return o.db;
  }
  if (o.demo === undefined) throw new Error("startServer: pass db: 'file.sqlite' or demo: 'move' | 'wasm' | 'evm'");
  if (!DEMO_VMS.includes(o.demo)) throw new Error(`startServer: demo must be one of ${DEMO_VMS.join(', ')}, got ${JSON.stringify(o.demo)}`);
  return demoSnapshotPath(o.demo);
}

/**
 * Opens the snapshot and listens; resolves once the server accepts connections. Rejects (and
 * leaves nothing open) on a missing or bad snapshot file or a port in use.
 */
export async function startServer(options: StartServerOptions = {}): Promise<RunningIndexerApi> {
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`startServer: port must be 0..65535, got ${String(options.port)}`);
  const logLevel = options.logLevel ?? 'error';
  if (!LOG_LEVELS.includes(logLevel)) throw new Error(`startServer: logLevel must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(logLevel)}`);
  const file = snapshotFile(options);
  const [{ createRequestListener }, { createMetrics }, { loadOpenApi }, server, { SnapshotHolder }, { ResponseCache }, { createLogger }] = await Promise.all([
    import('./app'), import('./http/ops'), import('./openapi'), import('./server'), import('./snapshot/holder'), import('./http/caching'), import('./http/log'),
  ]);
  const holder = SnapshotHolder.open(file);
  let draining = false;
  let running;
  const logger = createLogger(logLevel);
  try {
    const responseCache = new ResponseCache(LIBRARY_DEFAULTS.cacheBytes, LIBRARY_DEFAULTS.cacheEntries);
    const metrics = createMetrics(() => holder.current(), responseCache);
    holder.on('swap', () => { metrics.swapped(); responseCache.clear(); });
    holder.on('refused', (err: unknown) => { metrics.swapFailed(); logger.error('new snapshot refused; still serving the old one', { error: String(err) }); });
    const app = createRequestListener({
      snapshots: holder, openapi: loadOpenApi(), logger, metrics, responseCache,
      options: { corsOrigin: options.corsOrigin ?? '*', validateResponses: options.validateResponses ?? false, draining: () => draining },
    });
    running = await server.startServer(app, options.host ?? '127.0.0.1', port);
  } catch (e) {
    holder.close();
    throw e;
  }
  if (options.watch) holder.watch({ pollMs: LIBRARY_DEFAULTS.watchPollMs });
  const listening = running;
  const address = listening.server.address();
  const boundPort = typeof address === 'object' && address !== null ? address.port : port;
  let closed: Promise<void> | undefined;
  return {
    url: listening.url,
    port: boundPort,
    db: file,
    close: () => closed ??= (async () => {
      draining = true;
      await listening.close(LIBRARY_DEFAULTS.closeTimeoutMs);
      holder.close();
      logger.flush();
    })(),
  };
}
