/**
 * `serve`'s settings, in one module (ponder's `buildOptions` is the model, docs/architecture.md
 * "Settings"): each option declared once in SERVE_OPTIONS — name, check, default and help —,
 * what yargs gives a handler (ServeArgs, the table's type: ArgsOf in src/settings/numbers.ts),
 * the checks between options (checkServeArgs), and the one
 * resolve step (resolveServe) into ServeConfig, whose `stack` (ServeSettings) the assembly, the
 * listener, the app and the response cache take whole: each reads the fields it uses, and nothing
 * below this module restates a setting's name, default or check. The library's startServer()
 * (src/index.ts) starts from the same defaults (serveDefaults) and goes through the same step.
 */
import { availableParallelism } from 'node:os';
import { defaultLogFormat, LOG_LEVELS, type LogFormat, type LogLevel } from '../lib/log';
import { VM_TYPES, type VmType } from '../lib/vm';
import { type ArgsOf, byteSize, choice, decimal, defaultsOf, duration, int, named, repeatable } from './numbers';
import { LOG_FORMAT_OPTION } from './log';

export const SERVE_OPTIONS = named({
  db: repeatable({
    type: 'string',
    requiresArg: true,
    defaultDescription: 'the --demo snapshot',
    describe:
      'Snapshot file to serve (built by `import`). Default: the bundled demo snapshot chosen by --demo. Given once, the chain is served at ' +
      'the root; given again (--db a.sqlite --db b.sqlite), one replica serves every chain under /{chain_id}/ and / lists them (docs/scaling.md)',
  }),
  'db-dir': {
    type: 'string',
    requiresArg: true,
    defaultDescription: 'none: --db, or the --demo snapshot',
    describe:
      'Serve every *.sqlite snapshot of this directory, each chain under /{chain_id}/ (/ lists them); a file added to or removed from it is ' +
      'served or dropped without a restart. Not with --db or --pull',
  },
  // every VM has a bundled demo (src/serve/demo.ts)
  demo: choice({ choices: VM_TYPES, default: 'move', describe: 'Which bundled demo snapshot to serve when --db is not given' }),
  host: { type: 'string', default: '127.0.0.1', describe: 'Address to listen on (0.0.0.0 for all interfaces)' },
  port: int(
    { min: 0, max: 65535 },
    {
      default: 8080,
      describe: 'TCP port to listen on; 0 picks a free one and prints `listening http://HOST:PORT` as the first line of stdout',
    },
  ),
  'base-url': {
    type: 'string',
    requiresArg: true,
    defaultDescription: 'the root',
    // the handler gets it in parseBaseUrl's form (below)
    coerce: (v: string | string[]) => parseBaseUrl(Array.isArray(v) ? v[v.length - 1] : v, '--base-url'),
    describe:
      'Answer under this path prefix (/minimove-1/, for a reverse proxy that keeps it): the API, the explorer, Swagger UI and /status, ' +
      '/health, /ready, /metrics; anything outside it is a 404. --ops-port stays at the root',
  },
  'cors-origin': { type: 'string', default: '*', describe: "Allowed CORS origins: '*', a comma-separated list (with *.domain patterns), or '' to disable" },
  verify: {
    type: 'boolean',
    default: true,
    describe:
      'Quick-check every page of the snapshot at start (reads the whole file, ≈7 s per GB warm; docs/reliability.md) — unless this unchanged ' +
      'file passed before (serve, `indexer-api check`, a --pull download): a pass is recorded and taken without reading again ' +
      '(docs/reliability.md#a-check-once-per-file). The server listens at once and /ready answers 503 until the check passes. --no-verify skips it ' +
      'at start; every file that arrives later is always checked before it is ready: a file renamed over --db (or over a file of --db-dir) before ' +
      'it is swapped in, a file added to --db-dir before its chain answers, a --pull download before it is renamed over --db (a batch `follow` ' +
      'commits in place is not checked again)',
  },
  explorer: {
    type: 'boolean',
    default: true,
    describe:
      'Serve the built-in explorer (HTML) at / and its pages (several chains: each under /{chain_id}/, a chain picker at /); --no-explorer ' +
      'leaves only the API (/ answers the JSON 404; several chains: the JSON chain list)',
  },
  get: { type: 'string', describe: 'Answer one GET request for this path in-process, print the body and exit (0 iff status 200)' },
  workers: int(
    { min: 1 },
    {
      default: availableParallelism(),
      defaultDescription: 'number of cores',
      describe: 'Processes serving the port (node:cluster); 1 = a single process, no cluster',
    },
  ),
  'log-level': choice({ choices: LOG_LEVELS, default: 'info', describe: 'Log lines on stdout: info logs one line per request; warn and error drop those' }),
  ...LOG_FORMAT_OPTION,
  'cache-max-age': int(
    { min: 0 },
    {
      default: 1,
      describe:
        'Cache-Control max-age (seconds) of 200 lists and state (txs and blocks go immutable); each carries a strong ETag: of the versions of ' +
        'what it read, decidable by any process without the page (account activity, lists, blocks), else of its bytes (docs/response-cache.md)',
    },
  ),
  'cache-bytes': byteSize(
    { min: 0 },
    {
      default: 64 * 1024 * 1024,
      describe:
        'Bodies of 200s kept in memory per worker (one budget for all chains), answered before Express: byte cap (64m, 1g; binary units). A ' +
        'body goes to the keys asked for most; 0 = no body is kept — every GET runs its query, but an unchanged conditional GET is still a 304 from ' +
        'its validator (--cache-validator-bytes; docs/response-cache.md)',
    },
  ),
  'cache-entries': int({ min: 0 }, { default: 100_000, describe: 'Most bodies kept per worker (0 = no body, as --cache-bytes 0)' }),
  'cache-validator-bytes': byteSize(
    { min: 0 },
    {
      default: 32 * 1024 * 1024,
      describe:
        "Validators kept per worker (≈ 85 bytes each: an answer's ETag and what it read), long after their bodies, so that an unchanged poll " +
        'is a 304 without reading a row; every kept body also holds one. 0 = no response cache at all (no validator, no body)',
    },
  ),
  watch: {
    type: 'boolean',
    default: true,
    describe:
      'Hot-swap when the file at --db (each --db, each file of --db-dir) is replaced (rename over it); SIGHUP always reloads. ' + '--no-watch to disable',
  },
  'watch-poll-ms': int(
    { min: 0 },
    {
      default: 2_000,
      describe:
        'Stat poll interval backing up the file watch (0 = watch only); also how often --db-dir is looked at for added and removed files ' +
        '(every 2 s when 0 or with --no-watch)',
    },
  ),
  'request-timeout-ms': int({ min: 0 }, { default: 30_000, describe: 'A request must arrive completely within this (408 otherwise)' }),
  'headers-timeout-ms': int(
    { min: 0 },
    {
      default: 10_000,
      describe: 'Request headers must arrive within this: slow clients are cut off (capped at --request-timeout-ms)',
    },
  ),
  'keep-alive-timeout-ms': int({ min: 0 }, { default: 5_000, describe: 'Idle keep-alive connections are closed after this' }),
  'max-header-size': int(
    { min: 1 },
    {
      default: 16_384,
      describe:
        'Request head but its target (method, version, headers), bytes: 431 beyond. The target has its own limit, --max-url-length (414), so a ' +
        'long query string gets 414 whatever this is',
    },
  ),
  'max-url-length': int({ min: 1 }, { default: 8_192, describe: 'Request URL, bytes (414 beyond)' }),
  'max-lag-s': decimal(
    { above: 0 },
    {
      defaultDescription: 'off',
      describe: '/ready answers 503 when the newest block is older than this many seconds (a stale replica leaves the load balancer); off by default',
    },
  ),
  'commit-poll-ms': int(
    { min: 0 },
    {
      default: 100,
      describe: 'How often to look for a batch committed by `follow` to --db (PRAGMA data_version, microseconds each); 0 = never',
    },
  ),
  'shutdown-timeout-ms': int(
    { min: 0 },
    {
      default: 10_000,
      describe: 'On SIGTERM/SIGINT, in-flight requests get this long to finish; then the rest are cut and the process exits 1',
    },
  ),
  'max-queued': int(
    { min: 1 },
    {
      default: 256,
      describe:
        'Requests waiting in one serving process (each runs its query alone, the least-served client first); one more is answered 503 with ' +
        'Retry-After at once (docs/reliability.md#overload)',
    },
  ),
  'max-queued-per-client': int(
    { min: 1 },
    {
      default: 64,
      describe: 'Requests one client (peer address, or --client-ip-header) may have waiting in one process; one more gets a 503',
    },
  ),
  'max-queue-wait-ms': int({ min: 0 }, { default: 5_000, describe: 'A request that waited this long for its turn is answered 503 instead of running' }),
  'client-ip-header': {
    type: 'string',
    defaultDescription: 'the peer address',
    describe:
      'Behind a load balancer: the request header naming the client for fair share (e.g. x-forwarded-for: its last address, the one the ' +
      'balancer added). Default: the peer address',
  },
  'ops-port': int(
    { min: 0, max: 65535 },
    {
      defaultDescription: 'off',
      describe:
        'Also answer /health, /ready and /metrics on this port, from a thread (or the cluster primary) that runs no query, so they answer at ' +
        'once while every worker is busy; deploy/ probes it. Off by default',
    },
  ),
  'slow-request-ms': int(
    { min: 0 },
    {
      default: 1_000,
      describe: "Requests slower than this get a 'slow request' warn line (route, path with its parameters, ms)",
    },
  ),
  pull: {
    type: 'string',
    describe:
      'URL of a manifest.json written by `publish`: download its file into --db (resumable, sha256 + quick_check verified) before serving, ' +
      'then poll it and hot-swap each newer file. /ready is 503 until the first good file is in place. One chain only: one --db, no --db-dir',
  },
  'expect-chain-id': {
    type: 'string',
    requiresArg: true,
    defaultDescription: 'the chain of the first file served',
    describe:
      'Serve only this chain: a --db (or a --pull manifest, or a file renamed over --db) of another chain is refused from the start. Without ' +
      'it the chain of the first file served is kept: a replica never changes chains unless told (docs/scaling.md). One chain only: one --db or ' +
      '--pull, not several',
  },
  'pull-interval': duration({
    default: '30s',
    describe: 'How often --pull polls the manifest (30s, 500ms, 2m); failed downloads retry sooner, backing off up to this',
  }),
  'start-height': int(
    { min: 1 },
    {
      defaultDescription: "off: /status is the file's",
      describe:
        "A growing demo chain: /status says this height at start and one block more every --block-ms, up to the file's own height; every " +
        'other answer is the whole file\'s, exact. A `follow` of this server reads one more block each time (docs/follow.md "Watch it work"). One ' +
        'chain, one process (--workers 1)',
    },
  ),
  'block-ms': int({ min: 10 }, { default: 1_000, describe: 'With --start-height: one block more on /status this often, ms' }),
});

