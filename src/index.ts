/**
 * The library entry of the `indexer-api` package (docs/ci.md): a real indexer API inside a test
 * process, with no child process and no fixed port.
 *
 *     const srv = await startServer({ db: 'fixture.sqlite', port: 0 });
 *     await fetch(`${srv.url}/indexer/block/v1/blocks`);
 *     await srv.close();
 *
 * The server is the one `indexer-api serve --workers 1` runs — the same assembly
 * (src/serve/assembly.ts): pipeline, validation, response cache, the commit watch that sees a
 * batch `follow` commits, the fault log and /ready 503 on a damaged file — minus the signal
 * handling, which belongs to the test runner, and with the smaller defaults below.
 */
import { createLogger, LOG_LEVELS, LogLevel } from './lib/log';
import { DEMO_VMS, demoSnapshotPath } from './serve/demo';
import { parseBaseUrl, resolveServe, serveDefaults, ServeArgs } from './settings/serve';

export type { LogLevel };
export type DemoVm = 'move' | 'wasm' | 'evm';

/**
 * The in-process server's settings: `serve`'s own defaults (serveDefaults, declared once in
 * src/settings/serve.ts) with these over them — a smaller cache, a quicker stop, no explorer: a
 * test suite's server. A caller's options go over these, and the whole goes through `serve`'s
 * one resolve step.
 */
const LIBRARY_ARGS: Partial<ServeArgs> = {
  port: 0,
  // the file is checked when opened; a quick check of every page is `serve`'s start-up job
  verify: false,
  logLevel: 'error',
  // a test runner collects the lines: JSON, whatever the terminal
  logFormat: 'json',
  cacheBytes: 16 * 1024 * 1024,
  cacheEntries: 10_000,
  cacheValidatorBytes: 4 * 1024 * 1024,
  watch: false,
  watchPollMs: 500,
  // in-flight requests get this long on close(), ms
  shutdownTimeoutMs: 5_000,
  // / is the JSON 404, as in the API it replicates (serve shows the explorer there)
  explorer: false,
  workers: 1,
  validateResponses: false,
};

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
  /**
   * serve under this path prefix, as `serve --base-url` (`/minimove-1`, `/minimove-1/` and
   * `minimove-1` are the same); `url` then ends with it. Default: the root
   */
  baseUrl?: string;
  /** JSON log lines on stdout from this level (default 'error': quiet tests) */
  logLevel?: LogLevel;
  /** check every response against the OpenAPI document (default false; a contract test in your suite) */
  validateResponses?: boolean;
  /** hot-swap when the file at `db` is replaced (default false) */
  watch?: boolean;
}

export interface RunningIndexerApi {
  /** `http://127.0.0.1:PORT` (`http://127.0.0.1:PORT/minimove-1` with `baseUrl`), no trailing slash */
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
  const defaults: ServeArgs = { ...serveDefaults(), ...LIBRARY_ARGS };
  const port = options.port ?? defaults.port;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`startServer: port must be 0..65535, got ${String(options.port)}`);
  const logLevel = options.logLevel ?? defaults.logLevel;
  if (!LOG_LEVELS.includes(logLevel)) throw new Error(`startServer: logLevel must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(logLevel)}`);
  const file = snapshotFile(options);
  if (options.baseUrl !== undefined && typeof options.baseUrl !== 'string')
    throw new Error(`startServer: baseUrl must be a string, got ${JSON.stringify(options.baseUrl)}`);
  const baseUrl = options.baseUrl === undefined ? '' : parseBaseUrl(options.baseUrl, 'startServer: baseUrl');
  const c = resolveServe(
    {
      ...defaults,
      db: file,
      port,
      logLevel,
      baseUrl,
      host: options.host ?? defaults.host,
      corsOrigin: options.corsOrigin ?? defaults.corsOrigin,
      validateResponses: options.validateResponses ?? defaults.validateResponses,
      watch: options.watch ?? defaults.watch,
    },
    demoSnapshotPath,
  );
  const [{ assembleServeStack }, { ListenError, listenErrorText }] = await Promise.all([import('./serve/assembly'), import('./serve/server')]);
  const logger = createLogger(c.logLevel, undefined, {}, c.logFormat);
  let stack;
  try {
    stack = await assembleServeStack({ ...c.stack, file: c.file, logger, clusterWorker: false });
  } catch (e) {
    // the message names the port; `code` stays the system's (EADDRINUSE …) for a caller that tests it
    throw e instanceof ListenError ? Object.assign(new Error(`startServer: ${listenErrorText(e.error, e.host, e.port)}`), { code: e.error.code }) : e;
  }
  const running = stack;
  let closed: Promise<void> | undefined;
  return {
    url: running.url,
    port: running.port,
    db: c.file,
    close: () =>
      (closed ??= (async () => {
        // quick: no grace for requests still in the kernel's buffers (serve's SIGTERM waits 250 ms
        // for them): a test closes its server once its requests were answered
        await running.close(c.shutdownTimeoutMs, true);
        logger.flush();
      })()),
  };
}
