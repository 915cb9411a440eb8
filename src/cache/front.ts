import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Snapshot } from '../snapshot/open';
import { acceptsGzipCached, withVary } from '../http/encoding';
import type { CorsHeaders } from '../http/cors';
import { Limits, urlTooLong } from '../http/limits';
import type { ObserveRequest } from '../http/observe';
import type { Metrics, RouteSeries } from '../http/ops';
import { normalizeUrl } from '../http/url';
import { IMMUTABLE_CACHE_CONTROL, isFresh, namesEtag } from '../http/etag';
import { RouteMatch, versionedTags, versionEtag } from '../http/version-etag';
import type { CachePart, ResponseCache } from './store';

/** A chain as the front sees it: where its snapshot is, its part of the cache, its metric series. */
export interface FrontSource {
  snapshots: { current(): Snapshot | undefined };
  part: CachePart;
  /** the chain label of its metrics ('' for a replica of one chain) */
  chain?: string;
  /** the front's own: the metric series of its answers, by route and status (made on first use) */
  series?: Map<number, RouteSeries>;
}

export interface FrontOptions {
  cache: ResponseCache;
  /**
   * The request's chain: what it is answered from and its part of the response cache
   * (ResponseCache.part; the root part for a replica of one chain); undefined for requests the app
   * answers itself (outside every chain: the chain list, the root /ready).
   */
  sourceOf(req: IncomingMessage): FrontSource | undefined;
  /** the app's CORS headers (src/http/cors.ts) */
  cors: CorsHeaders;
  /** the app's request limits (src/http/limits.ts): a target over them goes to the app, which answers 414 */
  limits: Limits;
  /** while true, everything goes to the app (which closes connections after each response) */
  draining: () => boolean;
  /** the app's log line + metrics (src/http/observe.ts), used when request lines are logged */
  observe: ObserveRequest;
  /** whether a line is logged per request (info): then answers are observed as the app observes them */
  logsRequests: boolean;
  /** the metrics the app counts requests in (without request lines: counted here directly) */
  metrics: Metrics;
  /**
   * The API's routes as the app matches them (src/http/version-etag.ts routeMatcher) and the
   * Cache-Control of their 200s: a conditional GET whose key the table does not hold is decided
   * from the tag versions of the file (versionEtag) — a 304 without the app, also on the first
   * poll after a restart or a new file. Absent: such requests go to the app.
   */
  versioned?: { match(url: string): RouteMatch | undefined; cacheControl: string };
}

const KEEP_VALIDATOR = { body: false, validator: true };

/** No body: a validator kept from a 304 decided by the versions (ResponseCache.keep stores none). */
const NO_BODY = Buffer.alloc(0);

/**
 * The response cache, in front of admission and the Express app (docs/response-cache.md,
 * docs/reliability.md#overload): an answer from memory runs no query, so it waits for no turn.
 * Not a second pipeline: each concern it touches is the app's own module — the URL (url.ts
 * normalizeUrl), the URL limit (limits.ts), CORS (cors.ts corsHeaders), conditional GET
 * (src/http/etag.ts isFresh and the validators' matchValidator), log line and metrics (observe.ts,
 * ops.ts) — called here instead of through Express's middleware chain, which is most of what a
 * hit would cost.
 *
 * A GET or HEAD whose normalized URL and representation (gzip or identity) the cache holds valid
 * for the current snapshot is answered here:
 * - with a held body: the header block and bytes the Express pipeline sent for it (plus the
 *   request's CORS headers), or a 304 on a matching If-None-Match, no body to a HEAD;
 * - with a validator alone: a 304 when If-None-Match matches its ETag. A validator never makes a
 *   200: anything else goes on.
 * Everything else goes to `next` (admission, then the app) unchanged; the app's caching
 * middleware (src/cache/fill.ts httpCaching) keeps what it answers.
 */
