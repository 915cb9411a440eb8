import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Snapshot } from '../snapshot/open';
import { isFresh, ResponseCache } from './caching';
import { corsHeaders } from './cors';
import type { Logger } from './log';
import type { Metrics } from './ops';

/**
 * rollytics' router is case-insensitive and non-strict; clients also send `//indexer/...`
 * (Celatone joins base URL and path without trimming): leading slashes are collapsed and one
 * trailing slash dropped before anything routes. The common case (nothing to do) allocates
 * nothing.
 */
export function normalizeUrl(url: string): string {
  // absolute form (`GET http://host/status HTTP/1.1`, RFC 9112 §3.2.2): the path and query
  if (url.charCodeAt(0) !== 47) {
    const m = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(url);
    if (m) url = url.slice(m[0].length) || '/';
    if (url.charCodeAt(0) === 63) url = `/${url}`;
  }
  const q = url.indexOf('?');
  const end = q < 0 ? url.length : q;
  const leading = url.charCodeAt(0) === 47 && url.charCodeAt(1) === 47;
  const trailing = end > 1 && url.charCodeAt(end - 1) === 47;
  if (!leading && !trailing) return url;
  let path = q < 0 ? url : url.slice(0, q);
  const rest = q < 0 ? '' : url.slice(q);
  path = path.replace(/^\/{2,}/, '/');
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  return path + rest;
}

export interface FrontOptions {
  cache: ResponseCache;
  snapshots: { current(): Snapshot | undefined };
  corsOrigin: string;
  /** request targets longer than this go to the app (which answers 414) */
  maxUrlLength: number;
  /** while true, everything goes to the app (which closes connections after each response) */
  draining: () => boolean;
  logger: Logger;
  metrics: Metrics;
}

/**
 * The response cache, in front of the Express app: a GET or HEAD whose normalized URL has a
 * cached 200 for the current snapshot is answered here — the header block and body bytes the
 * Express pipeline sent for it (plus the request's CORS headers), a 304 when If-None-Match
 * matches (the same decision as Express's `req.fresh`), no body to a HEAD — with the same
 * metrics and the same log line. Everything else goes to `app` unchanged, and the app's
 * caching middleware (src/http/caching.ts) stores the 200s it computes.
 *
 * Duration of a hit (log `ms`, latency histogram) is measured until the response is handed
 * to Node (`res.end`), not until its 'close' as on the app path: a cached body is written
 * out synchronously unless the socket is backed up.
 */
export function cachedFront(app: RequestListener, o: FrontOptions): RequestListener {
  const { cache, snapshots, maxUrlLength, draining, logger, metrics } = o;
  const cors = corsHeaders(o.corsOrigin);
  const logRequests = logger.enabled('info');
  return (req: IncomingMessage, res: ServerResponse) => {
    const started = process.hrtime.bigint();
    const method = req.method;
    const raw = req.url as string;
    const snapshot = (method === 'GET' || method === 'HEAD') && raw.length <= maxUrlLength ? snapshots.current() : undefined;
    if (snapshot === undefined || draining()) { app(req, res); return; }
    cache.adopt(snapshot.meta.snapshotId);
    const hit = cache.get(normalizeUrl(raw));
    if (hit === undefined) { app(req, res); return; }
    const h = req.headers;
    const c = cors(h.origin);
    let status = 200;
    let bytes = 0;
    if (isFresh(h['if-none-match'], h['cache-control'], h['if-modified-since'], hit.etag)) {
      status = 304;
      res.writeHead(304, c.length ? c.concat(hit.headers304) : hit.headers304);
      res.end();
    } else {
      res.writeHead(200, c.length ? c.concat(hit.headers) : hit.headers);
      if (method === 'HEAD') res.end();
      else { res.end(hit.body); bytes = hit.body.length; }
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    // HEAD is served as GET on the app path too (and counted so)
    metrics.observeRoute('GET', hit.route, status, seconds);
    if (logRequests) logger.info('request', { method, path: raw, status, ms: Math.round(seconds * 1e6) / 1e3, bytes });
  };
}
