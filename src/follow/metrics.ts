/**
 * `follow --metrics-port`: the follower's state as Prometheus metrics (docs/follow.md#lag),
 * through prom-client like serve's /metrics (src/http/ops.ts), with the same Node process
 * metrics; a bare HTTP listener answers GET /metrics and 404 to anything else.
 */
import { createServer, Server } from 'node:http';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { FollowState } from './follower';
import type { RichListState } from './richlist-refresh';
import type { CollectionsAuditState } from './collections-audit';

/** A registry of its own (no global state) whose values are read from `state` at each scrape. */
export function createFollowMetrics(state: FollowState, now: () => number = Date.now, richList?: RichListState, audit?: CollectionsAuditState): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const gauge = (name: string, help: string, value: () => number): void => {
    new Gauge({ name, help, registers: [registry], collect() { this.set(value()); } });
  };
  const counter = (name: string, help: string, value: () => number): void => {
    new Counter({ name, help, registers: [registry], collect() { this.reset(); this.inc(value()); } });
  };
  gauge('indexer_api_follow_source_height', 'The source\'s newest height at the last poll', () => state.sourceHeight);
  gauge('indexer_api_follow_height', 'Newest height committed to the snapshot', () => state.height);
  gauge('indexer_api_follow_lag_blocks', 'Source height minus our height', () => Math.max(0, state.sourceHeight - state.height));
  gauge('indexer_api_follow_lag_seconds', 'Seconds since the source first had a height we do not have yet (0 when caught up)',
    () => (state.behindSinceMs === undefined ? 0 : (now() - state.behindSinceMs) / 1000));
  gauge('indexer_api_follow_newest_block_age_seconds', 'Seconds since the timestamp of our newest block',
    () => (state.newestBlockMs ? (now() - state.newestBlockMs) / 1000 : 0));
  counter('indexer_api_follow_batches_total', 'Batches committed', () => state.batches);
  counter('indexer_api_follow_failures_total', 'Failed polls or batches (source errors)', () => state.failures);
  if (richList) {
    const r = richList;
    gauge('indexer_api_follow_richlist_height', 'The height our rich list reflects (meta rich_list_height, /status rich_list_height)', () => r.height);
    gauge('indexer_api_follow_richlist_lag_blocks', 'Our newest height minus the height our rich list reflects', () => Math.max(0, state.height - r.height));
    gauge('indexer_api_follow_richlist_last_refresh_timestamp_seconds', 'When the last successful rich-list refresh started reading, Unix seconds (0: none yet)', () => r.lastRefreshMs / 1000);
    counter('indexer_api_follow_richlist_refreshes_total', 'Rich-list refreshes completed', () => r.refreshes);
    counter('indexer_api_follow_richlist_failures_total', 'Rich-list refreshes that failed (source errors, a source that kept moving)', () => r.failures);
  }
  if (audit) {
    const a = audit;
    counter('indexer_api_follow_collections_audits_total', 'Collections audits completed (the source\'s whole collection list compared with ours)', () => a.audits);
    counter('indexer_api_follow_collections_audit_mismatches_total', 'Collections an audit found different from the source (each read again by the next batch)', () => a.mismatches);
    counter('indexer_api_follow_collections_audit_failures_total', 'Collections audits that failed (source errors)', () => a.failures);
  }
  return registry;
}

/** Listens on host:port (0: any free port) and answers GET /metrics with `registry`. */
export function listenMetrics(registry: Registry, port: number, host: string): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.url !== '/metrics') {
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
