import type { IncomingMessage } from 'node:http';
import express, { ErrorRequestHandler, Express, RequestHandler, Response, Router } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import { httpCaching } from '../cache/fill';
import type { ResponseCache } from '../cache/store';
import { explorerRouter } from '../explorer/router';
import { cors } from '../http/cors';
import { varyOnEncoding } from '../http/encoding';
import { errorMiddleware, GRPC, sendError, shown, UnavailableError } from '../http/errors';
import { urlLengthLimit } from '../http/limits';
import { errorFields, Logger, silentLogger } from '../lib/log';
import { ObserveRequest, requestObserver } from '../http/observe';
import { createMetrics, Metrics, opsRouter, routeLabel } from '../http/ops';
import { arrayQueryParameters, decodablePath, rollyticsQuery } from '../http/params';
import { swaggerRouter } from '../http/swagger';
import { normalizeUrl } from '../http/url';
import { ApiGroups, apiGroupsOf, OpenApiDocument, servedDocument, validatorDocument } from './openapi';
import { evmUnavailable } from '../routes/evm/routes';
import { apiPathCheck, apiRouter, apiRoutes } from '../routes/table';
import type { ApiRoute } from '../http/route';
import type { Snapshot } from '../snapshot/open';
import type { ServeSettings } from '../settings/serve';
import { chainReadiness, ReadinessHolder, ReadinessOptions } from './readiness';

/*
 * The Express app: what answers a request once its chain is known — the chain's pages (ops,
 * Swagger UI, the explorer), its snapshot, the response cache's filling, the query checks and the
 * OpenAPI validator, the API's routes (src/routes/table.ts), the 404 and the error mapping. Which
 * chain a request is for, the base URL and the chain prefix, the root of a replica of several
 * chains and the order of the cache front and admission around the app are src/serve/routing.ts's.
 */

/**
 * The holder of a chain's snapshot as the app uses it (src/snapshot/holder.ts SnapshotHolder, or
 * a plain `{ current }` in tests): what readiness reads of it (src/serve/readiness.ts
 * ReadinessHolder: current(), undefined while none is loaded; its check, faults, files refused)
 * and what a request does with it.
 */
export interface ChainHolder extends ReadinessHolder {
  /**
   * With hot swap (SnapshotHolder): current(), kept open for the request until release() — a
   * swap closes the old snapshot only after the requests that took it have finished.
   */
  acquire?(): Snapshot | undefined;
  release?(snapshot: Snapshot): void;
  /** a request on `snapshot` met a storage error (SnapshotHolder takes the snapshot out of rotation) */
  reportFault?(snapshot: Snapshot, error: Error): void;
}

/**
 * A chain as the app answers it: one of a replica serving several (src/serve/chains.ts
 * ServedChain, under `/{id}/`, found by src/serve/routing.ts), or — id '' — the one chain of a
 * replica at the root.
 */
export interface ChainRoute {
  /** the chain id; '' for the one chain of a replica of one */
  readonly id: string;
  /** where it answers: the base URL, and `/{id}` for one of several (no trailing slash) */
  readonly base: string;
  readonly holder: ChainHolder;
}

/**
 * What the app of one chain is built from: serve's settings whole (src/settings/serve.ts: CORS,
 * the base URL, the limits, max-age, the explorer, response validation, the slow-request line;
 * each read where it is used), and what the process around it adds.
 */
export interface AppOptions extends ServeSettings, ReadinessOptions {
  /** where server faults are reported (never to the client); default: the logger, else stderr */
  logError?: (err: unknown) => void;
  /** a growing demo chain (serve --start-height, src/serve/growth.ts): the /status body while it grows */
  grownStatus?: (s: Snapshot) => string | undefined;
}

/** What the app reports to and shares with the server around it; all optional. */
export interface AppDependencies {
  /** one JSON line per request at level info, server faults at error */
  logger?: Logger;
  /** served at /metrics (a fresh registry when absent) */
  metrics?: Metrics;
  /** the in-process response cache, when enabled: filled by the app, answered by createRequestListener's front (src/serve/routing.ts) */
  responseCache?: ResponseCache;
}

/** Normalizes the URL (see normalizeUrl) before anything routes. */
const normalizeRequestUrl: RequestHandler = (req, _res, next) => {
  req.url = normalizeUrl(req.url);
  next();
};

