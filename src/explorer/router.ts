import { RequestHandler, Router } from 'express';
import { readTextAsset } from '../assets';
import { staticFile } from '../http/static';

/**
 * The built-in explorer (docs/explorer.md): one HTML shell, one script and one stylesheet,
 * shipped with the program (SEA assets in the single executable). The script renders every page
 * in the browser from the public API of this same server; the server only hands out the shell
 * for the explorer's own paths, so no API route changes behaviour. Each file is served
 * precompressed with its own ETag per encoding (src/http/static.ts).
 */

const DIR = 'src/explorer/assets';

/** Paths the shell answers (each its own route, so /metrics labels stay bounded). */
export const EXPLORER_PAGES = [
  '/',
  '/search',
  '/blocks/:height',
  '/txs/:hash',
  '/evm-txs/:hash',
  '/accounts/:address',
  '/nft-collections/:address',
  // a token id arrives percent-encoded as one segment; a raw `/` in it still lands here
  '/nft-collections/:address/*',
  '/richlist/:denom',
];

const FILES: Record<string, string> = {
  'explorer.js': 'application/javascript; charset=utf-8',
  'explorer.css': 'text/css; charset=utf-8',
};

/**
 * The shell under serve --base-url `base` (parseBaseUrl's form; '' leaves it as shipped): its
 * root-relative links carry the prefix, and its `indexer-api-base` meta tag tells explorer.js
 * where the API and the explorer's own pages are.
 */
function shellUnder(html: string, base: string): string {
  if (base === '') return html;
  return html
    .replace(/(\s(?:href|src)=")\//g, `$1${base}/`)
    .replace('<meta name="indexer-api-base" content="">', `<meta name="indexer-api-base" content="${base}">`);
}

const read = (file: string) => (): string => readTextAsset(`${DIR}/${file}`);

/** The script and stylesheet: one handler (one precompressed copy) per process, whatever the base. */
const assets = new Map<string, RequestHandler>();
function sharedAsset(file: string, type: string): RequestHandler {
  let h = assets.get(file);
  if (h === undefined) assets.set(file, (h = staticFile(read(file), type, 'no-cache')));
  return h;
}

/** The explorer under `base`: its shell (carrying the base) and its shared assets. */
export function explorerRouter(base = ''): Router {
  const router = Router();
  // one handler (one precompressed copy) for every path of the shell
  const shell = staticFile(() => shellUnder(read('index.html')(), base), 'text/html; charset=utf-8', 'no-cache');
  for (const page of EXPLORER_PAGES) router.get(page, shell);
  for (const [file, type] of Object.entries(FILES)) router.get(`/explorer/${file}`, sharedAsset(file, type));
  return router;
}
