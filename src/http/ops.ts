import { Request, Response, Router } from 'express';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { Snapshot } from '../snapshot/open';
import { MethodNotAllowedError } from './errors';
import { RequestMetrics } from './request-metrics';

/**
 * Operations endpoints, mounted before the OpenAPI validator: `/health` (the process is up),
 * `/ready` (a snapshot is loaded and the server is not draining: src/serve/readiness.ts decides),
 * `/metrics` (Prometheus text).
 * Like every route, they answer GET and HEAD; any other method gets a 405.
 */

/** The metrics label of a request: the Express route pattern it matched, never the raw URL (bounded label values). */
export function routeLabel(req: Request): string {
  if (req.route) return req.baseUrl + (req.route as { path: string }).path;
  // Rejected by the validator (400) before an Express route ran: the route the spec matched.
  const matched = (req as { openapi?: { expressRoute?: string } }).openapi?.expressRoute;
  return matched ?? 'unmatched';
}

/**
 * What the metrics read of the response cache (src/cache/store.ts ResponseCache): its counters
 * and sizes, read when /metrics is scraped. Stated here so that http does not import the cache
 * (it sits above: .dependency-cruiser.js).
 */
export interface CacheCounters {
  readonly hits: number;
  readonly validatorHits: number;
  readonly versionHits: number;
  readonly misses: number;
  readonly notAdmitted: number;
  readonly invalidated: number;
  readonly flushes: number;
  readonly size: number;
  readonly bytes: number;
  readonly validators: number;
  readonly validatorBytes: number;
}

export interface Metrics {
  readonly registry: Registry;
  /** one finished (or aborted) request, by route pattern (src/http/observe.ts); `chain` counts only for a replica of several */
  observeRoute(method: string, route: string, status: number, seconds: number, chain?: string): void;
  /** the series observeRoute counts (method, route, status, chain) in, for a caller that keeps it (the cache front) */
  series(method: string, route: string, status: number, chain?: string): RouteSeries;
  swapped(): void;
  swapFailed(): void;
  /** a file's check passed by reading its pages, by taking a recorded check of the same unchanged file, or failed */
  checked(how: 'read' | 'recorded' | 'failed'): void;
  /** a request met SQLITE_CORRUPT / IOERR / NOTADB (answered 503) */
  storageError(code: string): void;
  /** a request answered 503 by admission (src/http/admission.ts) instead of being run */
  shed(reason: string): void;
  /** where the queue gauge reads the requests waiting now */
  watchQueue(queued: () => number): void;
}

