import express, { Express, RequestHandler } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import { cors } from './http/cors';
import { errorMiddleware, GRPC, sendError, UnavailableError } from './http/errors';
import { swaggerRouter } from './http/swagger';
import { OpenApiDocument } from './openapi';
import { blockRouter } from './routes/block/router';
import { nftRouter } from './routes/nft/router';
import { richListRouter } from './routes/richlist/router';
import { statusRouter } from './routes/status/router';
import { txRouter } from './routes/tx/router';
import type { Snapshot } from './snapshot/open';

/** Where requests find the snapshot to answer from; `current()` is undefined while none is loaded. */
export interface SnapshotSource {
  current(): Snapshot | undefined;
}

export interface AppOptions {
  /** CORS origins: `*`, a comma-separated list (with `*.domain` patterns), or '' for none */
  corsOrigin: string;
  /** check every response against openapi.yaml (tests) */
  validateResponses?: boolean;
  /** where server faults are reported (never to the client) */
  logError?: (err: unknown) => void;
}

/**
 * rollytics' router is case-insensitive and non-strict; clients also send `//indexer/...`
 * (Celatone joins base URL and path without trimming). Normalize before anything routes.
 */
const normalizeUrl: RequestHandler = (req, _res, next) => {
  const q = req.url.indexOf('?');
  let path = q < 0 ? req.url : req.url.slice(0, q);
  const rest = q < 0 ? '' : req.url.slice(q);
  path = path.replace(/^\/{2,}/, '/');
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  req.url = path + rest;
  next();
};

/** HEAD is answered as GET (Node drops the body of a HEAD response by itself). */
const headAsGet: RequestHandler = (req, _res, next) => {
  if (req.method === 'HEAD') req.method = 'GET';
  next();
};

/** Builds the Express app over a snapshot source; it never listens (see src/server.ts). */
export function createApp({ snapshots, openapi, options }: {
  snapshots: SnapshotSource; openapi: OpenApiDocument; options: AppOptions;
}): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.locals.validateResponses = options.validateResponses ?? false;
  const logError = options.logError ?? ((err: unknown): void => { console.error(err); });

  app.use(normalizeUrl, headAsGet, cors(options.corsOrigin));
  app.use(swaggerRouter(JSON.stringify(openapi)));
  app.use(OpenApiValidator.middleware({
    apiSpec: openapi as never,
    validateRequests: { coerceTypes: true, allowUnknownQueryParameters: true },
    validateResponses: options.validateResponses ?? false,
    validateApiSpec: false,
    useRequestUrl: true,
  }));
  app.use((_req, res, next) => {
    const snapshot = snapshots.current();
    if (!snapshot) { next(new UnavailableError('no snapshot is loaded')); return; }
    res.locals.snapshot = snapshot;
    next();
  });
  app.use(statusRouter(), blockRouter(), txRouter(), nftRouter(), richListRouter());
  app.use((req, res) => sendError(res, 404, GRPC.NOT_FOUND, `not found: ${req.method} ${req.path}`));
  app.use(errorMiddleware(logError));
  return app;
}
