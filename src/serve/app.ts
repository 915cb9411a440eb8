import type { IncomingMessage, RequestListener } from 'node:http';
import express, { ErrorRequestHandler, Express, RequestHandler, Response, Router } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import { httpCaching, ResponseCache } from '../http/caching';
import { explorerRouter } from '../explorer/router';
import { cors, corsHeaders } from '../http/cors';
import { varyOnEncoding } from '../http/encoding';
import { cachedFront, FrontSource } from '../http/front';
import { errorJson, errorMiddleware, GRPC, sendError, shown, UnavailableError } from '../http/errors';
import { urlLengthLimit, urlTooLong } from '../http/limits';
import { errorFields, Logger, silentLogger } from '../lib/log';
import { ObserveRequest, requestObserver } from '../http/observe';
import { createMetrics, methodNotAllowed, Metrics, opsRouter, readiness, ReadinessInputs, routeOf } from '../http/ops';
import { arrayQueryParameters, decodablePath, rollyticsQuery } from '../http/params';
import { swaggerRouter } from '../http/swagger';
import { normalizeUrl, underBase } from '../http/url';
import { ApiGroups, apiGroupsOf, OpenApiDocument, servedDocument, validatorDocument } from './openapi';
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
  /** the file served is being checked (its start-up check; a file just added): not ready yet */
  checking?(): boolean;
  /** files refused (a damaged or other-chain replacement, a manifest of another chain), and why: /ready lists them */
  notServed?(): { file: string; error: string }[];
}

/**
 * A chain as the app routes it: one of a replica serving several (src/serve/chains.ts
 * ServedChain, under `/{id}/`), or — id '' — the one chain of a replica at the root.
 */
export interface ChainRoute {
  /** the chain id; '' for the one chain of a replica of one */
  readonly id: string;
  /** where it answers: the base URL, and `/{id}` for one of several (no trailing slash) */
  readonly base: string;
  readonly holder: SnapshotSource;
}

