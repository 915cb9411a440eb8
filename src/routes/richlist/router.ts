import { Router } from 'express';
import { invalidValue } from '../../http/errors';
import { page, pathParam } from '../../http/params';
import { sendPage } from '../../http/send';
import { snapshotOf } from '../context';

/** rollytics api/handler/richlist */
export function richListRouter(): Router {
  return Router().get('/indexer/richlist/v1/:denom', (req, res) => {
    const q = snapshotOf(res).q.richlist;
    const denom = pathParam(req, 'denom');
    const stored = q.storedDenom(denom);
    if (stored === undefined) throw invalidValue('denom', denom, 'no ERC-20 contract is known for this denom');
    sendPage(res, 'holders', q.holders(stored, page(req)));
  });
}
