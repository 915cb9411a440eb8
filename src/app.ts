import type { RequestListener } from 'node:http';
import express, { ErrorRequestHandler, Express, Request, RequestHandler, Response } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import { httpCaching, ResponseCache } from './http/caching';
import { cors } from './http/cors';
import { explorerRouter } from './explorer/router';
import { cachedFront, normalizeUrl } from './http/front';
import { errorMiddleware, GRPC, sendError, UnavailableError } from './http/errors';
import { urlLengthLimit } from './http/limits';
import { errorFields, Logger, silentLogger } from './http/log';
import { createMetrics, Metrics, opsRouter } from './http/ops';
import { swaggerRouter } from './http/swagger';
import { OpenApiDocument, validatorDocument } from './openapi';
import { blockRouter } from './routes/block/router';
import { evmRouter, evmUnavailable } from './routes/evm/router';
import { nftRouter } from './routes/nft/router';
import { richListRouter } from './routes/richlist/router';
import { statusRouter } from './routes/status/router';
import { txRouter } from './routes/tx/router';
import type { Snapshot } from './snapshot/open';

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
  validateResponses?: boolean;
  /** where server faults are reported (never to the client); default: the logger, else stderr */
  logError?: (err: unknown) => void;
  /** ETag / Cache-Control max-age of a 200, seconds (default 1) */
  cacheMaxAge?: number;
  /** request targets longer than this get a 414 (default 8192) */
  maxUrlLength?: number;
  /** true once shutdown began: /ready answers 503 and connections are closed after each response */
  draining?: () => boolean;
  /** why /ready must answer 503 although a snapshot is loaded (e.g. its start-up check is running) */
  notReady?: () => string | undefined;
  /** URLs whose validation is remembered (default 10000; 0 = validate every request) */
  validationCacheEntries?: number;
  /** serve the built-in explorer at / and its pages (src/explorer; default off here, on in `serve`) */
  explorer?: boolean;
  /** serve --max-lag-s: /ready answers 503 with this reason (src/follow/live.ts staleness) */
  stale?: (s: Snapshot) => string | undefined;
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

/**
 * Times every request; when it ends (or is aborted) writes its log line and metrics. Outermost,
 * so it sees 414s and 503s too.
 */
function observeRequests(logger: Logger, metrics: Metrics, draining: () => boolean): RequestHandler {
  const logRequests = logger.enabled('info');
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    const method = req.method;
    const path = req.originalUrl;
    if (draining()) res.setHeader('Connection', 'close');
    res.once('close', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      metrics.observe(req, res, seconds);
      if (!logRequests) return;
      const sentBody = method !== 'HEAD' && res.statusCode !== 304 && res.statusCode !== 204;
      logger.info('request', {
        method, path, status: res.statusCode, ms: Math.round(seconds * 1e6) / 1e3,
        bytes: sentBody ? Number(res.getHeader('content-length') ?? 0) : 0,
        ...(res.writableFinished ? {} : { aborted: true }),
      });
    });
    next();
  };
}

/** Which snapshot this request is answered from, held until the response is done (hot swap). */
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

interface SpecValidator { validate(doc: unknown): { errors: unknown[] } }
type SpecValidatorClass = new (opts: { version: string; validateApiSpec: boolean }) => SpecValidator;

/**
 * express-openapi-validator 5.x compiles the whole OpenAPI 3 meta-schema with Ajv at start-up
 * even with `validateApiSpec: false`, and then never uses it (framework/index.js constructs
 * OpenAPISchemaValidator unconditionally): ~200 ms of every cold start. The compilation is
 * deferred to the first validate() call — which, with validateApiSpec off, never comes. A
 * version without that module keeps its own behaviour.
 */
