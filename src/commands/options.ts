/**
 * The options of `serve`, `import` and `follow`, each declared once: name, type, default, description.
 * The yargs builders take these tables whole (so `--help` shows them), and the defaults are
 * the ones the lower layers apply themselves when a library caller leaves a setting unset
 * (src/lib/defaults.ts): a default is never restated elsewhere.
 */
import { availableParallelism } from 'node:os';
import type { Options } from 'yargs';
import { DEMO_VMS } from '../serve/demo';
import { LOG_FORMATS, LOG_LEVELS, type LogLevel } from '../lib/log';
import { parseBaseUrl } from '../http/url';
import { FOLLOW_DEFAULTS, HTTP_CLIENT_DEFAULTS, IMPORT_DEFAULTS, SERVE_DEFAULTS, SOURCE_DEFAULTS } from '../lib/defaults';
import { VM_TYPES, type VmType } from '../lib/vm';
import { byteSize, choice, decimal, duration, httpUrl, int, named } from './numbers';

export { FOLLOW_DEFAULTS, HTTP_CLIENT_DEFAULTS, SERVE_DEFAULTS };

/** Every command's log lines: JSON for a collector, text for a person (src/lib/log.ts). */
export const LOG_FORMAT_OPTION: Record<string, Options> = {
  'log-format': choice({ choices: LOG_FORMATS, defaultDescription: 'text on a terminal, json otherwise', describe: 'Log lines as JSON objects (one per line) or as readable text' }),
};

