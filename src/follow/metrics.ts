/**
 * `follow --metrics-port`: the follower's state as Prometheus metrics (docs/follow.md#lag),
 * through prom-client like serve's /metrics (src/http/ops.ts), with the same Node process
 * metrics; and /ready — 503 once the follower has not advanced for longer than --max-stall, so a
 * probe or an alert sees a follower whose source fails — and /health. A bare HTTP listener:
 * anything else is a 404.
 */
import { createServer, Server } from 'node:http';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { errorJson, GRPC } from '../lib/api-errors';
import { stalledMs, type FollowState } from './follower';
import type { RichListState } from './richlist-refresh';
import type { CollectionsAuditState } from './collections-audit';

/** A registry of its own (no global state) whose values are read from `state` at each scrape. */
export function createFollowMetrics(state: FollowState, now: () => number = Date.now, richList?: RichListState, audit?: CollectionsAuditState): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const gauge = (name: string, help: string, value: () => number): void => {
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(value());
      },
    });
  };
  const counter = (name: string, help: string, value: () => number): void => {
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(value());
      },
    });
  };
  gauge('indexer_api_follow_source_height', "The source's newest height at the last poll", () => state.sourceHeight);
  gauge('indexer_api_follow_height', 'Newest height committed to the snapshot', () => state.height);
  gauge('indexer_api_follow_lag_blocks', 'Source height minus our height', () => Math.max(0, state.sourceHeight - state.height));
  gauge('indexer_api_follow_lag_seconds', 'Seconds since the source first had a height we do not have yet (0 when caught up)', () =>
    state.behindSinceMs === undefined ? 0 : (now() - state.behindSinceMs) / 1000,
  );
  gauge('indexer_api_follow_newest_block_age_seconds', 'Seconds since the timestamp of our newest block', () =>
    state.newestBlockMs ? (now() - state.newestBlockMs) / 1000 : 0,
  );
  counter('indexer_api_follow_batches_total', 'Batches committed', () => state.batches);
  counter('indexer_api_follow_failures_total', 'Failed polls or batches (source errors)', () => state.failures);
  gauge('indexer_api_follow_consecutive_failures', 'Failed polls or batches since the last one that succeeded (0: the last succeeded)', () => state.failing);
  gauge(
    'indexer_api_follow_stalled_seconds',
    'Seconds the follower has not advanced: since its last successful poll (a batch applied, or nothing ' +
      'new at the source) while its polls fail; 0 while they succeed',
    () => stalledMs(state, now()) / 1000,
  );
  if (richList) {
    const r = richList;
    gauge('indexer_api_follow_richlist_height', 'The height our rich list reflects (meta rich_list_height, /status rich_list_height)', () => r.height);
    gauge('indexer_api_follow_richlist_lag_blocks', 'Our newest height minus the height our rich list reflects', () => Math.max(0, state.height - r.height));
    gauge(
      'indexer_api_follow_richlist_last_refresh_timestamp_seconds',
      'When the last successful rich-list refresh started reading, Unix seconds (0: none yet)',
      () => r.lastRefreshMs / 1000,
    );
    counter('indexer_api_follow_richlist_refreshes_total', 'Rich-list refreshes completed', () => r.refreshes);
    counter('indexer_api_follow_richlist_failures_total', 'Rich-list refreshes that failed (source errors, a source that kept moving)', () => r.failures);
  }
  if (audit) {
    const a = audit;
    counter(
      'indexer_api_follow_collections_audits_total',
      "Collections audits completed (the source's whole collection list compared with ours)",
      () => a.audits,
    );
    counter(
      'indexer_api_follow_collections_audit_mismatches_total',
      'Collections an audit found different from the source (each read again by the next batch)',
      () => a.mismatches,
    );
    counter('indexer_api_follow_collections_audit_failures_total', 'Collections audits that failed (source errors)', () => a.failures);
  }
  return registry;
}

/**
 * /ready of the follower: 200 while it advances (or has not for at most `maxStallMs`), 503 with
 * how long it has not and its last failure once longer. The body names its heights either way.
 */
export function followReadiness(state: FollowState, maxStallMs: number, now: () => number = Date.now): () => { ready: boolean; body: string } {
  return () => {
    const stalled = stalledMs(state, now());
    const figures = {
      height: state.height,
      source_height: state.sourceHeight,
      stalled_seconds: Math.round(stalled / 1000),
      consecutive_failures: state.failing,
      ...(state.lastError === undefined ? {} : { last_failure: state.lastError }),
    };
    if (stalled > maxStallMs) {
      const why =
        `follow has not advanced for ${Math.round(stalled / 1000)} s (over --max-stall ${maxStallMs / 1000} s): ` +
        `${state.failing} failure${state.failing === 1 ? '' : 's'} in a row, the last: ${state.lastError ?? 'unknown'}`;
      return { ready: false, body: JSON.stringify({ ...(JSON.parse(errorJson(GRPC.UNAVAILABLE, why)) as object), ...figures }) };
    }
    return { ready: true, body: JSON.stringify({ status: 'following', ...figures }) };
  };
}

/**
 * Listens on host:port (0: any free port) and answers GET /metrics with `registry`, /ready with
 * `ready` (followReadiness), /health with 200.
 */
export function listenMetrics(registry: Registry, port: number, host: string, ready?: () => { ready: boolean; body: string }): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path === '/health' || (path === '/ready' && ready)) {
      const r = path === '/health' ? { ready: true, body: '{"status":"ok"}' } : (ready as () => { ready: boolean; body: string })();
      res.writeHead(r.ready ? 200 : 503, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : r.body);
      return;
    }
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : text),
      (e: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${e.message}\n`),
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', (e) => reject(new Error(`--metrics-port ${port}: ${e.message}`)));
    server.listen(port, host, () => resolve(server));
  });
}
