/**
 * Content coding of JSON answers (docs/response-cache.md#compression): gzip to every client whose
 * Accept-Encoding accepts it, identity otherwise (RFC 9110, section 12.5.3). A gzip answer is assembled
 * from stored compressed rows (src/wire/packed.ts), so it costs less CPU than identity; brotli
 * is only for bytes compressed once (the static assets, src/http/static.ts).
 */
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';

const Q_ZERO = /^q=0(?:\.0{0,3})?$/;

/** acceptsGzip of a request's Accept-Encoding, once per request (the front, sendJson and the cache store ask). */
const accepted = new WeakMap<IncomingMessage, boolean>();

export function requestAcceptsGzip(req: IncomingMessage): boolean {
  let v = accepted.get(req);
  if (v === undefined) {
    v = acceptsGzip(req.headers['accept-encoding']);
    accepted.set(req, v);
  }
  return v;
}

/** acceptsGzip of the Accept-Encoding values seen lately: a handful per client population */
const recentAccepts = new Map<string, boolean>();
const RECENT_ACCEPTS = 256;

/** acceptsGzip(header), remembered per header value (the front asks for every request). */
export function acceptsGzipCached(header: string | undefined): boolean {
  if (header === undefined) return false;
  let v = recentAccepts.get(header);
  if (v === undefined) {
    v = acceptsGzip(header);
    if (recentAccepts.size >= RECENT_ACCEPTS) recentAccepts.clear();
    recentAccepts.set(header, v);
  }
  return v;
}

/**
 * Whether `header` (Accept-Encoding) accepts gzip: a `gzip`, `x-gzip` or `*` member whose q is
 * not 0. An explicit `gzip;q=0` wins over `*`.
 */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  if (header === undefined) return false;
  const h = (Array.isArray(header) ? header.join(',') : header).toLowerCase(); // codings are case-insensitive
  // fast path: what browsers, axios, ky and Go send
  if (h.indexOf('gzip') < 0 && h.indexOf('*') < 0) return false;
  let star: boolean | undefined;
  for (const member of h.split(',')) {
    const parts = member.split(';');
    const coding = parts[0].trim();
    if (coding !== 'gzip' && coding !== 'x-gzip' && coding !== '*') continue;
    const refused = parts.slice(1).some((p) => Q_ZERO.test(p.replace(/\s+/g, '')));
    if (coding === '*') star = !refused;
    else return !refused;
  }
  return star === true;
}

/** The ETag of the gzip representation of an answer whose identity ETag is `etag` (RFC 9110, section 8.8.3: one per representation). */
export function gzipEtag(etag: string): string {
  return etag.slice(0, -1) + '-gz"';
}

/**
 * First in the app: every answer varies on Accept-Encoding (a JSON answer of packed rows is gzip
 * or identity; saying it on the others too keeps one header order, the response cache's in
 * src/cache/front.ts included). CORS adds Origin to it (cors.ts).
 */
export const varyOnEncoding: RequestHandler = (_req, res, next) => {
  res.setHeader('Vary', 'Accept-Encoding');
  next();
};

/**
 * The headers the response cache answers with before a cached header block: `Vary` (as
 * varyOnEncoding and cors.ts leave it in the Express path, in its place), then the CORS headers.
 */
export function withVary(cors: string[]): string[] {
  let vary = 'Accept-Encoding';
  const rest: string[] = [];
  for (let i = 0; i < cors.length; i += 2) {
    if (cors[i] === 'Vary') vary = addVary(vary, cors[i + 1]);
    else rest.push(cors[i], cors[i + 1]);
  }
  return ['Vary', vary, ...rest];
}

/** `Vary` with `token` added (once) to what the answer already varies on (e.g. CORS's Origin). */
export function addVary(current: string | number | string[] | undefined, token: string): string {
  if (current === undefined || current === '') return token;
  const list = Array.isArray(current) ? current.join(', ') : String(current);
  return list
    .toLowerCase()
    .split(/\s*,\s*/)
    .includes(token.toLowerCase())
    ? list
    : `${list}, ${token}`;
}
