import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import type { Request, RequestHandler, Response } from 'express';
import { requestIsFresh } from './etag';

/**
 * Fixed files (the Swagger UI and explorer assets, the OpenAPI document) served precompressed
 * (docs/architecture.md#static-assets): each is compressed once per process, on the libuv thread
 * pool, the first time it is asked for — never per request. A request gets brotli or gzip when
 * its Accept-Encoding allows and that encoding was worth keeping, identity otherwise, with
 * `Vary: Accept-Encoding` on every answer. Each representation has its own strong ETag (RFC 9110
 * section 8.8.3: a gzip body is not the identity body): `"<sha1 of the identity bytes>[-gz|-br]"`. A
 * matching If-None-Match gets a 304 with that ETag; HEAD gets the GET's headers and no body.
 */

export type Encoding = 'br' | 'gzip' | 'identity';

/** One encoding of an asset's bytes. */
export interface Representation {
  encoding: Encoding;
  body: Buffer;
  etag: string;
}

/**
 * An encoding is kept only if it saves at least this fraction over the smaller one already kept
 * (identity, then gzip): a few percent does not pay for a second copy and a decoder's work.
 */
const MIN_SAVING = 0.05;
/**
 * gzip level 9: the Swagger UI bundle (1.7 MB) takes ≈0.3 s once. brotli quality 9, not 11:
 * 11 is ≈8 % smaller on that bundle but takes ≈20 s of CPU per worker, 9 takes ≈1.4 s
 * (bench/README.md, precompressed assets).
 */
const GZIP_LEVEL = 9;
const BROTLI_QUALITY = 9;

const gzipAsync = promisify(gzip);
const brotliAsync = promisify(brotliCompress);

/** The representations of `identity` worth serving, identity first, then gzip, then brotli. */
export async function precompress(identity: Buffer): Promise<Representation[]> {
  const tag = createHash('sha1').update(identity).digest('base64url').slice(0, 27);
  const out: Representation[] = [{ encoding: 'identity', body: identity, etag: `"${tag}"` }];
  const [gz, br] = await Promise.all([
    gzipAsync(identity, { level: GZIP_LEVEL }),
    brotliAsync(identity, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
        [constants.BROTLI_PARAM_SIZE_HINT]: identity.length,
      },
    }),
  ]);
  if (gz.length <= identity.length * (1 - MIN_SAVING)) out.push({ encoding: 'gzip', body: gz, etag: `"${tag}-gz"` });
  const smallest = out[out.length - 1].body.length;
  if (br.length <= smallest * (1 - MIN_SAVING)) out.push({ encoding: 'br', body: br, etag: `"${tag}-br"` });
  return out;
}

/**
 * The q-value Accept-Encoding gives `coding` (RFC 9110 section 12.5.3): its own entry, else `*`, else
 * 0 — except identity, acceptable unless refused by name or by `*;q=0`. Absent header: identity.
 */
export function acceptQ(acceptEncoding: string | undefined, coding: Encoding): number {
  if (acceptEncoding === undefined) return coding === 'identity' ? 1 : 0;
  let star: number | undefined;
  for (const part of acceptEncoding.split(',')) {
    const [name, ...params] = part.split(';');
    const token = name.trim().toLowerCase();
    if (token !== coding && token !== '*' && !(coding === 'gzip' && token === 'x-gzip')) continue;
    let q = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([0-9.]+)\s*$/i.exec(p);
      if (m) q = Number(m[1]);
    }
    if (!Number.isFinite(q)) q = 0;
    if (token === '*') star = q;
    else return q;
  }
  if (star !== undefined) return star;
  return coding === 'identity' ? 1 : 0;
}

/**
 * The representation to send: the highest q among those kept, ties to the smallest body (brotli,
 * then gzip). Identity when nothing else is acceptable — also when identity itself is refused,
 * since a 406 for a static file helps no client (RFC 9110 section 12.5.3 allows either).
 */
export function choose(reps: Representation[], acceptEncoding: string | undefined): Representation {
  let best = reps[0];
  let bestQ = acceptQ(acceptEncoding, 'identity');
  for (let i = 1; i < reps.length; i++) {
    const q = acceptQ(acceptEncoding, reps[i].encoding);
    if (q > 0 && q >= bestQ) {
      best = reps[i];
      bestQ = q;
    }
  }
  return best;
}

/** Sends one representation of a fixed file: headers, 304 when fresh, no body to HEAD. */
function send(req: Request, res: Response, rep: Representation, type: string, cacheControl: string | undefined): void {
  res.vary('Accept-Encoding');
  res.setHeader('Content-Type', type);
  if (cacheControl !== undefined) res.setHeader('Cache-Control', cacheControl);
  res.setHeader('ETag', rep.etag);
  if (rep.encoding !== 'identity') res.setHeader('Content-Encoding', rep.encoding);
  if (requestIsFresh(req, rep.etag)) {
    res.statusCode = 304;
    res.end();
    return;
  }
  res.setHeader('Content-Length', rep.body.length);
  // Express turns HEAD into GET before routing (src/serve/app.ts); Node drops a HEAD's body itself
  res.end(rep.body);
}

/**
 * A GET handler for one fixed file, read by `load` on first use (so the process reads and
 * compresses only what is asked for). A failed read or compression is retried on the next request.
 */
export function staticFile(load: () => Buffer | string, type: string, cacheControl?: string): RequestHandler {
  let ready: Promise<Representation[]> | undefined;
  return (req, res, next) => {
    if (ready === undefined) {
      const p = Promise.resolve().then(() => {
        const body = load();
        return precompress(typeof body === 'string' ? Buffer.from(body, 'utf8') : body);
      });
      ready = p;
      p.catch(() => {
        if (ready === p) ready = undefined;
      });
    }
    ready.then((reps) => {
      send(req, res, choose(reps, req.headers['accept-encoding']), type, cacheControl);
    }, next);
  };
}
