/**
 * `serve`'s settings, resolved once: what the command line (every default and check applied by
 * yargs, src/commands/options.ts) or the library (src/index.ts, with its smaller defaults) gives
 * becomes one complete ServeConfig. Below this step nothing restates a default or repeats a
 * check: the run function, the assembly, the app and the listener take the complete values.
 */
import { defaultLogFormat, type LogFormat, type LogLevel } from '../lib/log';
import type { VmType } from '../lib/vm';
import type { ServeStackOptions } from '../serve/assembly';
import { SERVE_DEFAULTS } from '../lib/defaults';

/** `serve`'s options as yargs gives them: each with its default, each value already checked. */
export interface ServeArgs {
  /** --db, once (one chain at the root) or more (each chain under /{chain_id}/) */
  db?: string | string[];
  /** --db-dir: every snapshot of a directory, each chain under /{chain_id}/ */
  dbDir?: string;
  demo: VmType;
  host: string;
  port: number;
  corsOrigin: string;
  /** --base-url, already in parseBaseUrl's form (src/http/url.ts); unset = the root */
  baseUrl?: string;
  /** quick-check the file at start, while listening with /ready 503 (renamed-over files are always checked) */
  verify: boolean;
  /** answer one GET in-process, print the body, exit 0 iff 200 */
  get?: string;
  logLevel: LogLevel;
  /** default: text when stdout (where the log goes) is a terminal, else JSON */
  logFormat?: LogFormat;
  /** Cache-Control max-age of a 200, seconds */
  cacheMaxAge: number;
  /** response cache: body caps (either 0 = no body kept) and the validators' budget (0 = no response cache) */
  cacheEntries: number;
  cacheBytes: number;
  cacheValidatorBytes: number;
  /** reload when the file at --db is replaced, and the stat poll interval */
  watch: boolean;
  watchPollMs: number;
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxHeaderSize: number;
  maxUrlLength: number;
  /** in-flight requests get this long to finish on SIGTERM before connections are cut */
  shutdownTimeoutMs: number;
  /** the built-in explorer at / */
  explorer: boolean;
  /** processes serving the port; 1 = no cluster */
  workers: number;
  /** /ready answers 503 when the newest block is older than this many seconds (off when unset) */
  maxLagS?: number;
  /** how often to look for a batch committed by `follow` (PRAGMA data_version), ms; 0 = never */
  commitPollMs: number;
  /** `--pull URL/manifest.json`: keep --db equal to a publish directory's newest file (src/pull/) */
  pull?: string;
  /** poll interval of --pull, ms (a duration option, src/commands/numbers.ts) */
  pullInterval: number;
  /** serve (and pull) only this chain */
  expectChainId?: string;
  /** admission (src/http/admission.ts): requests waiting per process, per client, and for how long */
  maxQueued: number;
  maxQueuedPerClient: number;
  maxQueueWaitMs: number;
  /** the request header naming the client behind a load balancer (its last address) */
  clientIpHeader?: string;
  /** /health, /ready, /metrics also on this port, answered where no query runs */
  opsPort?: number;
  /** requests slower than this get a 'slow request' warn line, ms */
  slowRequestMs: number;
  /** check every response against the OpenAPI document (the library's contract tests) */
  validateResponses?: boolean;
  /** a growing demo chain: /status from this height, one block more every blockMs (src/serve/growth.ts) */
  startHeight?: number;
  blockMs?: number;
}

/** What the serve stack (src/serve/assembly.ts) is built from, every field decided, but what each process adds. */
export type StackSettings = Omit<ServeStackOptions, 'file' | 'chains' | 'holder' | 'logger' | 'clusterWorker'>;

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
  stack: StackSettings;
}

/**
 * Checks between options, made while yargs parses (a usage error, exit 2): each names both
 * options and what was given.
 */
