import type { Request, Response } from 'express';
import type { Snapshot } from '../snapshot/open';

/**
 * What one route of the API declares, once (src/routes/<resource>/routes.ts; src/routes/table.ts
 * assembles them): everything else about the route is derived from it — the Express router
 * (src/routes/table.ts apiRouter), the tags a cached answer carries (answerTags, read by the
 * response cache's src/cache/fill.ts), the long Cache-Control of an immutable answer (sendJson,
 * src/http/send.ts), the API-path check of src/serve/app.ts (apiPathCheck). test/routes/table.test.ts
 * holds the declarations and openapi.yaml equal, path by path and query parameter by parameter.
 *
 * The handler finds its declaration on `res.locals.route` (src/http/context.ts): the router sets
 * it when the route matches, so what the cache and sendJson read is the route that answered.
 */
export interface ApiRoute {
  /** the Express pattern (openapi.yaml's path with `{name}` written `:name`) */
  readonly path: string;
  /** the query parameters the handler reads: exactly the ones openapi.yaml lists for the path */
  readonly query: readonly string[];
  /**
   * The change-record tags the answer reads (src/snapshot/tags.ts; docs/response-cache.md): a cached
   * answer is dropped when a write names one. `[]`: it reads nothing a write changes. A function
   * when they depend on the request (an account, a height).
   */
  readonly reads: readonly string[] | ((p: RouteParams, s: Snapshot) => string[]);
  /**
   * A 200 of the route can never change — a tx, EVM tx or block, once present, is never rewritten
   * (an answer about one not yet present is a 404, never cached) — so it is sent with a long
   * `Cache-Control: immutable` (src/http/etag.ts IMMUTABLE_CACHE_CONTROL, set by sendJson).
   */
  readonly immutable?: true;
  /** answers the request (thin: parameters → a snapshot query → the wire → sendJson) */
  readonly handler: (req: Request, res: Response) => void;
}

/** What `reads` gets of a request: its path parameters, its query. */
export interface RouteParams {
  path: Record<string, string>;
  query: Request['query'];
}

/**
 * The tags the answer of `route` to `req` read on `s`; undefined when unknown — no route
 * declared, or its tags could not be computed (a parameter the handler refused) — so any write drops it.
 */
export function answerTags(route: ApiRoute | undefined, req: Request, s: Snapshot): readonly string[] | undefined {
  if (route === undefined) return undefined;
  const { reads } = route;
  if (typeof reads !== 'function') return reads;
  try {
    return reads({ path: req.params, query: req.query }, s);
  } catch {
    return undefined;
  }
}
