import type { IncomingMessage, RequestListener } from 'node:http';
import express, { ErrorRequestHandler, Express, RequestHandler, Response } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import { httpCaching, ResponseCache } from '../http/caching';
import { explorerRouter } from '../explorer/router';
import { cors, corsHeaders } from '../http/cors';
import { varyOnEncoding } from '../http/encoding';
import { cachedFront } from '../http/front';
import { errorMiddleware, GRPC, sendError, shown, UnavailableError } from '../http/errors';
import { urlLengthLimit, urlTooLong } from '../http/limits';
import { errorFields, Logger, silentLogger } from '../http/log';
import { ObserveRequest, requestObserver } from '../http/observe';
import { createMetrics, Metrics, opsRouter, ReadinessInputs, routeOf } from '../http/ops';
import { arrayQueryParameters, decodablePath, rollyticsQuery } from '../http/params';
import { swaggerRouter } from '../http/swagger';
import { normalizeUrl, underBase } from '../http/url';
import { OpenApiDocument, validatorDocument } from './openapi';
import { blockRouter } from '../routes/block/router';
import { evmRouter, evmUnavailable } from '../routes/evm/router';
import { nftRouter } from '../routes/nft/router';
import { richListRouter } from '../routes/richlist/router';
import { statusRouter } from '../routes/status/router';
import { txRouter } from '../routes/tx/router';
import type { Snapshot } from '../snapshot/open';

/** Where requests find the snapshot to answer from; `current()` is undefined while none is loaded. */
export interface SnapshotSource {
  current(): Snapshot | undefined;
  /**
   * With hot swap (SnapshotHolder): current(), kept open for the request until release() — a
   * swap closes the old snapshot only after the requests that took it have finished.
   */
  acquire?(): Snapshot | undefined;
  release?(snapshot: Snapshot): void;
  /** a request on `snapshot` met a storage error (SnapshotHolder takes the snapshot out of rotation) */
  reportFault?(snapshot: Snapshot, error: Error): void;
  faulty?(): Error | undefined;
}

export interface AppOptions {
  /** CORS origins: `*`, a comma-separated list (with `*.domain` patterns), or '' for none */
  corsOrigin: string;
  /** check every response against openapi.yaml (tests) */
  validateResponses: boolean;
  /** where server faults are reported (never to the client); default: the logger, else stderr */
  logError?: (err: unknown) => void;
  /** ETag / Cache-Control max-age of a 200, seconds */
  cacheMaxAge: number;
  /** request targets longer than this get a 414 */
  maxUrlLength: number;
  /** true once shutdown began: /ready answers 503 and connections are closed after each response */
  draining?: () => boolean;
  /** why /ready must answer 503 although a snapshot is loaded (e.g. its start-up check is running) */
  notReady?: () => string | undefined;
  /** serve the built-in explorer at / and its pages (src/explorer) */
  explorer: boolean;
  /** serve --max-lag-s: /ready answers 503 with this reason (src/serve/live.ts staleness) */
  stale?: (s: Snapshot) => string | undefined;
  /** requests slower than this get a 'slow request' warn line, ms (default: none) */
  slowRequestMs?: number;
  /**
   * serve --base-url, in parseBaseUrl's form (src/http/url.ts: `/minimove-1`, '' = the root):
   * everything answers under this prefix, and a request outside it gets the JSON 404
   */
  baseUrl: string;
}

/** What createApp reports to and shares with the server around it; all optional. */
export interface AppDependencies {
  /** one JSON line per request at level info, server faults at error */
  logger?: Logger;
  /** served at /metrics (a fresh registry when absent) */
  metrics?: Metrics;
  /** the in-process response cache, when enabled: filled by the app, answered by createRequestListener's front */
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
    observe(req, res, () => routeOf(req));
    next();
  };
}

/**
 * --base-url: the requests createRequestListener found outside the prefix (answered 404 by the
 * app, after its log line, metrics and CORS headers are in place).
 */
const outsideBase = new WeakSet<IncomingMessage>();

function notUnderBase(base: string): RequestHandler {
  return (req, res, next) => {
    if (!outsideBase.has(req)) { next(); return; }
    uncacheable(res);
    sendError(res, 404, GRPC.NOT_FOUND, `not found: ${req.method} ${shown(req.path)}: this server answers under ${base}/`);
  };
}

/** Which snapshot this request is answered from (res.locals, src/http/context.ts), held until the response is done (hot swap). */
function takeSnapshot(snapshots: SnapshotSource): RequestHandler {
  return (_req, res, next) => {
    const snapshot = snapshots.acquire ? snapshots.acquire() : snapshots.current();
    if (!snapshot) { next(new UnavailableError('no snapshot is loaded')); return; }
    res.locals.snapshot = snapshot;
    if (snapshots.acquire && snapshots.release) {
      const release = snapshots.release.bind(snapshots);
      res.once('close', () => release(snapshot));
    }
    next();
  };
}

/** Errors are not cacheable: no ETag, `Cache-Control: no-store`. */
function uncacheable(res: Response): void {
  res.removeHeader('ETag');
  res.setHeader('Cache-Control', 'no-store');
}

export type AppArgs = { snapshots: SnapshotSource; openapi: OpenApiDocument; options: AppOptions } & AppDependencies;

