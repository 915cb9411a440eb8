import { Request, Response, Router } from 'express';
import { IMMUTABLE_CACHE_CONTROL, namesEtag } from '../http/etag';
import { requestAcceptsGzip } from '../http/encoding';
import { versionEtag, versionedTags } from '../http/version-etag';
import type { ApiRoute } from '../http/route';
import type { Snapshot } from '../snapshot/open';
import { blockRoutes } from './block/routes';
import { evmRoutes } from './evm/routes';
import { nftRoutes } from './nft/routes';
import { richListRoutes } from './richlist/routes';
import { statusRoutes } from './status/routes';
import { txRoutes } from './tx/routes';

/**
 * The route table: every route of the API, one declaration each (src/http/route.ts ApiRoute —
 * path, query parameters, the tags its answer reads, whether it is immutable, its handler), as
 * each resource's module exports them. Everything that needs a route's facts is derived from
 * this list: the Express router (apiRouter), the response cache's tags and the immutable
 * Cache-Control (each through the declaration the router puts on `res.locals.route`), the
 * API-path check of src/serve/app.ts (apiPathCheck). openapi.yaml states the same paths and
 * query parameters for clients and the validator; test/routes/table.test.ts holds the two equal
 * in both directions and fails on a route that declares no tags.
 *
 * Taken from two models: datasette's `Datasette._routes()` — one ordered list of (pattern,
 * view) pairs that the app's router is built from, so the list is the one place a route is
 * added and its order is the match order — and the Hiro Stacks API's per-route cache policy —
 * each route states beside its path and schema how its answer is cached (`preHandler:
 * handleChainTipCache`, an ETag type per route) instead of a central table keyed by path
 * strings; here that policy is the tags the answer reads and `immutable`.
 */
export function apiRoutes(options: { grownStatus?: (s: Snapshot) => string | undefined } = {}): readonly ApiRoute[] {
  // the match order: a resource's fixed segments (by_account, by_height…) before its `:param`
  return [...statusRoutes(options.grownStatus), ...blockRoutes, ...txRoutes, ...evmRoutes, ...nftRoutes, ...richListRoutes];
}

/**
 * The Express router of `routes`, in their order: each GET runs its handler with its declaration
 * on `res.locals.route` (read by the response cache and sendJson). One router for the whole API:
 * leaving an Express 4 router that matched nothing costs a turn of the event loop.
 */
export function apiRouter(routes: readonly ApiRoute[]): Router {
  const router = Router();
  for (const route of routes) {
    const { handler } = route;
    router.get(route.path, (req, res) => {
      res.locals.route = route;
      if (notModified(route, req, res)) return;
      handler(req, res);
    });
  }
  return router;
}

/**
 * A conditional GET whose ETag is the one the answer would have, decided from the tag versions of
 * the request's snapshot before the handler runs (src/http/version-etag.ts): a 304 with the
 * headers sendJson's 304 has, no query run. The response cache's front decides most of these
 * before Express (src/cache/front.ts); this is the same decision for what reaches the app (no
 * response cache, `--cache-validator-bytes 0`), after the validator.
 */
function notModified(route: ApiRoute, req: Request, res: Response): boolean {
  const inm = req.headers['if-none-match'];
  const s = res.locals.snapshot;
  if (inm === undefined || req.headers['if-modified-since'] !== undefined || s === undefined || res.app.locals.validateResponses === true) return false;
  const tags = versionedTags(route, { path: req.params, query: req.query }, s);
  if (tags === undefined) return false;
  const etag = versionEtag(s, req.url, tags, requestAcceptsGzip(req));
  if (!namesEtag(inm, etag)) return false;
  if (route.immutable === true) res.setHeader('Cache-Control', IMMUTABLE_CACHE_CONTROL);
  res.setHeader('ETag', etag);
  res.statusCode = 304;
  res.end();
  return true;
}

/**
 * Whether a root-relative URL is one of `routes`' (by their first path segment: `/indexer/…`
 * for the routes under /indexer, `/status` exactly): the app sends it straight to the validator
 * and the routes, past the ops, Swagger UI and explorer routers (src/serve/app.ts perChain).
 */
export function apiPathCheck(routes: readonly ApiRoute[]): (url: string) => boolean {
  const prefixes = new Set<string>();
  const exact = new Set<string>();
  for (const { path } of routes) {
    const end = path.indexOf('/', 1);
    if (end < 0) exact.add(path);
    else prefixes.add(path.slice(0, end + 1));
  }
  const under = [...prefixes];
  const only = [...exact];
  return (url) => {
    for (const p of under) if (url.startsWith(p)) return true;
    for (const e of only) if (url.length >= e.length && url.startsWith(e) && (url.length === e.length || url.charCodeAt(e.length) === 63) /* ? */) return true;
    return false;
  };
}
