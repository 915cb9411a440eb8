import type { Response } from 'express';
import { listResponse, Page } from './pagination';

/**
 * Sends a pre-rendered JSON body. With response validation on (tests), the body goes through
 * res.json so express-openapi-validator checks it against openapi.yaml.
 */
export function sendJson(res: Response, body: string): void {
  if (res.app.locals.validateResponses) {
    res.json(JSON.parse(body));
    return;
  }
  res.type('application/json').send(body);
}

export function sendPage(res: Response, itemsKey: string, page: Page): void {
  sendJson(res, listResponse(itemsKey, page));
}
