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
  if (h === undefined) assets.set(file, h = staticFile(() => readBinaryAsset(`${UI_DIR}/${file}`), type, 'public, max-age=86400'));
  return h;
}

/**
 * /swagger/doc.json (the enforced document) and a Swagger UI page at /swagger, all precompressed
 * (src/http/static.ts). Under serve --base-url the routes are the same (the prefix is cut before
 * routing) and the page's links carry `base`.
 */
export function swaggerRouter(docJson: string, base = ''): Router {
  const router = Router();
  router.get('/swagger/doc.json', staticFile(() => docJson, 'application/json; charset=utf-8'));
  router.get('/swagger', staticFile(() => page(base), 'text/html; charset=utf-8'));
  for (const [file, type] of Object.entries(ASSETS)) router.get(`/swagger/${file}`, sharedAsset(file, type));
  router.all(['/swagger', '/swagger/doc.json', ...Object.keys(ASSETS).map((f) => `/swagger/${f}`)], methodNotAllowed);
  return router;
}