/** HEAD is answered as GET (Node drops the body of a HEAD response by itself). */
const headAsGet: RequestHandler = (req, _res, next) => {
  if (req.method === 'HEAD') req.method = 'GET';
  next();
};

/** Log line + metrics (observe.ts) for every request the app answers; closes connections while draining. */
function observeRequests(observe: ObserveRequest, draining: () => boolean): RequestHandler {
  return (req, res, next) => {
    if (draining()) res.setHeader('Connection', 'close');
    observe(req, res, () => routeLabel(req));
    next();
  };
}

function notUnderBase(base: string, outsideBase: (req: IncomingMessage) => boolean): RequestHandler {
  return (req, res, next) => {
    if (!outsideBase(req)) {
      next();
      return;
    }
    uncacheable(res);
    sendError(res, 404, GRPC.NOT_FOUND, `not found: ${req.method} ${shown(req.path)}: this server answers under ${base}/`);
  };
}

/** Which snapshot this request is answered from (res.locals, src/http/context.ts), held until the response is done (hot swap). */
function takeSnapshot(chainOf: (req: IncomingMessage) => ChainRoute | undefined): RequestHandler {
  return (req, res, next) => {
    const chain = chainOf(req);
    const snapshots = chain?.holder;
    if (!snapshots) {
      next(new UnavailableError('no chain is served here'));
      return;
    }
    // One of several chains is served once its file passed its check: the root /ready, 200 while
    // another chain is ready, would not keep a balancer from sending its requests here. (A
    // replica of one answers while its start-up check runs, its /ready 503.)
    if (chain.id !== '' && snapshots.checking?.()) {
      next(new UnavailableError(`chain ${chain.id}: its snapshot file is being checked (quick check); try again shortly`));
      return;
    }
    const snapshot = snapshots.acquire ? snapshots.acquire() : snapshots.current();
    if (!snapshot) {
      next(new UnavailableError('no snapshot is loaded'));
      return;
    }
    res.locals.snapshot = snapshot;
    if (snapshots.acquire && snapshots.release) {
      const release = snapshots.release.bind(snapshots);
      res.once('close', () => release(snapshot));
    }
    next();
  };
}

/** Errors are not cacheable: no ETag, `Cache-Control: no-store`. */
export function uncacheable(res: Response): void {
  res.removeHeader('ETag');
  res.setHeader('Cache-Control', 'no-store');
}

/** What the app is built from: its document and options, and what it reports to (AppDependencies). */
export type AppArgs = { openapi: OpenApiDocument; options: AppOptions } & AppDependencies;

/**
 * How the app finds a request's chain (src/serve/routing.ts): `chainOf`, after the base URL and
 * the chain's prefix were cut; `several`, a replica of several chains — its chains (metrics, the
 * log line's chain) and the root's router for requests routed to no chain; `outsideBase`, a
 * request the cut found outside --base-url (the app answers it 404).
 */
export interface AppRouting {
  chainOf(req: IncomingMessage): ChainRoute | undefined;
  several?: { list(): ChainRoute[]; root(metrics: Metrics): RequestHandler };
  /** a replica of one chain: that chain (the metrics read its snapshot) */
  only?: ChainRoute;
  outsideBase(req: IncomingMessage): boolean;
}

/**
 * The Express app of a replica — of its one chain, or of its several, each under `/{id}/` — as
 * src/serve/routing.ts createRequestListener routes to it (the one caller: `serve`, `--get`,
 * startServer(), tests and benchmarks all go through it); it never listens (src/serve/server.ts).
 * The app, and the request observer it logs and counts with (the cached front shares it).
 */
