import type { RequestHandler } from 'express';

/**
 * CORS for browser clients (interwovenkit, Celatone). `*` (the default) allows any origin
 * without credentials; otherwise a comma-separated list of exact origins or `*.domain` suffix
 * patterns, echoed back (as rollytics' api/api.go does); empty disables CORS.
 */
export function cors(allowed: string): RequestHandler {
  const patterns = allowed.split(',').map((s) => s.trim()).filter(Boolean);
  const any = patterns.includes('*');
  const matches = (origin: string): boolean => patterns.some((p) => p === origin
    || (p.startsWith('*.') && (() => {
      try { return new URL(origin).hostname.endsWith(p.slice(1)); } catch { return false; }
    })()));
  return (req, res, next) => {
    const origin = req.headers.origin;
    if (patterns.length && origin !== undefined) {
      if (any) res.setHeader('Access-Control-Allow-Origin', '*');
      else if (matches(origin)) { res.setHeader('Access-Control-Allow-Origin', origin); res.vary('Origin'); }
    }
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method']) {
      res.setHeader('Access-Control-Allow-Methods', 'GET, HEAD, OPTIONS');
      const h = req.headers['access-control-request-headers'];
      if (h) res.setHeader('Access-Control-Allow-Headers', h);
      res.setHeader('Access-Control-Max-Age', '86400');
      res.status(204).end();
      return;
    }
    next();
  };
}
