import type { Response } from 'express';
import { requestIsFresh } from './caching';
import { listResponse, Page } from '../snapshot/pagination';

export const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Sends a pre-rendered JSON body (a Buffer of UTF-8, or a string). What Express's res.send does
 * for it, without the parts that cost and do nothing here (content-type parsing and charset
 * rewriting, string → Buffer when it is one already, ETag generation is off anyway): the
 * Content-Type and Content-Length headers, a 304 when the request is fresh (requestIsFresh, against
 * the ETag set by src/http/caching.ts), no body to a HEAD. With response validation on (tests),
 * the body goes through res.json so express-openapi-validator checks it against openapi.yaml
 * (app.locals.validateResponses, typed in src/http/context.ts).
 */
export function sendJson(res: Response, body: Buffer | string): void {
  if (res.app.locals.validateResponses === true) {
    res.json(JSON.parse(body.toString()));
    return;
  }
  const etag = res.getHeader('ETag');
  if (typeof etag === 'string' && requestIsFresh(res.req, etag)) {
    res.statusCode = 304;
    res.end();
    return;
  }
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  res.setHeader('Content-Type', JSON_TYPE);
  res.setHeader('Content-Length', bytes.length);
  res.end(bytes);
}

export function sendPage(res: Response, itemsKey: string, page: Page): void {
  sendJson(res, listResponse(itemsKey, page));
}
