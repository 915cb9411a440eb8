import type { Response } from 'express';
import { DeflateBody, JsonBody } from '../wire/packed';
import { requestIsFresh } from './caching';
import { gzipEtag, requestAcceptsGzip } from './encoding';
import { listResponse, Page } from '../snapshot/pagination';

export const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Sends a JSON answer: its bytes or text, or a DeflateBody of packed rows (src/wire/packed.ts).
 * A DeflateBody goes as gzip to a client that accepts it (assembled from the stored bytes: no
 * compression at request time), inflated once otherwise; the gzip one has its own ETag
 * (caching.ts sets the identity one; encoding.ts gzipEtag). Every answer says
 * `Vary: Accept-Encoding` (encoding.ts varyOnEncoding). What
 * Express's res.send does, without the parts that cost and do nothing here (content-type parsing,
 * charset rewriting, ETag generation is off anyway): Content-Type and Content-Length, a 304 when
 * the request is fresh (requestIsFresh, against the representation's ETag), no body to a HEAD.
 * With response validation on (tests), the body goes through res.json so express-openapi-validator
 * checks it against openapi.yaml (app.locals.validateResponses, typed in src/http/context.ts).
 */
export function sendJson(res: Response, body: JsonBody): void {
  let gzip = false;
  if (body instanceof DeflateBody) gzip = requestAcceptsGzip(res.req) && res.app.locals.validateResponses !== true;
  if (res.app.locals.validateResponses === true) {
    res.json(JSON.parse(body instanceof DeflateBody ? body.identity().toString() : body.toString()));
    return;
  }
  let etag = res.getHeader('ETag');
  if (gzip && typeof etag === 'string') res.setHeader('ETag', etag = gzipEtag(etag));
  if (typeof etag === 'string' && requestIsFresh(res.req, etag)) {
    res.statusCode = 304;
    res.end();
    return;
  }
  let bytes: Buffer;
  if (body instanceof DeflateBody) {
    bytes = gzip ? body.gzip() : body.identity();
    if (gzip) res.setHeader('Content-Encoding', 'gzip');
  } else {
    bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  }
  res.setHeader('Content-Type', JSON_TYPE);
  res.setHeader('Content-Length', bytes.length);
  res.end(bytes);
}

export function sendPage(res: Response, itemsKey: string, page: Page): void {
  sendJson(res, listResponse(itemsKey, page));
}
