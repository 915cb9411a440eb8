import type { Response } from 'express';
import { DeflateBody, identityOfGzip, JsonBody } from '../wire/packed';
import { etagOf, etagSeed, IMMUTABLE_CACHE_CONTROL, requestIsFresh } from './etag';
import { gzipEtag, requestAcceptsGzip } from './encoding';
import { listResponse, Page } from '../snapshot/pagination';
import { versionEtag, versionedTags } from './version-etag';

export const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Sends a JSON answer: its bytes or text, or a DeflateBody of packed rows (src/wire/packed.ts).
 * A DeflateBody goes as gzip to a client that accepts it (assembled from the stored bytes: no
 * compression at request time), inflated once otherwise; the gzip one has its own ETag
 * (a hash of the bytes: src/http/etag.ts etagOf; encoding.ts gzipEtag). Every answer says
 * `Vary: Accept-Encoding` (encoding.ts varyOnEncoding). What
 * Express's res.send does, without the parts that cost and do nothing here (content-type parsing,
 * charset rewriting, ETag generation is off anyway): Content-Type and Content-Length, a 304 when
 * the request is fresh (requestIsFresh, against the representation's ETag), no body to a HEAD.
 * With response validation on (tests), the body goes through res.json so express-openapi-validator
 * checks it against openapi.yaml (app.locals.validateResponses, typed in src/http/context.ts).
 */
export function sendJson(res: Response, body: JsonBody): void {
  const snapshot = res.locals.snapshot;
  const validate = res.app.locals.validateResponses === true;
  const gzip = body instanceof DeflateBody && requestAcceptsGzip(res.req) && !validate;
  // the stream the ETag hashes: the gzip one for packed rows (both representations share it)
  const packed = body instanceof DeflateBody ? body.gzip() : undefined;
  let bytes = packed ?? (typeof body === 'string' ? Buffer.from(body, 'utf8') : (body as Buffer));
  if (res.req.method === 'GET' || res.req.method === 'HEAD') {
    if (snapshot !== undefined) {
      // an answer that reads tags: the ETag of their versions (decidable without the answer); else of its bytes —
      // also when the file was written since the state began outside a read transaction (the rows read may be
      // newer than the versions: Snapshot.versionsHold, asked after both were read)
      const req = res.req;
      const tags = versionedTags(res.locals.route, { path: req.params, query: req.query }, snapshot);
      if (tags !== undefined && snapshot.versionsHold()) res.setHeader('ETag', versionEtag(snapshot, req.url, tags, requestAcceptsGzip(req)));
      else {
        const etag = etagOf(etagSeed(snapshot), bytes);
        res.setHeader('ETag', gzip ? gzipEtag(etag) : etag);
      }
    }
    if (res.locals.route?.immutable === true) res.setHeader('Cache-Control', IMMUTABLE_CACHE_CONTROL);
  }
  if (validate) {
    res.json(JSON.parse((packed ? identityOfGzip(packed) : bytes).toString()));
    return;
  }
  const etag = res.getHeader('ETag');
  if (typeof etag === 'string' && requestIsFresh(res.req, etag)) {
    const store = res.locals.storeAnswer;
    if (store !== undefined) {
      // the response cache keeps the 200 this 304 stands for, with the headers it would have had
      const full = packed !== undefined && !gzip ? identityOfGzip(packed) : bytes;
      setBodyHeaders(res, full.length, gzip);
      store(full);
      for (const h of ['Content-Encoding', 'Content-Type', 'Content-Length']) res.removeHeader(h);
    }
    res.statusCode = 304;
    res.end();
    return;
  }
  if (packed !== undefined && !gzip) bytes = identityOfGzip(packed);
  setBodyHeaders(res, bytes.length, gzip);
  res.end(bytes);
}

function setBodyHeaders(res: Response, length: number, gzip: boolean): void {
  if (gzip) res.setHeader('Content-Encoding', 'gzip');
  res.setHeader('Content-Type', JSON_TYPE);
  res.setHeader('Content-Length', length);
}

export function sendPage(res: Response, itemsKey: string, page: Page): void {
  sendJson(res, listResponse(itemsKey, page));
}
