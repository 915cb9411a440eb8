import type { IncomingMessage, RequestListener } from 'node:http';
import { RequestHandler, Response, Router } from 'express';
import { cachedFront, FrontSource } from '../cache/front';
import { cacheControlOf } from '../cache/fill';
import { ChainEntry, chainPickerHtml } from '../explorer/chain-picker';
import { corsHeaders } from '../http/cors';
import { GRPC, sendError, shown } from '../http/errors';
import { Limits, urlTooLong } from '../http/limits';
import { silentLogger } from '../lib/log';
import { methodNotAllowed, Metrics } from '../http/ops';
import { underBase } from '../http/url';
import { routeMatcher } from '../http/version-etag';
import { AppArgs, AppOptions, buildApp, ChainHolder, ChainRoute, uncacheable } from './app';
import { chainReadiness, rootReadiness } from './readiness';

/**
 * Where a request finds its chain, read top to bottom in the order it runs: the listener
 * (src/serve/server.ts) calls createRequestListener's function, which cuts the base URL
 * (cutBase) or the base URL and the chain's prefix (cutChain: a replica of several chains,
 * `/{chain_id}/…`), then the response cache's front answers what it holds from memory
 * (src/cache/front.ts), then admission (`wrap`, src/http/admission.ts) gives what runs a query
 * its turn, then the Express app answers (src/serve/app.ts buildApp: one app for every chain of
 * the replica, built once here, which reads the request's chain back through `chainOf` — the
 * chain's pages, its snapshot, the filling of its part of the cache — then the query checks, the
 * validator and the routes of src/routes/table.ts). A request routed to no chain of a replica of
 * several is the root's: the chain list (JSON or the explorer's chain picker,
 * src/explorer/chain-picker.ts), the replica's /health, /ready (src/serve/readiness.ts) and
 * /metrics (rootRouter).
 */

/** The chains of a replica serving several (src/serve/chains.ts ChainSet). */
export interface ChainDirectory {
  /** the chain served under `/{id}/` */
  find(id: string): ChainRoute | undefined;
  /** every chain, by id */
  list(): ChainRoute[];
  /** files not served, and why (/ and the root /ready list them) */
  refused(): { file: string; error: string }[];
}

/** The chain each request routed under `/{chain_id}/` was found for (createRequestListener's cut). */
const routedChain = new WeakMap<IncomingMessage, ChainRoute>();

/**
 * `snapshots`: the one chain of a replica at the root; or `chains`: a replica of several, each
 * under `/{chain_id}/` (then `snapshots` is not used).
 */
export type ListenerArgs = { snapshots?: ChainHolder; chains?: ChainDirectory } & AppArgs;

/**
 * --base-url: the requests createRequestListener found outside the prefix (answered 404 by the
 * app, after its log line, metrics and CORS headers are in place).
 */
const outsideBase = new WeakSet<IncomingMessage>();

/**
 * What the HTTP server runs: the Express app (src/serve/app.ts buildApp), behind the response cache
 * (src/cache/front.ts) when `responseCache` is given — answers from memory (a held body, or a
 * validator's 304) are given without entering Express, misses computed by the app and kept.
 * `wrap` (admission, src/http/admission.ts) goes around the app: after the base URL and the
 * chain's prefix are cut (it sees the URL the app routes and the request's chain, chainIdOf) and
 * after the cache, so an answer from memory — which runs no query — never waits for a turn
 * (docs/reliability.md#overload).
 */
export function createRequestListener(args: ListenerArgs, wrap: (inner: RequestListener) => RequestListener = (l) => l): RequestListener {
  const { responseCache, options, chains, logger = silentLogger } = args;
  // the chain a request is answered for: the one the cut routed it to, else the replica's only one
  const only: ChainRoute | undefined = chains ? undefined : { id: '', base: options.baseUrl, holder: args.snapshots as ChainHolder };
  const chainOf = only ? (): ChainRoute => only : (req: IncomingMessage): ChainRoute | undefined => routedChain.get(req);
  const { app, observe, metrics, routes } = buildApp(args, {
    chainOf,
    only,
    outsideBase: (req) => outsideBase.has(req),
    ...(chains ? { several: { list: () => chains.list(), root: (ops: Metrics) => rootRouter(chains, ops, options, chainOf) } } : {}),
  });
  // what runs a query waits its turn (admission); what the cache answers from memory does not
  const admitted = wrap(app);
  // each chain's source for the front, made once (a hit allocates nothing for it)
  const sources = new WeakMap<ChainRoute, FrontSource>();
  const front: RequestListener = !responseCache
    ? admitted
    : cachedFront(admitted, {
        cache: responseCache,
        sourceOf: (req) => {
          const chain = chainOf(req);
          if (chain === undefined) return undefined;
          let source = sources.get(chain);
          if (source === undefined) {
            sources.set(chain, (source = { snapshots: chain.holder, part: responseCache.part(chain.id), ...(chains ? { chain: chain.id } : {}) }));
          }
          return source;
        },
        cors: corsHeaders(options.corsOrigin),
        limits: options.limits,
        draining: options.draining ?? ((): boolean => false),
        observe,
        logsRequests: logger.enabled('info'),
        metrics,
        // conditional GETs of API routes decided from the file's tag versions (src/http/version-etag.ts)
        versioned: {
          match: routeMatcher(options.grownStatus ? routes.filter((r) => r.path !== '/status') : routes),
          cacheControl: cacheControlOf(options),
        },
      });
  const base = options.baseUrl;
  // outside the base URL: the app answers (a 404), through `wrap` like everything else
  const inner: RequestListener = (req, res) => (outsideBase.has(req) ? admitted : front)(req, res);
  if (chains !== undefined) return cutChain(base, chains, inner, options.limits);
  return base === '' ? inner : cutBase(base, inner, options.limits);
}