function deferSpecValidatorCompile(): void {
  let mod: { OpenAPISchemaValidator?: SpecValidatorClass & { deferred?: true } };
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    mod = require('express-openapi-validator/dist/framework/openapi.schema.validator');
  } catch {
    return;
  }
  if (!mod.OpenAPISchemaValidator || mod.OpenAPISchemaValidator.deferred) return;
  const Compiled: SpecValidatorClass = mod.OpenAPISchemaValidator;
  class Deferred implements SpecValidator {
    static deferred = true as const;
    private compiled?: SpecValidator;
    constructor(private readonly opts: { version: string; validateApiSpec: boolean }) {}
    validate(doc: unknown): { errors: unknown[] } {
      this.compiled ??= new Compiled(this.opts);
      return this.compiled.validate(doc);
    }
  }
  mod.OpenAPISchemaValidator = Deferred;
}

type PathToRegexp = (path: string, opts?: { sensitive?: boolean; strict?: boolean }) => { regexp: RegExp; keys: unknown[] };

/**
 * express-openapi-validator's route lookup (middlewares/openapi.metadata.js `lookupRoute`)
 * compiles every route's path pattern with path-to-regexp on every request it validates —
 * ~10 % of a request the validator has not seen. The compilation is a pure function of the
 * pattern and options and its RegExp is stateless (no g/y flag), so it is remembered here. A
 * version laid out differently keeps its own behaviour.
 */
function memoizeValidatorRouteRegexps(): void {
  let mod: { pathToRegexp?: PathToRegexp & { memoized?: true } };
  try {
    // The validator's own copy (express has an older path-to-regexp at the top level). A static
    // path, so that esbuild's bundles (build/bundle, the single executable) patch the very module
    // instance the validator calls.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    mod = require('express-openapi-validator/node_modules/path-to-regexp');
  } catch {
    return;
  }
  const compile = mod.pathToRegexp;
  if (typeof compile !== 'function' || compile.memoized) return;
  const seen = new Map<string, ReturnType<PathToRegexp>>();
  const memoized = Object.assign((path: string, opts: { sensitive?: boolean; strict?: boolean } = {}) => {
    if (typeof path !== 'string') return compile(path, opts);
    const key = `${opts.sensitive ? 1 : 0}${opts.strict ? 1 : 0}${path}`;
    let r = seen.get(key);
    if (r === undefined) {
      r = compile(path, opts);
      if (r.regexp.global || r.regexp.sticky || seen.size >= 1000) return r;
      seen.set(key, r);
    }
    return r;
  }, { memoized: true as const });
  try { mod.pathToRegexp = memoized; } catch { /* read-only export: leave it */ }
}

interface Validated { query: unknown; openapi: unknown }

/**
 * Request validation (express-openapi-validator) is a pure function of method + URL — the
 * contract has no header or body parameters — and it is most of a request's cost (it compiles
 * every route's path pattern again on each request). So a URL that passed once is not
 * validated again: its coerced query and route match are remembered (bounded, least recently
 * used out) and restored. Rejections are never remembered.
 */
function validateOnce(validator: RequestHandler[], maxEntries: number): RequestHandler {
  const run = express.Router().use(validator);
  if (maxEntries <= 0) return run;
  const seen = new Map<string, Validated>();
  // The oldest entry, by an iterator kept between evictions: a fresh iterator would skip every
  // entry deleted since the last rehash (O(entries) per eviction).
  let oldest = seen.keys();
  const evictOne = (): void => {
    let k = oldest.next();
    if (k.done) { oldest = seen.keys(); k = oldest.next(); }
    if (!k.done) seen.delete(k.value);
  };
  return (req, res, next) => {
    // by method too: a URL validated for GET says nothing about a POST to it (405)
    const key = `${req.method} ${req.url}`;
    const hit = seen.get(key);
    if (hit) {
      seen.delete(key);
      seen.set(key, hit);
      req.query = { ...(hit.query as Request['query']) };
      (req as { openapi?: unknown }).openapi = hit.openapi;
      next();
      return;
    }
    run(req, res, (err?: unknown) => {
      if (err) { next(err); return; }
      seen.set(key, { query: { ...req.query }, openapi: (req as { openapi?: unknown }).openapi });
      if (seen.size > maxEntries) evictOne();
      next();
    });
  };
}