export function checkServeArgs(a: Pick<ServeArgs, 'port' | 'opsPort' | 'pull' | 'db' | 'dbDir' | 'startHeight' | 'blockMs' | 'expectChainId'>, typed: readonly string[] = []): void {
  const dbs = dbFiles(a.db);
  if (a.startHeight !== undefined) {
    const what = a.dbDir !== undefined ? `--db-dir ${a.dbDir}` : dbs.length > 1 ? `${dbs.length} --db files` : a.pull !== undefined ? `--pull ${a.pull}` : undefined;
    if (what !== undefined) throw new Error(`--start-height grows one chain from one file, not ${what}`);
  } else if (typed.some((t) => t === '--block-ms' || t.startsWith('--block-ms='))) {
    throw new Error('--block-ms goes with --start-height (the height a growing demo chain starts at)');
  }
  if (a.expectChainId !== undefined && (a.dbDir !== undefined || dbs.length > 1)) {
    throw new Error(`--expect-chain-id ${a.expectChainId} pins the one chain of a replica of one (--db FILE or --pull), not ${a.dbDir !== undefined ? `--db-dir ${a.dbDir}` : `${dbs.length} --db files`}: a replica of several keeps each file's chain from its first open`);
  }
  if (a.expectChainId === '') throw new Error('--expect-chain-id needs a chain id, got ""');
  if (a.dbDir !== undefined && dbs.length > 0) throw new Error(`--db-dir ${a.dbDir} and --db ${dbs.join(' --db ')}: give the files one way (--db-dir serves every *.sqlite file of the directory)`);
  if (a.pull !== undefined && a.dbDir !== undefined) throw new Error(`--pull serves one chain: it keeps one --db file current, not --db-dir ${a.dbDir}`);
  if (a.pull !== undefined && dbs.length > 1) throw new Error(`--pull serves one chain: it keeps one --db file current, not ${dbs.length} (--db ${dbs.join(' --db ')})`);
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
  return {
    file: dbs[0] ?? (a.dbDir === undefined ? snapshotFile(a.demo) : a.dbDir),
    chains: a.dbDir !== undefined ? { files: [], dir: a.dbDir } : dbs.length > 1 ? { files: dbs } : undefined,
    pull: a.pull === undefined ? undefined : { url: a.pull, intervalMs: a.pullInterval },
    get: a.get,
    // a growing chain's height is one process's clock (src/serve/growth.ts)
    workers: a.get !== undefined || a.startHeight !== undefined ? 1 : a.workers,
    logLevel: a.logLevel,
    logFormat: a.logFormat ?? defaultLogFormat(process.stdout),
    shutdownTimeoutMs: a.shutdownTimeoutMs,
    stack: {
      host: a.host,
      port: a.port,
      limits: {
        requestTimeoutMs: a.requestTimeoutMs, headersTimeoutMs: a.headersTimeoutMs, keepAliveTimeoutMs: a.keepAliveTimeoutMs,
        maxHeaderSize: a.maxHeaderSize, maxUrlLength: a.maxUrlLength,
      },
      corsOrigin: a.corsOrigin,
      baseUrl: a.baseUrl ?? '',
      cacheMaxAge: a.cacheMaxAge,
      cacheBytes: a.cacheBytes,
      cacheEntries: a.cacheEntries,
      cacheValidatorBytes: a.cacheValidatorBytes,
      explorer: a.explorer,
      validateResponses: a.validateResponses ?? false,
      maxLagS: a.maxLagS,
      verifyAtStart: a.verify,
      watchPollMs: a.watch ? a.watchPollMs : undefined,
      commitPollMs: a.commitPollMs,
      admission: { maxQueued: a.maxQueued, maxQueuedPerClient: a.maxQueuedPerClient, maxWaitMs: a.maxQueueWaitMs, clientIpHeader: a.clientIpHeader },
      slowRequestMs: a.slowRequestMs,
      opsPort: a.opsPort,
      growth: a.startHeight === undefined ? undefined : { startHeight: a.startHeight, blockMs: a.blockMs ?? SERVE_DEFAULTS.blockMs },
      expectChainId: a.expectChainId,
    },
  };
}