/** The chain id of a request of a replica serving several chains ('' at its root), after the cut. */
export function chainIdOf(req: IncomingMessage): string {
  return routedChain.get(req)?.id ?? '';
}

/**
 * --base-url: the prefix is cut once, here, before the response cache and the app see the
 * URL, so both route, key and validate the same root-relative URL as without a prefix (and a
 * cached entry can never answer a request outside the prefix). req.originalUrl keeps the target
 * as sent, as Express's own mounting does (the log line shows it). A request outside the prefix
 * — or too long to look at (the app answers 414) — is marked for the app, which answers it.
 */
function cutBase(base: string, inner: RequestListener, limits: Limits): RequestListener {
  return (req, res) => {
    const raw = req.url as string;
    const rest = urlTooLong(raw, limits) ? undefined : underBase(raw, base);
    (req as IncomingMessage & { originalUrl?: string }).originalUrl = raw;
    if (rest === undefined) outsideBase.add(req);
    else req.url = rest;
    inner(req, res);
  };
}

/**
 * A replica of several chains: after the base URL, the first path segment names the chain
 * (`/{chain_id}/indexer/…`); it is cut like the base URL, and the request is routed to that chain
 * (routedChain) — its snapshot, its part of the response cache, its prefix in the explorer and
 * Swagger UI. A request whose first segment names no chain is the root's (rootRouter).
 */
function cutChain(base: string, chains: ChainDirectory, inner: RequestListener, limits: Limits): RequestListener {
  return (req, res) => {
    const raw = req.url as string;
    (req as IncomingMessage & { originalUrl?: string }).originalUrl = raw;
    let rest = urlTooLong(raw, limits) ? undefined : base === '' ? (underBase(raw, '') ?? raw) : underBase(raw, base);
    if (rest === undefined) {
      outsideBase.add(req);
      inner(req, res);
      return;
    }
    const end = segmentEnd(rest);
    const chain = end > 1 ? chains.find(rest.slice(1, end)) : undefined;
    if (chain !== undefined) {
      routedChain.set(req, chain);
      rest = end === rest.length ? '/' : rest.charCodeAt(end) === 63 /* ? */ ? `/${rest.slice(end)}` : rest.slice(end);
    }
    req.url = rest;
    inner(req, res);
  };
}

/** Where the first path segment of a root-relative target ends (at `/`, `?` or the end). */
function segmentEnd(url: string): number {
  for (let i = 1; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c === 47 || c === 63) return i;
  }
  return url.length;
}

function chainEntries(chains: ChainDirectory, options: AppOptions): ChainEntry[] {
  return chains.list().map((c) => {
    const s = c.holder.current();
    const r = chainReadiness(c.holder, options)();
    const why = r.ready ? undefined : (JSON.parse(r.body) as { message?: string }).message;
    return {
      chain_id: c.id,
      vm_type: s?.meta.vmType ?? null,
      height: s?.meta.height ?? null,
      path: `${c.base}/`,
      ready: r.ready,
      ...(why === undefined ? {} : { not_ready: why }),
    };
  });
}

/**
 * The root of a replica serving several chains (requests routed to no chain): `GET /` lists the
 * chains — JSON for a client that asks for it (or when the explorer is off), the explorer's chain
 * picker otherwise — `/health`, `/ready` (200 while any chain is ready, with a per-chain
 * breakdown) and `/metrics`; anything else is a 404 that names where the chains are.
 */
function rootRouter(chains: ChainDirectory, metrics: Metrics, options: AppOptions, chainOf: (req: IncomingMessage) => ChainRoute | undefined): RequestHandler {
  const base = options.baseUrl;
  const draining = options.draining ?? ((): boolean => false);
  const noStore = (res: Response): Response => res.set('Cache-Control', 'no-store');
  const router = Router()
    .get('/', (req, res) => {
      const list = chainEntries(chains, options);
      // a file that does not open, failed its check or was refused is listed with its reason
      const refused = chains.refused();
      noStore(res).vary('Accept');
      if (options.explorer && req.accepts(['application/json', 'text/html']) === 'text/html') {
        res.type('text/html; charset=utf-8').send(chainPickerHtml(req, list, refused, base));
        return;
      }
      res.type('application/json').send(JSON.stringify({ chains: list, ...(refused.length === 0 ? {} : { files_not_served: refused }) }));
    })
    .get('/health', (_req, res) => {
      noStore(res).type('application/json').send('{"status":"ok"}');
    })
    .get('/ready', (_req, res) => {
      const r = rootReadiness(chains, options, draining());
      noStore(res)
        .type('application/json')
        .status(r.ready ? 200 : 503)
        .send(r.body);
    })
    .get('/metrics', (_req, res, next) => {
      metrics.registry.metrics().then((text) => {
        noStore(res).type(metrics.registry.contentType).send(text);
      }, next);
    })
    .all(['/', '/health', '/ready', '/metrics'], methodNotAllowed)
    .use((req, res) => {
      uncacheable(res);
      const ids = chains.list().map((c) => c.id);
      sendError(
        res,
        404,
        GRPC.NOT_FOUND,
        `not found: ${req.method} ${shown(req.path)}: this replica serves each chain under ${base}/{chain_id}/` +
          (ids.length === 0
            ? ' and serves no chain now'
            : ` (${ids.slice(0, 20).join(', ')}${ids.length > 20 ? `, … ${ids.length} chains` : ''}); ${base}/ lists them`),
      );
    });
  return (req, res, next) => {
    if (chainOf(req) !== undefined) {
      next();
      return;
    }
    router(req, res, next);
  };
}