/** Errors are not cacheable: no ETag, `Cache-Control: no-store`. */
function uncacheable(res: Response): void {
  res.removeHeader('ETag');
  res.setHeader('Cache-Control', 'no-store');
}

/** Builds the Express app over a snapshot source; it never listens (see src/server.ts). */
export function createApp({ snapshots, openapi, options, logger = silentLogger, metrics, responseCache }: {
  snapshots: SnapshotSource; openapi: OpenApiDocument; options: AppOptions;
} & AppDependencies): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.locals.validateResponses = options.validateResponses ?? false;
  const logError = options.logError ?? (logger === silentLogger
    ? (err: unknown): void => { console.error(err); }
    : (err: unknown): void => { logger.error('request failed', errorFields(err)); });
  const draining = options.draining ?? ((): boolean => false);
  const current = (): Snapshot | undefined => snapshots.current();
  const ops = metrics ?? createMetrics(current, responseCache);
  app.locals.metrics = ops;

  app.use(observeRequests(logger, ops, draining), urlLengthLimit(options.maxUrlLength ?? 8192));
  app.use(normalizeRequestUrl, headAsGet, cors(options.corsOrigin));
  const notReady = (): string | undefined => options.notReady?.()
    ?? (snapshots.faulty?.() ? 'snapshot file is damaged; waiting for a good file' : undefined);
  app.use(opsRouter({ current, draining, metrics: ops, stale: options.stale, notReady }));
  app.use(swaggerRouter(JSON.stringify(openapi)));
  if (options.explorer) app.use(explorerRouter());
  app.use(takeSnapshot(snapshots), evmUnavailable());
  app.use(httpCaching(options.cacheMaxAge ?? 1, responseCache));
  deferSpecValidatorCompile();
  memoizeValidatorRouteRegexps();
  const validator = OpenApiValidator.middleware({
    // $refs inlined: same constraints, much less start-up work (src/openapi.ts)
    apiSpec: validatorDocument(openapi, options.validateResponses ?? false) as never,
    validateRequests: { coerceTypes: true, allowUnknownQueryParameters: true },
    validateResponses: options.validateResponses ?? false,
    validateApiSpec: false,
    useRequestUrl: true,
  }) as RequestHandler[];
  // With response validation (tests) the validator must see every request.
  app.use(validateOnce(validator, options.validateResponses ? 0 : options.validationCacheEntries ?? 10_000));
  app.use(statusRouter(), blockRouter(), txRouter(), evmRouter(), nftRouter(), richListRouter());
  app.use((req, res) => { uncacheable(res); sendError(res, 404, GRPC.NOT_FOUND, `not found: ${req.method} ${req.path}`); });
  const onError: ErrorRequestHandler = (err, _req, res, next) => { if (!res.headersSent) uncacheable(res); next(err); };
  app.use(onError, errorMiddleware(logError, (err, res) => {
    ops.storageError(err.code);
    const s = res.locals.snapshot as Snapshot | undefined;
    if (s) snapshots.reportFault?.(s, err);
  }));
  return app;
}

/**
 * What the HTTP server runs: the Express app of createApp, behind the response cache
 * (src/http/front.ts) when `responseCache` is given — hits are answered without entering
 * Express, misses computed by the app and stored.
 */
export function createRequestListener(args: Parameters<typeof createApp>[0]): RequestListener {
  const app = createApp(args);
  const { responseCache, logger = silentLogger, options, snapshots } = args;
  if (!responseCache) return app;
  return cachedFront(app, {
    cache: responseCache, snapshots, corsOrigin: options.corsOrigin, maxUrlLength: options.maxUrlLength ?? 8192,
    draining: options.draining ?? ((): boolean => false), logger, metrics: app.locals.metrics as Metrics,
  });
}