/**
 * `serve`'s options as yargs gives them, each already checked, derived from SERVE_OPTIONS (ArgsOf,
 * src/settings/numbers.ts): `--cache-bytes 64m` is `cacheBytes: number`, an option with a default is
 * always there, one without (`--db`, `--get`, `--ops-port`…) may be missing.
 */
export type ServeArgs = ArgsOf<typeof SERVE_OPTIONS> & {
  /** check every response against the OpenAPI document (the library's contract tests; not an option) */
  validateResponses?: boolean;
};

/** A growing demo chain (serve --start-height, src/serve/growth.ts). */
export interface Growth {
  /** the /status height at start */
  startHeight: number;
  /** one block more this often, ms */
  blockMs: number;
}

/**
 * `serve --base-url` (datasette's `base_url`): the API, the explorer, Swagger UI and the ops
 * endpoints answer under one path prefix, for a reverse proxy that keeps it
 * (docs/scaling.md#one-path-prefix). The prefix is written as the operator likes —
 * `/minimove-1/`, `/minimove-1`, `minimove-1` — and kept as `/minimove-1` (no trailing slash;
 * `''` = the root). Only unreserved characters (RFC 3986 section 2.3) in non-empty segments:
 * the prefix is pasted as it is into URLs, HTML attributes, JavaScript and proxy configs, and a
 * request must be able to spell it only one way (no percent-encoding, no dot segments).
 */