/** What /ready answers from (src/http/ops.ts readiness), on the app's port or the operations port. */
export function readinessInputs(snapshots: SnapshotSource, options: AppOptions): ReadinessInputs {
  return {
    current: () => snapshots.current(),
    draining: options.draining ?? ((): boolean => false),
    stale: options.stale,
    notReady: () => options.notReady?.() ?? (snapshots.faulty?.() ? 'snapshot file is damaged; waiting for a good file' : undefined),
  };
}

/** Builds the Express app over a snapshot source; it never listens (see src/serve/server.ts). */
export function createApp(args: AppArgs): Express {
  return buildApp(args).app;
}

/** createApp, and the request observer it logs and counts with (the cached front shares it). */
function buildApp({ snapshots, openapi, options, logger = silentLogger, metrics, responseCache }: AppArgs): { app: Express; observe: ObserveRequest } {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.locals.validateResponses = options.validateResponses;
  const logError = options.logError ?? (logger === silentLogger
    ? (err: unknown): void => { console.error(err); }
    : (err: unknown): void => { logger.error('request failed', errorFields(err)); });
  const draining = options.draining ?? ((): boolean => false);
  const current = (): Snapshot | undefined => snapshots.current();
  const ops = metrics ?? createMetrics(current, responseCache);
  const observe = requestObserver(logger, ops, options.slowRequestMs);
  app.use(varyOnEncoding, observeRequests(observe, draining), urlLengthLimit(options.maxUrlLength));
  const base = options.baseUrl;
  app.use(normalizeRequestUrl, headAsGet, cors(options.corsOrigin));
  if (base !== '') app.use(notUnderBase(base));
  app.use(opsRouter({ ...readinessInputs(snapshots, options), metrics: ops }));
  // the served document names the prefix (Swagger UI's "Try it out" calls go there); the
  // validator's has no `servers`, it matches the paths the prefix was cut from
  app.use(swaggerRouter(JSON.stringify(base === '' ? openapi : { ...openapi, servers: [{ url: base }] }), base));
  if (options.explorer) app.use(explorerRouter(base));
  app.use(takeSnapshot(snapshots), evmUnavailable());
  app.use(httpCaching(options.cacheMaxAge, responseCache));
  // $refs inlined: same constraints, much less start-up work (src/serve/openapi.ts)
  const apiSpec = validatorDocument(openapi, options.validateResponses);
  app.use(rollyticsQuery(arrayQueryParameters(apiSpec)), decodablePath(Object.keys((apiSpec as { paths?: object }).paths ?? {})));
  // Every request is validated (no memo: a validated URL must still be checked for its method).
  // The validator's route matcher cache and lazy meta-schema come from patches/ (patch-package).
  app.use(OpenApiValidator.middleware({
    apiSpec: apiSpec as never,
    validateRequests: { coerceTypes: true, allowUnknownQueryParameters: true },
    validateResponses: options.validateResponses,
    validateApiSpec: false,
    useRequestUrl: true,
  }) as RequestHandler[]);
  app.use(statusRouter(), blockRouter(), txRouter(), evmRouter(), nftRouter(), richListRouter());
  app.use((req, res) => { uncacheable(res); sendError(res, 404, GRPC.NOT_FOUND, `not found: ${req.method} ${shown(req.path)}`); });
  const onError: ErrorRequestHandler = (err, _req, res, next) => { if (!res.headersSent) uncacheable(res); next(err); };
  app.use(onError, errorMiddleware(logError, (err, res) => {
    ops.storageError(err.code);
    const s = res.locals.snapshot;
    if (s) snapshots.reportFault?.(s, err);
  }));
  return { app, observe };
}

/**
 * What the HTTP server runs: the Express app of createApp, behind the response cache
 * (src/http/front.ts) when `responseCache` is given — hits are answered without entering
 * Express, misses computed by the app and stored.
 */
export function createRequestListener(args: AppArgs): RequestListener {
  const { app, observe } = buildApp(args);
  const { responseCache, options, snapshots } = args;
  const { maxUrlLength } = options;
  const inner: RequestListener = !responseCache ? app : cachedFront(app, {
    cache: responseCache, snapshots, cors: corsHeaders(options.corsOrigin), maxUrlLength,
    draining: options.draining ?? ((): boolean => false), observe,
  });
  const base = options.baseUrl;
  return base === '' ? inner : cutBase(base, inner, app, maxUrlLength);
}

/**
 * --base-url: the prefix is cut once, here, before the response cache and the app see the
 * URL, so both route, key and validate the same root-relative URL as without a prefix (and a
 * cached entry can never answer a request outside the prefix). req.originalUrl keeps the target
 * as sent, as Express's own mounting does (the log line shows it). A request outside the prefix
 * — or too long to look at (the app answers 414) — goes to the app, which answers it.
 */
function cutBase(base: string, inner: RequestListener, app: RequestListener, maxUrlLength: number): RequestListener {
  return (req, res) => {
    const raw = req.url as string;
    const rest = urlTooLong(raw, maxUrlLength) ? undefined : underBase(raw, base);
    (req as IncomingMessage & { originalUrl?: string }).originalUrl = raw;
    if (rest === undefined) {
      outsideBase.add(req);
      app(req, res);
      return;
    }
    req.url = rest;
    inner(req, res);
  };
}
