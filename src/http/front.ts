import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Snapshot } from '../snapshot/open';
import { CachePart, cacheKey, requestIsFresh } from './caching';
import { requestAcceptsGzip, withVary } from './encoding';
import type { CorsHeaders } from './cors';
import { urlTooLong } from './limits';
import type { ObserveRequest } from './observe';
import { normalizeUrl } from './url';

export interface FrontOptions {
  /**
   * The request's chain: what it is answered from and its part of the response cache
   * (ResponseCache.part; the root part for a replica of one chain); undefined for requests the app
   * answers itself (outside every chain: the chain list, the root /ready).
   */
  sourceOf(req: IncomingMessage): { snapshots: { current(): Snapshot | undefined }; part: CachePart } | undefined;
  /** the app's CORS headers (src/http/cors.ts) */
  cors: CorsHeaders;
  /** the app's request limit (src/http/limits.ts): targets over it go to the app, which answers 414 */
  maxUrlLength: number;
  /** while true, everything goes to the app (which closes connections after each response) */
  draining: () => boolean;
  /** the app's log line + metrics (src/http/observe.ts) */
  observe: ObserveRequest;
}

/**
 * The response cache, in front of the Express app. Not a second pipeline: each concern it
 * touches is the app's own module — the URL (url.ts normalizeUrl), the URL limit (limits.ts),
 * CORS (cors.ts corsHeaders), conditional GET (caching.ts requestIsFresh), log line and metrics
 * (observe.ts) — called here instead of through Express's middleware chain, which is most of
 * what a hit would cost. A GET or HEAD whose normalized URL has a cached 200 for the current
 * snapshot and the representation the request accepts (gzip or identity, caching.ts cacheKey)
 * is answered with the header block and body bytes the Express pipeline sent for it
 * (plus the request's CORS headers), a 304 when fresh, no body to a HEAD. Everything else goes
 * to `app` unchanged; its caching middleware (caching.ts httpCaching) stores the 200s.
 */
export function cachedFront(app: RequestListener, o: FrontOptions): RequestListener {
  const { sourceOf, maxUrlLength, draining, observe, cors } = o;
  return (req: IncomingMessage, res: ServerResponse) => {
    const method = req.method;
    const raw = req.url as string;
    const source = (method === 'GET' || method === 'HEAD') && !urlTooLong(raw, maxUrlLength) ? sourceOf(req) : undefined;
    const snapshot = source?.snapshots.current();
    if (source === undefined || snapshot === undefined || draining()) { app(req, res); return; }
    const cache = source.part;
    cache.sync(snapshot);
    const hit = cache.get(cacheKey(normalizeUrl(raw), requestAcceptsGzip(req)));
    if (hit === undefined) { app(req, res); return; }
    observe(req, res, () => hit.route, () => hit.body.length);
    const c = withVary(cors(req.headers.origin));
    if (requestIsFresh(req, hit.etag)) {
      res.writeHead(304, c.concat(hit.headers304));
      res.end();
    } else {
      res.writeHead(200, c.concat(hit.headers));
      if (method === 'HEAD') res.end();
      else res.end(hit.body);
    }
  };
}