export function parseBaseUrl(value: string, name: string): string {
  const text = String(value).trim();
  const bad = (why: string): Error => new Error(`${name} must be a path prefix such as /minimove-1/, got ${JSON.stringify(String(value))}: ${why}`);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) throw bad("a path, not a URL (the host is the proxy's)");
  const segments = text.split('/').filter((s, i, all) => s !== '' || (i !== 0 && i !== all.length - 1));
  for (const s of segments) {
    if (s === '') throw bad('empty segment (//)');
    if (s === '.' || s === '..') throw bad(`dot segment ${JSON.stringify(s)}`);
    const other = /[^A-Za-z0-9._~-]/.exec(s);
    if (other) throw bad(`${JSON.stringify(other[0])} is not allowed (letters, digits, '-', '.', '_', '~' and '/' between segments)`);
  }
  return segments.length === 0 ? '' : `/${segments.join('/')}`;
}

/** Every option's default, as yargs gives it to the handler: the library's starting point (src/index.ts). */
export function serveDefaults(): ServeArgs {
  return defaultsOf(SERVE_OPTIONS);
}

/**
 * serve's settings when no option is given (what `indexer-api serve` runs with): for what builds
 * a part of the stack alone — tests, benches — and listen()'s limits when none are passed.
 */
export function defaultServeSettings(): ServeSettings {
  return resolveServe(serveDefaults(), () => '').stack;
}

