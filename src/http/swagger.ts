import { RequestHandler, Router } from 'express';
import { readBinaryAsset } from '../assets';
import { methodNotAllowed } from './ops';
import { staticFile } from './static';

const UI_DIR = 'node_modules/swagger-ui-dist';
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
};

/** The Swagger UI page; `base` is serve --base-url (parseBaseUrl's characters need no escaping). */
const page = (base: string): string => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>indexer-api</title>
<link rel="stylesheet" href="${base}/swagger/swagger-ui.css"></head>
<body><div id="ui"></div><script src="${base}/swagger/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: '${base}/swagger/doc.json', dom_id: '#ui' });</script></body></html>`;

/**
 * The UI's files, one handler each per process: every router (one per chain of a replica serving
 * several) answers them with the same precompressed copy — the bundle's brotli alone costs ≈1.4 s
 * of CPU (src/http/static.ts).
 */
const assets = new Map<string, RequestHandler>();
function sharedAsset(file: string, type: string): RequestHandler {
  let h = assets.get(file);
  if (h === undefined) assets.set(file, (h = staticFile(() => readBinaryAsset(`${UI_DIR}/${file}`), type, 'public, max-age=86400')));
  return h;
}

/**
 * The OpenAPI document a router serves: `variant()` names the one that fits the chain now (its
 * VM, what its source indexes: src/serve/openapi.ts servedDocument), `json(variant)` renders it —
 * once per variant, each precompressed apart.
 */
/** The served OpenAPI document: openapi.yaml lists it beside the API's routes (test/routes/table.test.ts). */
export const DOC_JSON_PATH = '/swagger/doc.json';

export interface SwaggerDocs {
  variant(): string;
  json(variant: string): string;
}

/**
 * /swagger/doc.json (the enforced document, without the groups the chain does not answer) and a
 * Swagger UI page at /swagger and /swagger/index.html (rollytics mounts the UI at /swagger/*), all
 * precompressed (src/http/static.ts). Under serve --base-url the routes are the same (the prefix
 * is cut before routing) and the page's links carry `base`.
 */
export function swaggerRouter(d: SwaggerDocs, base = ''): Router {
  const router = Router();
  const byVariant = new Map<string, RequestHandler>();
  router.get(DOC_JSON_PATH, (req, res, next) => {
    const v = d.variant();
    let h = byVariant.get(v);
    if (h === undefined) byVariant.set(v, (h = staticFile(() => d.json(v), 'application/json; charset=utf-8')));
    h(req, res, next);
  });
  const ui = staticFile(() => page(base), 'text/html; charset=utf-8');
  router.get(UI_PATHS, ui);
  for (const [file, type] of Object.entries(ASSETS)) router.get(`/swagger/${file}`, sharedAsset(file, type));
  router.all([...UI_PATHS, DOC_JSON_PATH, ...Object.keys(ASSETS).map((f) => `/swagger/${f}`)], methodNotAllowed);
  return router;
}

/** Where the UI page answers: ours at /swagger, rollytics' (fiber-swagger at /swagger/*) at /swagger/index.html. */
const UI_PATHS = ['/swagger', '/swagger/index.html'];
