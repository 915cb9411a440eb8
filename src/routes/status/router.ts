import { Router } from 'express';
import { sendJson } from '../../http/send';
import { snapshotOf } from '../context';

export function statusRouter(): Router {
  return Router().get('/status', (_req, res) => sendJson(res, snapshotOf(res).status));
}