export const SERVE_OPTIONS: Record<string, Options> = named({
  'db': { type: 'string', requiresArg: true, defaultDescription: 'the --demo snapshot', describe: 'Snapshot file to serve (built by `import`). Default: the bundled demo snapshot chosen by --demo. Given once, the chain is served at the root; given again (--db a.sqlite --db b.sqlite), one replica serves every chain under /{chain_id}/ and / lists them (docs/scaling.md)' },
  'db-dir': { type: 'string', requiresArg: true, defaultDescription: 'none: --db, or the --demo snapshot', describe: 'Serve every *.sqlite snapshot of this directory, each chain under /{chain_id}/ (/ lists them); a file added to or removed from it is served or dropped without a restart. Not with --db or --pull' },
  'demo': choice({ choices: DEMO_VMS, default: 'move' as VmType, describe: 'Which bundled demo snapshot to serve when --db is not given' }),
  'host': { type: 'string', default: SERVE_DEFAULTS.host, describe: 'Address to listen on (0.0.0.0 for all interfaces)' },
  'port': int({ min: 0, max: 65535 }, { default: SERVE_DEFAULTS.port, describe: 'TCP port to listen on; 0 picks a free one and prints `listening http://HOST:PORT` as the first line of stdout' }),
  'base-url': { type: 'string', requiresArg: true, defaultDescription: 'the root', coerce: (v: string | string[]) => parseBaseUrl(Array.isArray(v) ? v[v.length - 1] : v, '--base-url'), describe: 'Answer under this path prefix (/minimove-1/, for a reverse proxy that keeps it): the API, the explorer, Swagger UI and /status, /health, /ready, /metrics; anything outside it is a 404. --ops-port stays at the root' },
  'cors-origin': { type: 'string', default: SERVE_DEFAULTS.corsOrigin, describe: "Allowed CORS origins: '*', a comma-separated list (with *.domain patterns), or '' to disable" },
  'verify': { type: 'boolean', default: true, describe: 'Quick-check every page of the snapshot at start (reads the whole file, ≈7 s per GB warm; docs/reliability.md): the server listens at once and /ready answers 503 until the check passes. --no-verify skips it at start; every file that arrives later is always checked before it is ready: a file renamed over --db (or over a file of --db-dir) before it is swapped in, a file added to --db-dir before its chain answers, a --pull download before it is renamed over --db (a batch `follow` commits in place is not checked again)' },
  'explorer': { type: 'boolean', default: true, describe: 'Serve the built-in explorer (HTML) at / and its pages (several chains: each under /{chain_id}/, a chain picker at /); --no-explorer leaves only the API (/ answers the JSON 404; several chains: the JSON chain list)' },
  'get': { type: 'string', describe: 'Answer one GET request for this path in-process, print the body and exit (0 iff status 200)' },
  'workers': int({ min: 1 }, { default: availableParallelism(), defaultDescription: 'number of cores', describe: 'Processes serving the port (node:cluster); 1 = a single process, no cluster' }),
  'log-level': choice({ choices: LOG_LEVELS, default: 'info' as LogLevel, describe: 'Log lines on stdout: info logs one line per request; warn and error drop those' }),
  ...LOG_FORMAT_OPTION,
  'cache-max-age': int({ min: 0 }, { default: SERVE_DEFAULTS.cacheMaxAge, describe: 'Cache-Control max-age (seconds) of 200 lists and state (txs and blocks go immutable); each carries a strong ETag hashed from its bytes (docs/response-cache.md)' }),
  'cache-bytes': byteSize({ min: 0 }, { default: SERVE_DEFAULTS.cacheBytes, describe: 'Bodies of 200s kept in memory per worker (one budget for all chains), answered before Express: byte cap (64m, 1g; binary units). A body goes to the keys asked for most; 0 = no body is kept — every GET runs its query, but an unchanged conditional GET is still a 304 from its validator (--cache-validator-bytes; docs/response-cache.md)' }),
  'cache-entries': int({ min: 0 }, { default: SERVE_DEFAULTS.cacheEntries, describe: 'Most bodies kept per worker (0 = no body, as --cache-bytes 0)' }),
  'cache-validator-bytes': byteSize({ min: 0 }, { default: SERVE_DEFAULTS.cacheValidatorBytes, describe: 'Validators kept per worker (≈ 85 bytes each: an answer\'s ETag and what it read), long after their bodies, so that an unchanged poll is a 304 without reading a row; every kept body also holds one. 0 = no response cache at all (no validator, no body)' }),
  'watch': { type: 'boolean', default: true, describe: 'Hot-swap when the file at --db (each --db, each file of --db-dir) is replaced (rename over it); SIGHUP always reloads. --no-watch to disable' },
  'watch-poll-ms': int({ min: 0 }, { default: SERVE_DEFAULTS.watchPollMs, describe: 'Stat poll interval backing up the file watch (0 = watch only); also how often --db-dir is looked at for added and removed files (every 2 s when 0 or with --no-watch)' }),
  'request-timeout-ms': int({ min: 0 }, { default: SERVE_DEFAULTS.requestTimeoutMs, describe: 'A request must arrive completely within this (408 otherwise)' }),
  'headers-timeout-ms': int({ min: 0 }, { default: SERVE_DEFAULTS.headersTimeoutMs, describe: 'Request headers must arrive within this: slow clients are cut off (capped at --request-timeout-ms)' }),
  'keep-alive-timeout-ms': int({ min: 0 }, { default: SERVE_DEFAULTS.keepAliveTimeoutMs, describe: 'Idle keep-alive connections are closed after this' }),
  'max-header-size': int({ min: 1 }, { default: SERVE_DEFAULTS.maxHeaderSize, describe: 'Request head but its target (method, version, headers), bytes: 431 beyond. The target has its own limit, --max-url-length (414), so a long query string gets 414 whatever this is' }),
  'max-url-length': int({ min: 1 }, { default: SERVE_DEFAULTS.maxUrlLength, describe: 'Request URL, bytes (414 beyond)' }),
  'max-lag-s': decimal({ above: 0 }, { defaultDescription: 'off', describe: '/ready answers 503 when the newest block is older than this many seconds (a stale replica leaves the load balancer); off by default' }),
  'commit-poll-ms': int({ min: 0 }, { default: SERVE_DEFAULTS.commitPollMs, describe: 'How often to look for a batch committed by `follow` to --db (PRAGMA data_version, microseconds each); 0 = never' }),
  'shutdown-timeout-ms': int({ min: 0 }, { default: SERVE_DEFAULTS.shutdownTimeoutMs, describe: 'On SIGTERM/SIGINT, in-flight requests get this long to finish; then the rest are cut and the process exits 1' }),
  'max-queued': int({ min: 1 }, { default: SERVE_DEFAULTS.maxQueued, describe: 'Requests waiting in one serving process (each runs its query alone, the least-served client first); one more is answered 503 with Retry-After at once (docs/reliability.md#overload)' }),
  'max-queued-per-client': int({ min: 1 }, { default: SERVE_DEFAULTS.maxQueuedPerClient, describe: 'Requests one client (peer address, or --client-ip-header) may have waiting in one process; one more gets a 503' }),
  'max-queue-wait-ms': int({ min: 0 }, { default: SERVE_DEFAULTS.maxQueueWaitMs, describe: 'A request that waited this long for its turn is answered 503 instead of running' }),
  'client-ip-header': { type: 'string', defaultDescription: 'the peer address', describe: 'Behind a load balancer: the request header naming the client for fair share (e.g. x-forwarded-for: its last address, the one the balancer added). Default: the peer address' },
  'ops-port': int({ min: 0, max: 65535 }, { defaultDescription: 'off', describe: 'Also answer /health, /ready and /metrics on this port, from a thread (or the cluster primary) that runs no query, so they answer at once while every worker is busy; deploy/ probes it. Off by default' }),
  'slow-request-ms': int({ min: 0 }, { default: SERVE_DEFAULTS.slowRequestMs, describe: "Requests slower than this get a 'slow request' warn line (route, path with its parameters, ms)" }),
  'pull': { type: 'string', describe: 'URL of a manifest.json written by `publish`: download its file into --db (resumable, sha256 + quick_check verified) before serving, then poll it and hot-swap each newer file. /ready is 503 until the first good file is in place. One chain only: one --db, no --db-dir' },
  'expect-chain-id': { type: 'string', requiresArg: true, defaultDescription: 'the chain of the first file served', describe: 'Serve only this chain: a --db (or a --pull manifest, or a file renamed over --db) of another chain is refused from the start. Without it the chain of the first file served is kept: a replica never changes chains unless told (docs/scaling.md). One chain only: one --db or --pull, not several' },
  'pull-interval': duration({ default: SERVE_DEFAULTS.pullInterval, describe: 'How often --pull polls the manifest (30s, 500ms, 2m); failed downloads retry sooner, backing off up to this' }),
  'start-height': int({ min: 1 }, { defaultDescription: 'off: /status is the file\'s', describe: 'A growing demo chain: /status says this height at start and one block more every --block-ms, up to the file\'s own height; every other answer is the whole file\'s, exact. A `follow` of this server reads one more block each time (docs/follow.md "Watch it work"). One chain, one process (--workers 1)' }),
  'block-ms': int({ min: 10 }, { default: SERVE_DEFAULTS.blockMs, describe: 'With --start-height: one block more on /status this often, ms' }),
});