/**
 * Request limits. Node enforces the socket-level ones (src/serve/server.ts), the URL length is
 * ours so that the client gets a JSON 414 (src/http/limits.ts applies them all).
 */
export interface Limits {
  /** whole request (headers + body) must arrive within this, ms */
  requestTimeoutMs: number;
  /** headers must arrive within this, ms (slow-client protection; ≤ requestTimeoutMs) */
  headersTimeoutMs: number;
  /** idle keep-alive connections are closed after this, ms */
  keepAliveTimeoutMs: number;
  /** request line + headers but the target, bytes (beyond it: 431) */
  maxHeaderSize: number;
  /** request target, bytes (beyond it: 414) */
  maxUrlLength: number;
}

/**
 * What one serving process is built from (src/serve/assembly.ts), every field decided: the
 * assembly, the listener, the app of each chain and the response cache take it whole.
 */
export interface ServeSettings {
  host: string;
  port: number;
  limits: Limits;
  /** CORS origins: '*', a comma-separated list (with *.domain patterns), or '' for none */
  corsOrigin: string;
  /** --base-url in parseBaseUrl's form (`/minimove-1`, '' = the root); the stack's `url` ends with it */
  baseUrl: string;
  /** Cache-Control max-age of a 200, seconds */
  cacheMaxAge: number;
  /** response cache: body caps (either 0 = no body kept) and the validators' budget (its key table; 0 = no response cache) */
  cacheBytes: number;
  cacheEntries: number;
  cacheValidatorBytes: number;
  /** the built-in explorer at / */
  explorer: boolean;
  /** check every response against the OpenAPI document (the library's contract tests) */
  validateResponses: boolean;
  /** /ready answers 503 when the newest block is older than this many seconds; undefined = never */
  maxLagS: number | undefined;
  /**
   * quick-check the file(s) there at start on a thread, /ready 503 meanwhile; a file that arrives
   * later (a hot swap, a file added to --db-dir) is always checked
   */
  verifyAtStart: boolean;
  /** serve only this chain (a replica of one): a file of another chain is refused at start and at every swap */
  expectChainId: string | undefined;
  /** hot-swap when the file at the path is replaced, with this stat poll (ms); undefined = no file watch */
  watchPollMs: number | undefined;
  /** look for a batch another writer (`follow`) committed every this many ms; 0 = never */
  commitPollMs: number;
  /** admission and fair share (src/http/admission.ts) */
  admission: { maxQueued: number; maxQueuedPerClient: number; maxWaitMs: number; clientIpHeader: string | undefined };
  /** requests slower than this get a 'slow request' warn line, ms */
  slowRequestMs: number;
  /** /health, /ready, /metrics also on this port, answered where no query runs; undefined = none */
  opsPort: number | undefined;
  /** a growing demo chain (src/serve/growth.ts): /status from this height, a block every blockMs */
  growth: Growth | undefined;
}

export interface ServeConfig {
  /** the snapshot file: --db, or the bundled demo of --demo (the first --db of a replica of several) */
  file: string;
  /** a replica of several chains: two or more --db files, or --db-dir (then `file` is not served) */
  chains: { files: readonly string[]; dir?: string } | undefined;
  /** --pull and its poll interval (ms) */
  pull: { url: string; intervalMs: number } | undefined;
  get: string | undefined;
  /** 1 with --get (one request in-process) */
  workers: number;
  logLevel: LogLevel;
  logFormat: LogFormat;
  shutdownTimeoutMs: number;
  stack: ServeSettings;
}

/**
 * Checks between options, made while yargs parses (a usage error, exit 2): each names both
 * options and what was given.
 */