/** The chains of a replica serving several (src/serve/chains.ts ChainSet). */
export interface ChainDirectory {
  /** the chain served under `/{id}/` */
  find(id: string): ChainRoute | undefined;
  /** every chain, by id */
  list(): ChainRoute[];
  /** files not served, and why (/ and the root /ready list them) */
  refused(): { file: string; error: string }[];
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
  /** a growing demo chain (serve --start-height, src/serve/growth.ts): the /status body while it grows */
  grownStatus?: (s: Snapshot) => string | undefined;
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
function takeSnapshot(chainOf: (req: IncomingMessage) => ChainRoute | undefined): RequestHandler {
  return (req, res, next) => {
    const chain = chainOf(req);
    const snapshots = chain?.holder;
    if (!snapshots) { next(new UnavailableError('no chain is served here')); return; }
    // One of several chains is served once its file passed its check: the root /ready, 200 while
    // another chain is ready, would not keep a balancer from sending its requests here. (A
    // replica of one answers while its start-up check runs, its /ready 503.)
    if (chain.id !== '' && snapshots.checking?.()) { next(new UnavailableError(`chain ${chain.id}: its snapshot file is being checked (quick check); try again shortly`)); return; }
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

/**
 * `snapshots`: the one chain of a replica at the root; or `chains`: a replica of several, each
 * under `/{chain_id}/` (then `snapshots` is not used).
 */
export type AppArgs = { snapshots?: SnapshotSource; chains?: ChainDirectory; openapi: OpenApiDocument; options: AppOptions } & AppDependencies;

/** The chain each request routed under `/{chain_id}/` was found for (createRequestListener's cut). */
const routedChain = new WeakMap<IncomingMessage, ChainRoute>();

/** The chain a request is answered for: the one it was routed to, else the replica's only one. */
function chainResolver(args: AppArgs): (req: IncomingMessage) => ChainRoute | undefined {
  if (args.chains !== undefined) return (req) => routedChain.get(req);
  const only: ChainRoute = { id: '', base: args.options.baseUrl, holder: args.snapshots as SnapshotSource };
  return () => only;
}

/**
 * What /ready answers from (src/http/ops.ts readiness), on the app's port or the operations port;
 * `chain`: one chain of a replica serving several (its own start-up check).
 */
export function readinessInputs(snapshots: SnapshotSource, options: AppOptions): ReadinessInputs {
  return {
    current: () => snapshots.current(),
    draining: options.draining ?? ((): boolean => false),
    stale: options.stale,
    notReady: () => (snapshots.checking?.() ? CHECKING : undefined) ?? options.notReady?.()
      ?? (snapshots.faulty?.() ? 'snapshot file is damaged; waiting for a good file' : undefined),
    notServed: snapshots.notServed?.bind(snapshots),
  };
}

/** /ready's reason while the file served is being checked. */
const CHECKING = 'checking the snapshot file (quick check)';

/** Builds the Express app over a snapshot source; it never listens (see src/serve/server.ts). */
export function createApp(args: AppArgs): Express {
  return buildApp(args).app;
}

/** createApp, and the request observer it logs and counts with (the cached front shares it). */
function buildApp(args: AppArgs): { app: Express; observe: ObserveRequest; metrics: Metrics } {
  const { openapi, options, logger = silentLogger, metrics, responseCache, chains } = args;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.locals.validateResponses = options.validateResponses;
  const logError = options.logError ?? (logger === silentLogger
    ? (err: unknown): void => { console.error(err); }
    : (err: unknown): void => { logger.error('request failed', errorFields(err)); });
  const draining = options.draining ?? ((): boolean => false);
  const chainOf = chainResolver(args);
  const ops = metrics ?? (chains
    ? createMetrics(() => undefined, responseCache, () => chains.list().map((c) => ({ id: c.id, current: () => c.holder.current() })))
    : createMetrics(() => (args.snapshots as SnapshotSource).current(), responseCache));
  const observe = requestObserver(logger, ops, options.slowRequestMs, chains ? (req) => chainOf(req)?.id ?? '' : undefined);
  app.use(varyOnEncoding, observeRequests(observe, draining), urlLengthLimit(options.maxUrlLength));
  const base = options.baseUrl;
  app.use(normalizeRequestUrl, headAsGet, cors(options.corsOrigin));
  if (base !== '') app.use(notUnderBase(base));
  // the validator's document has no `servers`: it matches the paths the prefix was cut from
  const apiSpec = validatorDocument(openapi, options.validateResponses);
  if (chains) {
    // a replica of several chains: its root answers the chain list and the replica's health
    app.use(rootRouter(chains, ops, options, chainOf));
  }
  // what is per chain — its readiness, the prefix Swagger UI and the explorer carry — is built once per chain
  app.use(perChain(chainOf, (chain) => Router().use(
    opsRouter({ ...readinessInputs(chain.holder, options), metrics: ops }),
    // the served document names the prefix (Swagger UI's "Try it out" calls go there) and only
    // the groups the chain's snapshot answers (no /evm- paths on Move and Wasm)
    swaggerRouter({
      variant: () => apiGroupsOf(chain.holder.current()?.meta),
      json: (groups) => JSON.stringify(servedDocument(openapi, groups as ApiGroups, chain.base)),
    }, chain.base),
    ...(options.explorer ? [explorerRouter(chain.base)] : []),
  )));
  app.use(takeSnapshot(chainOf), evmUnavailable());
  app.use(httpCaching(options.cacheMaxAge, responseCache, responseCache && ((req) => {
    const id = chainOf(req)?.id;
    return id === undefined ? undefined : responseCache.part(id);
  })));
  // $refs inlined: same constraints, much less start-up work (src/serve/openapi.ts)
  app.use(rollyticsQuery(arrayQueryParameters(apiSpec)), decodablePath(Object.keys((apiSpec as { paths?: object }).paths ?? {})));
  // Every request is validated (no memo: a validated URL must still be checked for its method).
  // The validator's route matcher cache and lazy meta-schema come from patches/ (patch-package).
  // One validator for every chain: the chain's prefix is cut before the app routes.
  app.use(OpenApiValidator.middleware({
    apiSpec: apiSpec as never,
    validateRequests: { coerceTypes: true, allowUnknownQueryParameters: true },
    validateResponses: options.validateResponses,
    validateApiSpec: false,
    useRequestUrl: true,
  }) as RequestHandler[]);
  app.use(statusRouter(options.grownStatus), blockRouter(), txRouter(), evmRouter(), nftRouter(), richListRouter());
  app.use((req, res) => { uncacheable(res); sendError(res, 404, GRPC.NOT_FOUND, `not found: ${req.method} ${shown(req.path)}`); });
  const onError: ErrorRequestHandler = (err, _req, res, next) => { if (!res.headersSent) uncacheable(res); next(err); };
  app.use(onError, errorMiddleware(logError, (err, res) => {
    ops.storageError(err.code);
    const s = res.locals.snapshot;
    if (s) chainOf(res.req)?.holder.reportFault?.(s, err);
  }));
  return { app, observe, metrics: ops };
}

/**
 * The request's chain's own handler, made on its first request (a WeakMap: a chain removed from
 * the replica takes its handler with it).
 */
function perChain(chainOf: (req: IncomingMessage) => ChainRoute | undefined, make: (chain: ChainRoute) => RequestHandler): RequestHandler {
  const made = new WeakMap<ChainRoute, RequestHandler>();
  return (req, res, next) => {
    // The API's own paths are none of these routers' (ops, Swagger UI, the explorer): not matched
    // against them. Leaving an Express 4 router that matched nothing costs a setImmediate (a turn
    // of the event loop) per router — latency, and a client that half-closes after its request
    // would see Node end the socket before the answer (test/faults/methods.test.ts).
    if (isApiPath(req.url)) { next(); return; }
    const chain = chainOf(req);
    if (chain === undefined) { next(); return; }
    let h = made.get(chain);
    if (h === undefined) made.set(chain, h = make(chain));
    h(req, res, next);
  };
}

/** `/status` and `/indexer/…`: the API's routes, answered after the validator (no ops, Swagger or explorer path). */
function isApiPath(url: string): boolean {
  return url.startsWith('/indexer/') || url === '/status' || url.startsWith('/status?');
}

/** One chain in the root's list: `ready` as its own /ready, and why not. */
interface ChainEntry { chain_id: string; vm_type: string | null; height: number | null; path: string; ready: boolean; not_ready?: string }

function chainEntries(chains: ChainDirectory, options: AppOptions): ChainEntry[] {
  return chains.list().map((c) => {
    const s = c.holder.current();
    const r = readiness(readinessInputs(c.holder, options));
    const why = r.ready ? undefined : (JSON.parse(r.body) as { message?: string }).message;
    return { chain_id: c.id, vm_type: s?.meta.vmType ?? null, height: s?.meta.height ?? null, path: `${c.base}/`, ready: r.ready, ...(why === undefined ? {} : { not_ready: why }) };
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
        res.type('text/html; charset=utf-8').send(chainPickerHtml(list, refused, base, listUrl(req, base)));
        return;
      }
      res.type('application/json').send(JSON.stringify({ chains: list, ...(refused.length === 0 ? {} : { files_not_served: refused }) }));
    })
    .get('/health', (_req, res) => { noStore(res).type('application/json').send('{"status":"ok"}'); })
    .get('/ready', (_req, res) => {
      const r = rootReadiness(chains, options, draining());
      noStore(res).type('application/json').status(r.ready ? 200 : 503).send(r.body);
    })
    .get('/metrics', (_req, res, next) => {
      metrics.registry.metrics().then((text) => { noStore(res).type(metrics.registry.contentType).send(text); }, next);
    })
    .all(['/', '/health', '/ready', '/metrics'], methodNotAllowed)
    .use((req, res) => {
      uncacheable(res);
      const ids = chains.list().map((c) => c.id);
      sendError(res, 404, GRPC.NOT_FOUND, `not found: ${req.method} ${shown(req.path)}: this replica serves each chain under ${base}/{chain_id}/`
        + (ids.length === 0 ? ' and serves no chain now' : ` (${ids.slice(0, 20).join(', ')}${ids.length > 20 ? `, … ${ids.length} chains` : ''}); ${base}/ lists them`));
    });
  return (req, res, next) => {
    if (chainOf(req) !== undefined) { next(); return; }
    router(req, res, next);
  };
}

/** The root /ready of a replica of several chains: ready while any chain is; each chain's own answer. */
export function rootReadiness(chains: ChainDirectory, options: AppOptions, draining: boolean): { ready: boolean; body: string } {
  const breakdown: Record<string, unknown> = {};
  let any = false;
  for (const c of chains.list()) {
    const r = readiness(readinessInputs(c.holder, options));
    any ||= r.ready;
    breakdown[c.id] = JSON.parse(r.body) as unknown;
  }
  const refused = chains.refused();
  const extra = refused.length === 0 ? {} : { files_not_served: refused };
  if (draining) return { ready: false, body: JSON.stringify({ ...JSON.parse(errorJson(GRPC.UNAVAILABLE, 'shutting down')) as object, chains: breakdown, ...extra }) };
  if (!any) {
    const why = Object.keys(breakdown).length === 0 ? 'no chain is served' : 'no chain is ready';
    return { ready: false, body: JSON.stringify({ ...JSON.parse(errorJson(GRPC.UNAVAILABLE, why)) as object, chains: breakdown, ...extra }) };
  }
  return { ready: true, body: JSON.stringify({ status: 'ready', chains: breakdown, ...extra }) };
}

const htmlEscape = (t: string): string => t.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The chain list's URL as this request reached it (scheme and Host as sent), for the picker's
 * curl line: a Host that is not a plain host[:port] is not echoed into a shell command.
 */
function listUrl(req: IncomingMessage & { protocol?: string }, base: string): string {
  const host = req.headers.host;
  const safe = host !== undefined && /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/.test(host) ? host : 'localhost';
  return `${req.protocol === 'https' ? 'https' : 'http'}://${safe}${base}/`;
}

/** The explorer's chain picker: each chain's explorer, its VM and height, whether it is ready; the files not served and why; the explorer's top bar and column. */
function chainPickerHtml(list: ChainEntry[], refused: { file: string; error: string }[], base: string, url: string): string {
  const rows = list.map((c) => `<li><a href="${htmlEscape(c.path)}">${htmlEscape(c.chain_id)}</a> <span class="muted">${htmlEscape(c.vm_type ?? 'not loaded')}${c.height === null ? '' : ` · height ${c.height}`}</span>`
    + `${c.ready ? '' : ` <strong class="not-ready">not ready: ${htmlEscape(c.not_ready ?? '')}</strong>`}</li>`).join('\n');
  const notServed = refused.length === 0 ? '' : `<h2>Files not served</h2>
<ul class="not-served">
${refused.map((r) => `<li><code>${htmlEscape(r.file)}</code>: ${htmlEscape(r.error)}</li>`).join('\n')}
</ul>
`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>indexer-api · chains</title><link rel="stylesheet" href="${base}/${list.length > 0 ? list[0].chain_id + '/' : ''}explorer/explorer.css"></head>
<body><header class="top"><span class="brand">indexer-api <span>chains</span></span></header>
<main><h1>Chains</h1>
<p>${list.length === 0 ? 'This replica serves no chain yet.' : `This replica serves ${list.length} chain${list.length === 1 ? '' : 's'}; each has its explorer, its API and Swagger UI under its own path.`}</p>
<ul class="chains">
${rows}
</ul>
${notServed}<p class="muted">As JSON: <code>curl -H 'Accept: application/json' '${htmlEscape(url)}'</code></p>
</main></body></html>`;
}

/**
 * What the HTTP server runs: the Express app of createApp, behind the response cache
 * (src/http/front.ts) when `responseCache` is given — answers from memory (a held body, or a
 * validator's 304) are given without entering Express, misses computed by the app and kept.
 * `wrap` (admission, src/http/admission.ts) goes around the app: after the base URL and the
 * chain's prefix are cut (it sees the URL the app routes and the request's chain, chainIdOf) and
 * after the cache, so an answer from memory — which runs no query — never waits for a turn
 * (docs/reliability.md#overload).
 */
export function createRequestListener(args: AppArgs, wrap: (inner: RequestListener) => RequestListener = (l) => l): RequestListener {
  const { app, observe, metrics } = buildApp(args);
  const { responseCache, options, chains, logger = silentLogger } = args;
  const { maxUrlLength } = options;
  const chainOf = chainResolver(args);
  // what runs a query waits its turn (admission); what the cache answers from memory does not
  const admitted = wrap(app);
  // each chain's source for the front, made once (a hit allocates nothing for it)
  const sources = new WeakMap<ChainRoute, FrontSource>();
  const front: RequestListener = !responseCache ? admitted : cachedFront(admitted, {
    cache: responseCache,
    sourceOf: (req) => {
      const chain = chainOf(req);
      if (chain === undefined) return undefined;
      let source = sources.get(chain);
      if (source === undefined) {
        sources.set(chain, source = { snapshots: chain.holder, part: responseCache.part(chain.id), ...(chains ? { chain: chain.id } : {}) });
      }
      return source;
    },
    cors: corsHeaders(options.corsOrigin), maxUrlLength,
    draining: options.draining ?? ((): boolean => false), observe,
    logsRequests: logger.enabled('info'), metrics, slowRequestMs: options.slowRequestMs ?? Infinity,
  });
  const base = options.baseUrl;
  // outside the base URL: the app answers (a 404), through `wrap` like everything else
  const inner: RequestListener = (req, res) => (outsideBase.has(req) ? admitted : front)(req, res);
  if (chains !== undefined) return cutChain(base, chains, inner, maxUrlLength);
  return base === '' ? inner : cutBase(base, inner, maxUrlLength);
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
function cutBase(base: string, inner: RequestListener, maxUrlLength: number): RequestListener {
  return (req, res) => {
    const raw = req.url as string;
    const rest = urlTooLong(raw, maxUrlLength) ? undefined : underBase(raw, base);
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
function cutChain(base: string, chains: ChainDirectory, inner: RequestListener, maxUrlLength: number): RequestListener {
  return (req, res) => {
    const raw = req.url as string;
    (req as IncomingMessage & { originalUrl?: string }).originalUrl = raw;
    let rest = urlTooLong(raw, maxUrlLength) ? undefined : base === '' ? underBase(raw, '') ?? raw : underBase(raw, base);
    if (rest === undefined) { outsideBase.add(req); inner(req, res); return; }
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