/**
 * How `import` and `follow` name and read a source (src/sources/options.ts, the
 * SourceOptions both pass on); `follow` builds a missing snapshot with an import of the same.
 */
export const SOURCE_OPTIONS: Record<string, Options> = named({
  'from-postgres': { type: 'string', describe: 'rollytics PostgreSQL DSN (postgres://user:pass@host:5432/db); an import (or a follow batch) reads in one read-only REPEATABLE READ transaction' },
  'from-api': httpUrl({ describe: 'Base URL of a running rollytics-compatible API (rollytics or indexer-api)' }),
  'chain-id': { type: 'string', defaultDescription: 'the only chain_id in table block', describe: '--from-postgres: chain id (default: the only chain_id in table block)' },
  'vm-type': choice({ defaultDescription: 'detected by --from-api', choices: VM_TYPES, describe: 'The rollup VM: required with --from-postgres, detected by --from-api (follow: for its first import; afterwards read from --db)' }),
  'bech32-prefix': { type: 'string', defaultDescription: 'init', describe: 'Account bech32 prefix of --from-postgres / --from-api (default init; follow: for its first import, afterwards read from --db)' },
  'validators': { type: 'string', describe: 'NDJSON file in validators.ndjson format: proposer monikers' },
  'rest-url': httpUrl({ describe: '--from-postgres without --validators: chain node REST URL; one GET /opinit/opchild/v1/validator/{proposer} per distinct proposer (404: fallback rendering)' }),
  'denom-contracts': { type: 'string', describe: 'EVM: NDJSON file in denom_contracts.ndjson format' },
  'status-version': { type: 'string', default: SOURCE_DEFAULTS.statusVersion, describe: '--from-postgres: version /status reports' },
  'status-commit': { type: 'string', default: SOURCE_DEFAULTS.statusCommit, describe: '--from-postgres: commit_hash /status reports' },
  'denoms': { type: 'string', array: true, defaultDescription: 'none: no rich list is read', describe: '--from-api: rich-list denoms to read (repeat or comma-separate)' },
  'concurrency': int({ min: 1 }, { default: HTTP_CLIENT_DEFAULTS.concurrency, describe: '--from-api / --rest-url: requests in flight' }),
  'rate': decimal({ above: 0 }, { defaultDescription: 'no limit', describe: '--from-api / --rest-url: at most this many requests per second' }),
  'timeout': int({ min: 1 }, { default: HTTP_CLIENT_DEFAULTS.timeoutMs, describe: '--from-api / --rest-url: per-request timeout in ms' }),
});