export function checkServeArgs(
  a: Pick<ServeArgs, 'port' | 'opsPort' | 'pull' | 'db' | 'dbDir' | 'startHeight' | 'expectChainId'>,
  typed: readonly string[] = [],
): void {
  const dbs = dbFiles(a.db);
  if (a.startHeight !== undefined) {
    const what =
      a.dbDir !== undefined ? `--db-dir ${a.dbDir}` : dbs.length > 1 ? `${dbs.length} --db files` : a.pull !== undefined ? `--pull ${a.pull}` : undefined;
    if (what !== undefined) throw new Error(`--start-height grows one chain from one file, not ${what}`);
  } else if (typed.some((t) => t === '--block-ms' || t.startsWith('--block-ms='))) {
    throw new Error('--block-ms goes with --start-height (the height a growing demo chain starts at)');
  }
  if (a.expectChainId !== undefined && (a.dbDir !== undefined || dbs.length > 1)) {
    const several = a.dbDir !== undefined ? `--db-dir ${a.dbDir}` : `${dbs.length} --db files`;
    throw new Error(
      `--expect-chain-id ${a.expectChainId} pins the one chain of a replica of one (--db FILE or --pull), not ${several}: ` +
        "a replica of several keeps each file's chain from its first open",
    );
  }
  if (a.expectChainId === '') throw new Error('--expect-chain-id needs a chain id, got ""');
  if (a.dbDir !== undefined && dbs.length > 0) {
    throw new Error(`--db-dir ${a.dbDir} and --db ${dbs.join(' --db ')}: give the files one way (--db-dir serves every *.sqlite file of the directory)`);
  }
  if (a.pull !== undefined && a.dbDir !== undefined) throw new Error(`--pull serves one chain: it keeps one --db file current, not --db-dir ${a.dbDir}`);
  if (a.pull !== undefined && dbs.length > 1) {
    throw new Error(`--pull serves one chain: it keeps one --db file current, not ${dbs.length} (--db ${dbs.join(' --db ')})`);
  }
  if (a.pull !== undefined && dbs.length === 0) throw new Error('--pull needs --db: the local file the pulled snapshot is kept in');
  const seen = new Set<string>();
  for (const f of dbs) {
    if (seen.has(f)) throw new Error(`--db ${f} is given twice`);
    seen.add(f);
  }
  if (a.opsPort !== undefined && a.opsPort !== 0 && a.opsPort === a.port) {
    throw new Error(`--ops-port ${a.opsPort} is --port ${a.port}: the operations port must be another port`);
  }
}

/** --db as given: none, once, or repeated. */
function dbFiles(db: string | string[] | undefined): string[] {
  return db === undefined ? [] : Array.isArray(db) ? db.map(String) : [String(db)];
}

/** The one resolve step: checked options → the complete config. */
export function resolveServe(a: ServeArgs, snapshotFile: (demo: VmType) => string): ServeConfig {
  const dbs = dbFiles(a.db);
  // --get answers one request in-process: nothing to cache, watch or hand to other workers, and no second port
  const one = a.get !== undefined;
  return {
    file: dbs[0] ?? (a.dbDir === undefined ? snapshotFile(a.demo) : a.dbDir),
    chains: a.dbDir !== undefined ? { files: [], dir: a.dbDir } : dbs.length > 1 ? { files: dbs } : undefined,
    pull: a.pull === undefined ? undefined : { url: a.pull, intervalMs: a.pullInterval },
    get: a.get,
    // a growing chain's height is one process's clock (src/serve/growth.ts)
    workers: one || a.startHeight !== undefined ? 1 : a.workers,
    logLevel: a.logLevel,
    logFormat: a.logFormat ?? defaultLogFormat(process.stdout),
    shutdownTimeoutMs: a.shutdownTimeoutMs,
    stack: {
      host: one ? '127.0.0.1' : a.host,
      port: one ? 0 : a.port,
      limits: {
        requestTimeoutMs: a.requestTimeoutMs,
        headersTimeoutMs: a.headersTimeoutMs,
        keepAliveTimeoutMs: a.keepAliveTimeoutMs,
        maxHeaderSize: a.maxHeaderSize,
        maxUrlLength: a.maxUrlLength,
      },
      corsOrigin: a.corsOrigin,
      baseUrl: a.baseUrl ?? '',
      cacheMaxAge: a.cacheMaxAge,
      cacheBytes: one ? 0 : a.cacheBytes,
      cacheEntries: one ? 0 : a.cacheEntries,
      cacheValidatorBytes: one ? 0 : a.cacheValidatorBytes,
      explorer: a.explorer,
      validateResponses: a.validateResponses ?? false,
      maxLagS: a.maxLagS,
      verifyAtStart: a.verify,
      watchPollMs: a.watch && !one ? a.watchPollMs : undefined,
      commitPollMs: one ? 0 : a.commitPollMs,
      admission: { maxQueued: a.maxQueued, maxQueuedPerClient: a.maxQueuedPerClient, maxWaitMs: a.maxQueueWaitMs, clientIpHeader: a.clientIpHeader },
      slowRequestMs: a.slowRequestMs,
      opsPort: one ? undefined : a.opsPort,
      growth: a.startHeight === undefined ? undefined : { startHeight: a.startHeight, blockMs: a.blockMs },
      expectChainId: a.expectChainId,
    },
  };
}