/** One request series: its counter and its latency histogram (seconds). */
export interface RouteSeries {
  observe(seconds: number): void;
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** What the metrics read of each chain of a replica serving several (src/serve/chains.ts). */
export interface MetricsChain {
  id: string;
  current(): Snapshot | undefined;
}

/**
 * A registry per server (no global state): HTTP, snapshot, response cache and Node process metrics.
 * With `chains` (a replica serving several), the request metrics carry a `chain` label (the
 * chain id; '' for what is answered at the root: the chain list, the root /ready) and the
 * snapshot gauges one series per chain (`chain_id`).
 */
export function createMetrics(current: () => Snapshot | undefined, cache?: CacheCounters, chains?: () => MetricsChain[]): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const labelled = chains !== undefined;
  const requests = new RequestMetrics(registry, labelled, LATENCY_BUCKETS);
  // aggregator: how --ops-port's cluster primary combines the workers' values (src/serve/cluster.ts); one snapshot, not a sum
  const snapshotGauge = (name: string, help: string, value: (s: Snapshot) => number, aggregator: 'max' | 'min' = 'max'): Gauge =>
    new Gauge({
      name,
      help,
      registers: [registry],
      aggregator,
      labelNames: labelled ? ['chain_id'] : [],
      collect() {
        if (chains) {
          this.reset();
          for (const c of chains()) {
            const s = c.current();
            if (s) this.set({ chain_id: c.id }, value(s));
          }
          return;
        }
        const s = current();
        if (s) this.set(value(s));
        else this.reset();
      },
    });
  const createdSeconds = (s: Snapshot): number => Date.parse(s.meta.createdAt) / 1000;
  snapshotGauge('indexer_api_snapshot_height', 'Height of the served snapshot (/status height)', (s) => s.meta.height);
  snapshotGauge('indexer_api_snapshot_created_timestamp_seconds', 'When the served snapshot was built (meta created_at), Unix seconds', createdSeconds);
  snapshotGauge('indexer_api_snapshot_age_seconds', 'Seconds since the served snapshot was built', (s) => Date.now() / 1000 - createdSeconds(s), 'min');
  new Gauge({
    name: 'indexer_api_snapshot_info',
    help: 'The served snapshot (value 1)',
    labelNames: ['snapshot_id', 'chain_id', 'vm_type'] as const,
    registers: [registry],
    aggregator: 'max',
    collect() {
      this.reset();
      const all = chains ? chains().map((c) => c.current()) : [current()];
      for (const s of all) if (s) this.set({ snapshot_id: s.meta.snapshotId, chain_id: s.meta.chainId, vm_type: s.meta.vmType }, 1);
    },
  });
  const swaps = new Counter({ name: 'indexer_api_snapshot_swaps_total', help: 'Hot swaps to a new snapshot', registers: [registry] });
  const checks = new Counter({
    name: 'indexer_api_snapshot_checks_total',
    labelNames: ['how'] as const,
    registers: [registry],
    help:
      'Checks of snapshot files (at start, on a swap, a file added): how="read" every page read, ' +
      'how="recorded" the same unchanged file passed before (docs/reliability.md), how="failed"',
  });
  const failed = new Counter({
    name: 'indexer_api_snapshot_swap_failures_total',
    help: 'Replacement snapshots refused (corrupt or incompatible); the old one kept serving',
    registers: [registry],
  });
  const storage = new Counter({
    name: 'indexer_api_storage_errors_total',
    help: 'Requests answered 503 because the snapshot file is damaged (SQLite error code)',
    labelNames: ['code'] as const,
    registers: [registry],
  });
  const shed = new Counter({
    name: 'indexer_api_http_shed_total',
    help: 'Requests answered 503 with Retry-After instead of being run (overload: queue full, client queue full, waited too long)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  let queued = (): number => 0;
  new Gauge({
    name: 'indexer_api_http_queued_requests',
    help: 'Requests waiting for their turn in this process',
    registers: [registry],
    collect() {
      this.set(queued());
    },
  });
  if (cache) {
    new Counter({
      name: 'indexer_api_response_cache_hits_total',
      help: 'Responses (200 or 304) answered from a body held in the in-process response cache',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(cache.hits);
      },
    });
    new Counter({
      name: 'indexer_api_response_cache_validator_hits_total',
      help: "Conditional GETs answered 304 without the page being rebuilt: from a validator alone (no body held, no row read) or from the file's tag versions",
      registers: [registry],
      collect() {
        this.reset();
        this.inc(cache.validatorHits);
      },
    });
    new Counter({
      name: 'indexer_api_response_cache_version_hits_total',
      help:
        "Of the validator hits, those decided from the snapshot file's tag versions (the key not yet held: " +
        'the first poll after a restart, a new file, in another worker)',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(cache.versionHits);
      },
    });
    new Counter({
      name: 'indexer_api_response_cache_misses_total',
      help: 'GET/HEAD API requests the in-process response cache could not answer (computed by the app)',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(cache.misses);
      },
    });
    new Counter({
      name: 'indexer_api_response_cache_not_admitted_total',
      help:
        'Answers whose body was not kept: their URL seen for the first time (admission on second sight), or ' +
        'asked for less than the bodies they would replace',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(cache.notAdmitted);
      },
    });
    new Counter({
      name: 'indexer_api_response_cache_invalidated_total',
      help:
        'Keys (validators and their bodies) dropped because a write to the served file named what they read ' +
        '(change records, docs/response-cache.md), counted when next looked at',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(cache.invalidated);
      },
    });
    new Counter({
      name: 'indexer_api_response_cache_flushes_total',
      help: 'Times the response cache was emptied: another file swapped in, or a write whose change records could not be read',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(cache.flushes);
      },
    });
    new Gauge({
      name: 'indexer_api_response_cache_entries',
      help: 'Bodies held in the in-process response cache',
      registers: [registry],
      collect() {
        this.set(cache.size);
      },
    });
    new Gauge({
      name: 'indexer_api_response_cache_bytes',
      help: 'Bytes counted against the body cap --cache-bytes (bodies, per-body overhead)',
      registers: [registry],
      collect() {
        this.set(cache.bytes);
      },
    });
    new Gauge({
      name: 'indexer_api_response_cache_validators',
      help: 'Keys the response cache knows: validators (ETag + what the answer read), with or without a body',
      registers: [registry],
      collect() {
        this.set(cache.validators);
      },
    });
    new Gauge({
      name: 'indexer_api_response_cache_validator_bytes',
      help: 'Bytes of the key table (counted against --cache-validator-bytes) and of the tag versions',
      registers: [registry],
      collect() {
        this.set(cache.validatorBytes);
      },
    });
  }
  const observeRoute = (method: string, route: string, status: number, seconds: number, chain = ''): void => {
    requests.of(method, route, status, chain).observe(seconds);
  };
  // the series itself: a caller that keeps it (the cache front) pays one array-slot update a request
  const series = (method: string, route: string, status: number, chain = ''): RouteSeries => requests.of(method, route, status, chain);
  return {
    registry,
    observeRoute,
    series,
    swapped: () => swaps.inc(),
    checked: (how) => checks.inc({ how }),
    swapFailed: () => failed.inc(),
    storageError: (code) => storage.inc({ code }),
    shed: (reason) => shed.inc({ reason }),
    watchQueue: (q) => {
      queued = q;
    },
  };
}

/**
 * `/health`, `/ready` and `/metrics` of one chain; `ready` is its readiness (src/serve/readiness.ts
 * chainReadiness), asked on each request.
 */
export function opsRouter(o: { ready: () => { ready: boolean; body: string }; metrics: Metrics }): Router {
  const noStore = (res: Response): Response => res.set('Cache-Control', 'no-store');
  return Router()
    .get('/health', (_req, res) => {
      noStore(res).type('application/json').send('{"status":"ok"}');
    })
    .get('/ready', (_req, res) => {
      const r = o.ready();
      noStore(res)
        .type('application/json')
        .status(r.ready ? 200 : 503)
        .send(r.body);
    })
    .get('/metrics', (_req, res, next) => {
      o.metrics.registry.metrics().then((text) => {
        noStore(res).type(o.metrics.registry.contentType).send(text);
      }, next);
    })
    .all(['/health', '/ready', '/metrics'], methodNotAllowed);
}

/** Any other method on a route that answers GET and HEAD: 405 with the JSON error (errors.ts). */
export const methodNotAllowed = (req: Request, _res: Response, next: (err: unknown) => void): void => {
  next(new MethodNotAllowedError(req.method, req.path));
};
