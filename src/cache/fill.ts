import type { IncomingMessage } from 'node:http';
import type { RequestHandler, Response } from 'express';
import { snapshotOf } from '../http/context';
import { requestAcceptsGzip } from '../http/encoding';
import { answerTags } from '../http/route';
import { maxAgeCacheControl } from '../http/etag';
import type { CachePart, ResponseCache } from './store';
import type { ServeSettings } from '../settings/serve';

/** The Cache-Control of a 200 that is not immutable (`--cache-max-age`): the app's and the front's. */
export const cacheControlOf = (settings: Pick<ServeSettings, 'cacheMaxAge'>): string => maxAgeCacheControl(settings.cacheMaxAge);

/** Request headers that belong to the request, not to the cached answer (CORS, draining). */
const PER_REQUEST = new Set(['access-control-allow-origin', 'vary', 'connection']);

/**
 * After the snapshot is chosen (snapshotOf, src/http/context.ts), before validation: sets the
 * Cache-Control of the handler's 200 (sendJson, src/http/send.ts, sets its ETag from the bytes and
 * makes a matching If-None-Match a 304; immutable routes get a long Cache-Control there; the
 * error handlers of src/serve/app.ts strip both again on an error), and with a response cache,
 * keeps the answer the route sends — its validator and, when admitted, its body — with the tags
 * of what it read (its route's declared `reads`: answerTags, src/http/route.ts) in the part of the request's chain (`partOf`; the root
 * part for a replica of one chain). Admission (crawler resistance): a URL requested before
 * (second sight), or a revalidation whose ETag matched (the client holds this answer: it will
 * ask again); anything else is not kept at all.
 */
export function httpCaching(
  settings: Pick<ServeSettings, 'cacheMaxAge'>,
  cache?: ResponseCache,
  partOf: (req: IncomingMessage) => CachePart | undefined = () => cache?.part(''),
): RequestHandler {
  const cacheControl = cacheControlOf(settings);
  return (req, res, next) => {
    if (req.method !== 'GET') {
      next();
      return;
    }
    const snapshot = snapshotOf(res);
    const url = req.url;
    res.setHeader('Cache-Control', cacheControl);
    const part = cache && partOf(req);
    if (cache && part) {
      cache.misses++;
      const seen = part.admit(url);
      const store = (body: Buffer, revalidated: boolean): void => {
        if (!req.route || (!seen && !revalidated)) return;
        const route = req.baseUrl + (req.route as { path: string }).path;
        const headers: string[] = [];
        const headers304: string[] = [];
        // keyed by what the request accepts, as the front looks it up (an answer that is never
        // compressed is then stored once per kind of client)
        const gzip = requestAcceptsGzip(req);
        const finalEtag = res.getHeader('ETag');
        if (typeof finalEtag !== 'string') return;
        for (const name of (res as unknown as { getRawHeaderNames(): string[] }).getRawHeaderNames()) {
          const lower = name.toLowerCase();
          if (PER_REQUEST.has(lower)) continue;
          const value = res.getHeader(name);
          if (typeof value !== 'string' && typeof value !== 'number') return; // a list-valued header: not ours, not cached
          headers.push(name, String(value));
          if (lower !== 'content-type' && lower !== 'content-length' && lower !== 'content-encoding') headers304.push(name, String(value));
        }
        part.keep(
          snapshot,
          url,
          gzip,
          { body, etag: finalEtag, route, headers, headers304 },
          answerTags(res.locals.route, req, snapshot),
          { body: seen, validator: true },
          seen,
        );
      };
      captureBody(res, (body) => store(body, false));
      // a revalidation answered 304 keeps the validator and offers the 200 it stands for (sendJson):
      // a client that always sends If-None-Match — a wallet polling — is answered from memory from its next poll
      res.locals.storeAnswer = (body: Buffer) => store(body, true);
    }
    next();
  };
}

/** Hands the body of a 200 sent in one res.end (how every route sends) to `store`. */
function captureBody(res: Response, store: (body: Buffer) => void): void {
  const end = res.end;
  res.end = function (this: Response, ...args: unknown[]) {
    const [chunk, encoding] = args;
    if (this.statusCode === 200 && !this.headersSent && chunk !== undefined && chunk !== null && typeof chunk !== 'function') {
      store(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'));
    }
    return (end as (...a: unknown[]) => Response).apply(this, args);
  } as typeof res.end;
}
