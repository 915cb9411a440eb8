import type { RequestHandler } from 'express';

/**
 * CORS for browser clients (interwovenkit, Celatone). `*` (the default) allows any origin
 * without credentials; otherwise a comma-separated list of exact origins or `*.domain` suffix
 * patterns, echoed back (as rollytics' api/api.go does); empty disables CORS.
 *
 * OPTIONS: with CORS on, a preflight (OPTIONS with Access-Control-Request-Method) is answered
 * 204 here, on any path; any other OPTIONS request — and every OPTIONS with CORS off — goes on to
 * routing and gets the 405 JSON error of a method the route does not answer.
 */

/** The CORS headers of an answer to a request from `origin`, as a flat [name, value, …] list. */
export type CorsHeaders = (origin: string | undefined) => string[];

const NONE: string[] = [];
const ANY = ['Access-Control-Allow-Origin', '*'];

const NO_CORS: CorsHeaders = () => NONE;

export function corsHeaders(allowed: string): CorsHeaders {
  const patterns = allowed.split(',').map((s) => s.trim()).filter(Boolean);
  if (!patterns.length) return NO_CORS;
  const any = patterns.includes('*');
  const matches = (origin: string): boolean => patterns.some((p) => p === origin
    || (p.startsWith('*.') && (() => {
      try { return new URL(origin).hostname.endsWith(p.slice(1)); } catch { return false; }
    })()));
  return (origin) => {
    if (origin === undefined) return NONE;
    if (any) return ANY;
    return matches(origin) ? ['Access-Control-Allow-Origin', origin, 'Vary', 'Origin'] : NONE;
  };
}

export function cors(allowed: string): RequestHandler {
  const headersFor = corsHeaders(allowed);
  // CORS off: no preflight either; an OPTIONS request gets the 405 of any method a route lacks
  if (headersFor === NO_CORS) return (_req, _res, next) => { next(); };
  return (req, res, next) => {
    const h = headersFor(req.headers.origin);
    for (let i = 0; i < h.length; i += 2) res.setHeader(h[i], h[i + 1]);
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
