import { Router } from 'express';
import { NotFoundError, shown } from '../../http/errors';
import { emptyPage } from '../../snapshot/pagination';
import { address, isSigner, msgTypes, page, pathInt, pathParam, txHash } from '../../http/params';
import { sendJson, sendPage } from '../../http/send';
import { snapshotOf } from '../context';
import { TxFilter } from '../../snapshot/queries/tx';
import { txResponse } from '../../wire/tx';

/** rollytics api/handler/tx (cosmos txs) */
export function txRouter(): Router {
  const filter = (q: { resolveMsgTypes(names: string[]): TxFilter['msgTypes'] }, names: string[] | undefined): TxFilter =>
    ({ msgTypes: names && q.resolveMsgTypes(names) });
  return Router()
    .get('/indexer/tx/v1/txs', (req, res) => {
      const q = snapshotOf(res).q.tx;
      sendPage(res, 'txs', q.list(filter(q, msgTypes(req)), page(req)));
    })
    .get('/indexer/tx/v1/txs/by_account/:account', (req, res) => {
      const s = snapshotOf(res);
      const account = s.q.tx.account(address('account', pathParam(req, 'account'), s.meta.prefix));
      const f = filter(s.q.tx, msgTypes(req));
      const p = page(req);
      sendPage(res, 'txs', account ? s.q.tx.byAccount(account, isSigner(req), f, p) : emptyPage(p));
    })
    .get('/indexer/tx/v1/txs/by_height/:height', (req, res) => {
      const q = snapshotOf(res).q.tx;
      sendPage(res, 'txs', q.byHeight(pathInt(req, 'height'), filter(q, msgTypes(req)), page(req)));
    })
    .get('/indexer/tx/v1/txs/:tx_hash', (req, res) => {
      const hash = pathParam(req, 'tx_hash');
      const json = snapshotOf(res).q.tx.byHash(txHash(hash));
      if (json === undefined) throw new NotFoundError(`transaction not found: ${shown(hash)}`);
      sendJson(res, txResponse(json));
    });
}
