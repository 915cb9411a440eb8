import type { RequestHandler } from 'express';
import { addVary } from './encoding';

/**
 * CORS for browser clients (interwovenkit, Celatone). `*` (the default) allows any origin
 * without credentials; otherwise a comma-separated list of exact origins or `*.domain` suffix
 * patterns, echoed back (as rollytics' api/api.go does); empty disables CORS. The response
 * cache in front of Express (src/cache/front.ts) asks corsHeaders() per request too: a cached answer is
 * stored without these headers (src/cache/fill.ts PER_REQUEST).
 *
 * OPTIONS: with CORS on, a preflight (OPTIONS with Access-Control-Request-Method) is answered
 * 204 here, on any path; any other OPTIONS request — and every OPTIONS with CORS off — goes on to
 * routing and gets the 405 JSON error of a method the route does not answer.
 */

/** The CORS headers of an answer to a request from `origin`, as a flat [name, value, …] list. */
export type CorsHeaders = (origin: string | undefined) => string[];

const NONE: string[] = [];
const ANY = ['Access-Control-Allow-Origin', '*'];
const VARY = ['Vary', 'Origin'];

const NO_CORS: CorsHeaders = () => NONE;

export function corsHeaders(allowed: string): CorsHeaders {
  const patterns = allowed
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!patterns.length) return NO_CORS;
  const any = patterns.includes('*');
  const matches = (origin: string): boolean =>
    patterns.some(
      (p) =>
        p === origin ||
        (p.startsWith('*.') &&
          (() => {
            try {
              return new URL(origin).hostname.endsWith(p.slice(1));
            } catch {
              return false;
            }
          })()),
    );
  // Every answer is `Cache-Control: public`: a shared cache must never hand one request's CORS
  // header to another. With `*` the header is the same for every request, with or without
  // Origin; with a list it depends on Origin, so every answer — a request without Origin or
  // from an origin not in the list included — says `Vary: Origin`.
  if (any) return () => ANY;
  return (origin) => (origin !== undefined && matches(origin) ? ['Access-Control-Allow-Origin', origin, 'Vary', 'Origin'] : VARY);
}

export function cors(allowed: string): RequestHandler {
  const headersFor = corsHeaders(allowed);
  // CORS off: no preflight either; an OPTIONS request gets the 405 of any method a route lacks
  if (headersFor === NO_CORS)
    return (_req, _res, next) => {
      next();
    };
  return (req, res, next) => {
    const h = headersFor(req.headers.origin);
    for (let i = 0; i < h.length; i += 2) res.setHeader(h[i], h[i] === 'Vary' ? addVary(res.getHeader('Vary'), h[i + 1]) : h[i + 1]);
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method']) {
      res.setHeader('Access-Control-Allow-Methods', 'GET, HEAD, OPTIONS');
      const ask = req.headers['access-control-request-headers'];
      if (ask) res.setHeader('Access-Control-Allow-Headers', ask);
      res.setHeader('Access-Control-Max-Age', '86400');
      res.status(204).end();
      return;
    }
    next();
  };
}