export function buildApp(args: AppArgs, routing: AppRouting): { app: Express; observe: ObserveRequest; metrics: Metrics; routes: readonly ApiRoute[] } {
  const { openapi, options, logger = silentLogger, metrics, responseCache } = args;
  const { chainOf, several } = routing;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.locals.validateResponses = options.validateResponses;
  const logError =
    options.logError ??
    (logger === silentLogger
      ? (err: unknown): void => {
          console.error(err);
        }
      : (err: unknown): void => {
          logger.error('request failed', errorFields(err));
        });
  const draining = options.draining ?? ((): boolean => false);
  const ops =
    metrics ??
    (several
      ? createMetrics(
          () => undefined,
          responseCache,
          () => several.list().map((c) => ({ id: c.id, current: () => c.holder.current() })),
        )
      : createMetrics(() => routing.only?.holder.current(), responseCache));
  const observe = requestObserver(logger, ops, options, several ? (req) => chainOf(req)?.id ?? '' : undefined);
  app.use(varyOnEncoding, observeRequests(observe, draining), urlLengthLimit(options.limits));
  const base = options.baseUrl;
  app.use(normalizeRequestUrl, headAsGet, cors(options.corsOrigin));
  if (base !== '') app.use(notUnderBase(base, routing.outsideBase));
  // the validator's document has no `servers`: it matches the paths the prefix was cut from
  const apiSpec = validatorDocument(openapi, options.validateResponses);
  // a replica of several chains: its root answers the chain list and the replica's health
  if (several) app.use(several.root(ops));
  const routes = apiRoutes({ grownStatus: options.grownStatus });
  // (a growing demo chain's /status changes without a write: sent with no-store and no ETag, never decided from versions)
  // what is per chain — its readiness, the prefix Swagger UI and the explorer carry — is built once per chain
  app.use(
    perChain(chainOf, apiPathCheck(routes), (chain) =>
      Router().use(
        opsRouter({ ready: chainReadiness(chain.holder, options), metrics: ops }),
        // the served document names the prefix (Swagger UI's "Try it out" calls go there) and only
        // the groups the chain's snapshot answers (no /evm- paths on Move and Wasm)
        swaggerRouter(
          {
            variant: () => apiGroupsOf(chain.holder.current()?.meta),
            json: (groups) => JSON.stringify(servedDocument(openapi, groups as ApiGroups, chain.base)),
          },
          chain.base,
        ),
        ...(options.explorer ? [explorerRouter(chain.base)] : []),
      ),
    ),
  );
  app.use(takeSnapshot(chainOf), evmUnavailable());
  app.use(
    httpCaching(
      options,
      responseCache,
      responseCache &&
        ((req) => {
          const id = chainOf(req)?.id;
          return id === undefined ? undefined : responseCache.part(id);
        }),
    ),
  );
  // $refs inlined: same constraints, much less start-up work (src/serve/openapi.ts)
  app.use(rollyticsQuery(arrayQueryParameters(apiSpec)), decodablePath(Object.keys((apiSpec as { paths?: object }).paths ?? {})));
  // Every request is validated (no memo: a validated URL must still be checked for its method).
  // The validator's route matcher cache and lazy meta-schema come from patches/ (patch-package).
  // One validator for every chain: the chain's prefix is cut before the app routes.
  app.use(
    OpenApiValidator.middleware({
      apiSpec: apiSpec as never,
      validateRequests: { coerceTypes: true, allowUnknownQueryParameters: true },
      validateResponses: options.validateResponses,
      validateApiSpec: false,
      useRequestUrl: true,
    }) as RequestHandler[],
  );
  app.use(apiRouter(routes));
  app.use((req, res) => {
    uncacheable(res);
    sendError(res, 404, GRPC.NOT_FOUND, `not found: ${req.method} ${shown(req.path)}`);
  });
  const onError: ErrorRequestHandler = (err, _req, res, next) => {
    if (!res.headersSent) uncacheable(res);
    next(err);
  };
  app.use(
    onError,
    errorMiddleware(logError, (err, res) => {
      ops.storageError(err.code);
      const s = res.locals.snapshot;
      if (s) chainOf(res.req)?.holder.reportFault?.(s, err);
    }),
  );
  return { app, observe, metrics: ops, routes };
}

/**
 * The request's chain's own handler, made on its first request (a WeakMap: a chain removed from
 * the replica takes its handler with it).
 */
function perChain(
  chainOf: (req: IncomingMessage) => ChainRoute | undefined,
  isApiPath: (url: string) => boolean,
  make: (chain: ChainRoute) => RequestHandler,
): RequestHandler {
  const made = new WeakMap<ChainRoute, RequestHandler>();
  return (req, res, next) => {
    // The API's own paths are none of these routers' (ops, Swagger UI, the explorer): not matched
    // against them. Leaving an Express 4 router that matched nothing costs a setImmediate (a turn
    // of the event loop) per router — latency, and a client that half-closes after its request
    // would see Node end the socket before the answer (test/faults/methods.test.ts).
    if (isApiPath(req.url)) {
      next();
      return;
    }
    const chain = chainOf(req);
    if (chain === undefined) {
      next();
      return;
    }
    let h = made.get(chain);
    if (h === undefined) made.set(chain, (h = make(chain)));
    h(req, res, next);
  };
}
