import { Router } from 'express';
import { readTextAsset } from '../assets';

/**
 * The built-in explorer (docs/explorer.md): one HTML shell, one script and one stylesheet,
 * shipped with the program (SEA assets in the single executable). The script renders every page
 * in the browser from the public API of this same server; the server only hands out the shell
 * for the explorer's own paths, so no API route changes behaviour.
 */

const DIR = 'src/explorer/assets';
export const EXPLORER_ASSETS = ['index.html', 'explorer.js', 'explorer.css'].map((f) => `${DIR}/${f}`);

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

export function explorerRouter(): Router {
  const router = Router();
  const text = new Map<string, string>();
  const read = (file: string): string => {
    let body = text.get(file);
    if (body === undefined) { body = readTextAsset(`${DIR}/${file}`); text.set(file, body); }
    return body;
  };
  for (const page of EXPLORER_PAGES) {
    router.get(page, (_req, res) => {
      res.type('text/html; charset=utf-8').set('Cache-Control', 'no-cache').send(read('index.html'));
    });
  }
  for (const [file, type] of Object.entries(FILES)) {
    router.get(`/explorer/${file}`, (_req, res) => {
      res.type(type).set('Cache-Control', 'no-cache').send(read(file));
    });
  }
  return router;
}
