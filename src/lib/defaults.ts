/**
 * The defaults of the settings that lower layers apply themselves (the HTTP server, the app,
 * the crawl client), declared once. The CLI's option tables (src/commands/options.ts) show
 * these same values in `--help`; a setting left unset by a library caller falls back to them.
 */

/** `serve`: the HTTP server, its response cache and its watches. */
export const SERVE_DEFAULTS = {
  host: '127.0.0.1',
  port: 8080,
  corsOrigin: '*',
  /** whole request (headers + body) must arrive within this, ms (408 otherwise) */
  requestTimeoutMs: 30_000,
  /** request headers must arrive within this, ms */
  headersTimeoutMs: 10_000,
  /** idle keep-alive connections are closed after this, ms */
  keepAliveTimeoutMs: 5_000,
  /** the request head but its target (method, version, headers), bytes (431 beyond) */
  maxHeaderSize: 16_384,
  /** request target, bytes (414 beyond) */
  maxUrlLength: 8_192,
  /** in-flight requests get this long to finish on SIGTERM, ms */
  shutdownTimeoutMs: 10_000,
  /** Cache-Control max-age of a 200, seconds */
  cacheMaxAge: 1,
  /** response cache byte cap (bodies) */
  cacheBytes: 64 * 1024 * 1024,
  /** response cache entry cap */
  cacheEntries: 100_000,
  /** the response cache's key table (validators, each body's key too): bytes (src/cache/store.ts DEFAULT_VALIDATOR_BYTES) */
  cacheValidatorBytes: 32 * 1024 * 1024,
  /** stat poll interval backing up the file watch, ms */
  watchPollMs: 2_000,
  /** how often to look for a batch committed by `follow`, ms */
  commitPollMs: 100,
  /** poll interval of --pull */
  pullInterval: '30s',
  /** a growing demo chain (serve --start-height): one block this often, ms */
  blockMs: 1_000,
  /** requests waiting in one serving process beyond which a request gets 503 at once (src/http/admission.ts) */
  maxQueued: 256,
  /** requests one client may have waiting in one process */
  maxQueuedPerClient: 64,
  /** a request that waited this long for its turn gets 503 instead of running, ms */
  maxQueueWaitMs: 5_000,
  /** requests slower than this get a 'slow request' warn line, ms */
  slowRequestMs: 1_000,
} as const;

/** The crawl HTTP client (`import --from-api`, `--rest-url`, `follow --from-api`). */
export const HTTP_CLIENT_DEFAULTS = {
  /** requests in flight */
  concurrency: 4,
  /** retries after the first attempt */
  retries: 5,
  /** per-request timeout, ms */
  timeoutMs: 30_000,
  /** first retry delay, ms (doubled per retry); not an option: tests pass less */
  backoffMs: 250,
} as const;

/** A source's options (`import`, `follow`): what /status reports of a PostgreSQL source (rollytics keeps these in its build). */
export const SOURCE_DEFAULTS = {
  statusVersion: 'dev',
  statusCommit: 'unknown',
} as const;

/** `follow`: the poll loop and its metrics listener. */
export const FOLLOW_DEFAULTS = {
  /** poll interval when caught up (a duration, src/lib/duration.ts) */
  interval: '2s',
  /** at most this many heights per batch (one write transaction) */
  batchBlocks: 2_000,
  /** longest wait between retries while the source fails */
  maxBackoff: '60s',
  /** address of --metrics-port */
  metricsHost: '127.0.0.1',
  /** --metrics-port's /ready answers 503 once the follower has not advanced for longer than this */
  maxStall: '60s',
  /** the rich list is read whole, so apart from the batches at this cadence (docs/follow.md "The rich list") */
  richlistInterval: '60s',
  /** a refresh changing more rich-list rows than this builds the new list beside and swaps it in */
  richlistSwapRows: 50_000,
  /** rows per chunk of a refresh's diff and of a build beside (each chunk of the build its own transaction) */
  richlistChunkRows: 50_000,
  /** the whole collection list is compared with the source's apart from the batches (docs/follow.md "Cost") */
  collectionsAuditInterval: '5m',
} as const;

/** `import`: what it says while it runs. */
export const IMPORT_DEFAULTS = {
  /** off a terminal, a progress line this often (a duration) */
  progressInterval: '10s',
} as const;