export function cachedFront(next: RequestListener, o: FrontOptions): RequestListener {
  const { cache, sourceOf, limits, draining, observe, logsRequests, metrics } = o;
  // requests slower than this get a warn line (the app's observe writes it)
  const slowNs = observe.slowNs;
  // Vary + CORS, as the Express path leaves them: the same list for every request of one CORS answer
  let lastCors: string[] | undefined;
  let lastPrefix: string[] = [];
  const prefixOf = (origin: string | undefined): string[] => {
    const c = o.cors(origin);
    if (c !== lastCors) {
      lastCors = c;
      lastPrefix = withVary(c);
    }
    return lastPrefix;
  };
  /** counts an answer given from memory (the request line, when logged, is the app's observe's) */
  const count = (source: FrontSource, req: IncomingMessage, res: ServerResponse, route: number, status: number, started: bigint, bytes: number): void => {
    const ns = Number(process.hrtime.bigint() - started);
    // logged, or a slow one (a process stalled): the app's observe writes its line and counts it
    if (logsRequests || ns >= slowNs) {
      observe(
        req,
        res,
        () => cache.routeName(route),
        () => bytes,
        started,
      );
      return;
    }
    const series = (source.series ??= new Map());
    const k = route * 2 + (status === 304 ? 1 : 0);
    let s = series.get(k);
    if (s === undefined) series.set(k, (s = metrics.series('GET', cache.routeName(route), status, source.chain)));
    s.observe(ns / 1e9);
  };
  const versioned = o.versioned;
  /**
   * A conditional GET of an API route, decided from the tag versions of `snapshot`: a 304 when
   * the ETag the client holds is the one the answer would have (the same headers the app's 304
   * has), its validator then kept so that the next poll is answered from the table. False: not
   * decided here (no route, no tags, no match) — the app answers.
   */
  const fromVersions = (
    source: FrontSource,
    snapshot: Snapshot,
    req: IncomingMessage,
    res: ServerResponse,
    url: string,
    gzip: boolean,
    inm: string,
    started: bigint,
  ): boolean => {
    const m = (versioned as NonNullable<typeof versioned>).match(url);
    if (m === undefined) return false;
    const tags = versionedTags(m.route, m.params, snapshot);
    if (tags === undefined) return false;
    const etag = versionEtag(snapshot, url, tags, gzip);
    if (!namesEtag(inm, etag)) return false;
    const headers304 = [
      'Cache-Control',
      m.route.immutable === true ? IMMUTABLE_CACHE_CONTROL : (versioned as NonNullable<typeof versioned>).cacheControl,
      'ETag',
      etag,
    ];
    res.writeHead(304, prefixOf(req.headers.origin).concat(headers304));
    res.end();
    cache.validatorHits++;
    cache.versionHits++;
    source.part.keep(snapshot, url, gzip, { body: NO_BODY, etag, route: m.route.path, headers: headers304, headers304 }, tags.tags, KEEP_VALIDATOR, true);
    count(source, req, res, cache.routeId(m.route.path), 304, started, 0);
    return true;
  };
  return (req: IncomingMessage, res: ServerResponse) => {
    const method = req.method;
    const raw = req.url as string;
    if ((method !== 'GET' && method !== 'HEAD') || urlTooLong(raw, limits) || draining()) {
      next(req, res);
      return;
    }
    const source = sourceOf(req);
    const snapshot = source?.snapshots.current();
    if (source === undefined || snapshot === undefined) {
      next(req, res);
      return;
    }
    const started = process.hrtime.bigint();
    const part = source.part;
    part.sync(snapshot);
    const h = req.headers;
    const url = normalizeUrl(raw);
    const gzip = acceptsGzipCached(h['accept-encoding']);
    const i = part.lookup(url, gzip);
    const inm = h['if-none-match'];
    if (i < 0) {
      // not held: a conditional GET may still be decided by the file's versions (a restart, a new file, another worker)
      if (
        inm === undefined ||
        h['if-modified-since'] !== undefined ||
        versioned === undefined ||
        !fromVersions(source, snapshot, req, res, url, gzip, inm, started)
      )
        next(req, res);
      return;
    }
    const body = cache.bodyOf(i);
    if (body !== undefined) {
      cache.hits++;
      const prefix = prefixOf(h.origin);
      if (inm !== undefined && isFresh(inm, undefined, h['if-modified-since'], body.etag)) {
        res.writeHead(304, prefix.concat(body.headers304));
        res.end();
        count(source, req, res, cache.routeIdOf(i), 304, started, 0);
      } else {
        res.writeHead(200, prefix.concat(body.headers));
        if (method === 'HEAD') res.end();
        else res.end(body.body);
        count(source, req, res, cache.routeIdOf(i), 200, started, body.body.length);
      }
      return;
    }
    // a validator alone answers only a matching conditional GET (If-Modified-Since: never fresh, isFresh)
    if (inm === undefined || h['if-modified-since'] !== undefined) {
      next(req, res);
      return;
    }
    const etag = cache.matchValidator(i, inm);
    if (etag === undefined) {
      next(req, res);
      return;
    }
    cache.validatorHits++;
    const prefix = prefixOf(h.origin);
    const tpl = cache.template(i);
    const headers = prefix.slice();
    for (let k = 0; k < tpl.length; k++) headers.push(tpl[k] ?? etag);
    res.writeHead(304, headers);
    res.end();
    count(source, req, res, cache.routeIdOf(i), 304, started, 0);
  };
}