export const IMPORT_OPTIONS: Record<string, Options> = named({
  'from-dump': { type: 'string', describe: 'Dump directory of NDJSON files (plain or .gz)' },
  ...SOURCE_OPTIONS,
  'from-snapshot': { type: 'string', describe: 'With --accounts: a snapshot file to cut the fixture from' },
  'accounts': { type: 'string', array: true, describe: 'Cut a fixture: only what these accounts touched (their txs, the blocks holding them, their NFTs, their rich-list rows); repeat or comma-separate; deterministic output (docs/ci.md)' },
  'collections': { type: 'string', array: true, describe: 'With --accounts: NFT collections to keep whole (every token)' },
  'base': { type: 'string', describe: 'Previous snapshot to build on: the source then only holds new heights (and current NFT / rich-list state)' },
  'out': { type: 'string', demandOption: true, describe: 'Snapshot file to write (written to a temporary file, renamed on success)' },
  'force': { type: 'boolean', default: false, describe: 'Replace --out if it exists' },
  'quiet': { type: 'boolean', default: false, describe: 'No progress output' },
  'json': { type: 'boolean', default: false, describe: 'Print the final summary as JSON on stdout' },
  'check': choice({ defaultDescription: 'integrity; with --base, none',
    choices: ['integrity', 'quick', 'none'] as const,
    describe: 'Check of the finished file before it replaces --out: PRAGMA integrity_check, quick_check, or none (default: integrity; with --base none — the base was checked when built, and a check reads the whole file)',
  }),
  'parse-threads': int({ min: 0 }, { defaultDescription: 'one per CPU', describe: 'Threads parsing and validating txs while the main one inserts (0: parse on the main one; default: one per CPU)' }),
  'from-height': int({ min: 1 }, { defaultDescription: '1; with --base, its highest block + 1', describe: '--from-api: first height to crawl (default 1; with --base, the base\'s highest block + 1)' }),
  'to-height': int({ min: 1 }, { defaultDescription: "the source's /status height", describe: '--from-api: last height to crawl (default: /status height)' }),
  ...LOG_FORMAT_OPTION,
  'progress-interval': duration({ default: IMPORT_DEFAULTS.progressInterval, describe: 'Off a terminal (systemd, CI, a pipe): a progress line on stderr this often while the import runs (stage, rows, rows/s); on a terminal the progress is drawn in place' }),
  'retries': int({ min: 0 }, { default: HTTP_CLIENT_DEFAULTS.retries, describe: '--from-api / --rest-url: retries of a request failing with 5xx, 429 or a network error / timeout' }),
});

export const FOLLOW_OPTIONS: Record<string, Options> = named({
  'db': { type: 'string', demandOption: true, describe: 'Snapshot file to keep current (created by an import from the source if missing); serve it with `serve --db` at the same time' },
  'expect-chain-id': { type: 'string', requiresArg: true, defaultDescription: 'the chain of --db', describe: 'Follow only this chain: a --db of another chain is refused before anything is written, and a source of another chain before anything is imported or appended (without it: the chain of --db; a source of another chain is always refused)' },
  ...SOURCE_OPTIONS,
  'interval': duration({ default: FOLLOW_DEFAULTS.interval, describe: 'Poll interval when caught up (2s, 500ms, 1m; at least 50ms: 0 would poll without pause)' }),
  'richlist-interval': duration({ zero: 'never', default: FOLLOW_DEFAULTS.richlistInterval, describe: 'How often the rich list is read whole and its changed rows written, apart from the block batches (60s, 5m; 0: never). From an API: the --denoms rich lists' }),
  'richlist-swap-rows': int({ min: 0 }, { default: FOLLOW_DEFAULTS.richlistSwapRows, describe: 'A rich-list refresh changing more rows than this builds the new list beside the old one and swaps it in (one short transaction); fewer are written in place in one transaction' }),
  'richlist-chunk-rows': int({ min: 1 }, { default: FOLLOW_DEFAULTS.richlistChunkRows, describe: 'Rows per chunk of a rich-list refresh\'s diff and of a build beside (block batches run between the chunks)' }),
  'collections-audit-interval': duration({ zero: 'never', default: FOLLOW_DEFAULTS.collectionsAuditInterval, describe: 'How often the source\'s whole NFT collection list (counts, names) is compared with ours, apart from the block batches, which read only the collections their txs name; a collection that differs is read again by the next batch (5m, 30s; 0: never)' }),
  'batch-blocks': int({ min: 1 }, { default: FOLLOW_DEFAULTS.batchBlocks, describe: 'At most this many heights per batch (one write transaction; catching up takes several)' }),
  'metrics-port': int({ min: 0, max: 65535 }, { defaultDescription: 'off', describe: 'Serve Prometheus metrics (source height, our height, lag in blocks and seconds) on this port (0: any free port)' }),
  'metrics-host': { type: 'string', default: FOLLOW_DEFAULTS.metricsHost, describe: 'Address of --metrics-port' },
  'max-stall': duration({ default: FOLLOW_DEFAULTS.maxStall, describe: '--metrics-port also answers /ready: 503 (with the last failure) once the follower has not advanced for longer than this — its source failing, every poll — and 200 otherwise; indexer_api_follow_stalled_seconds is the figure' }),
  'max-backoff': duration({ default: FOLLOW_DEFAULTS.maxBackoff, describe: 'Longest wait between retries while the source fails (the wait doubles from --interval)' }),
  'quiet': { type: 'boolean', default: false, describe: 'No line per batch (failures, start and stop are still logged)' },
  ...LOG_FORMAT_OPTION,
});
