import { NotFoundError, shown } from '../../http/errors';
import { emptyPage } from '../../snapshot/pagination';
import { address, isSigner, msgTypes, page, PAGE_QUERY, pathInt, pathParam, txHash } from '../../http/params';
import type { ApiRoute } from '../../http/route';
import { sendJson, sendPage } from '../../http/send';
import { accountTag, heightTag, TIP } from '../../snapshot/tags';
import { addressHex, snapshotOf } from '../context';
import { TxFilter } from '../../snapshot/queries/tx';
import { txResponse } from '../../wire/tx';

const filter = (q: { resolveMsgTypes(names: string[]): TxFilter['msgTypes'] }, names: string[] | undefined): TxFilter => ({
  msgTypes: names && q.resolveMsgTypes(names),
});

/** rollytics api/handler/tx (cosmos txs) */
export const txRoutes: readonly ApiRoute[] = [
  {
    path: '/indexer/tx/v1/txs',
    query: ['msgs', ...PAGE_QUERY],
    reads: [TIP],
    handler: (req, res) => {
      const q = snapshotOf(res).q.tx;
      sendPage(res, 'txs', q.list(filter(q, msgTypes(req)), page(req)));
    },
  },
  {
    path: '/indexer/tx/v1/txs/by_account/:account',
    query: ['is_signer', 'msgs', ...PAGE_QUERY],
    reads: (p, s) => [accountTag(addressHex(p.path.account, s))],
    handler: (req, res) => {
      const s = snapshotOf(res);
      const account = s.q.tx.account(address('account', pathParam(req, 'account'), s.meta.prefix));
      const f = filter(s.q.tx, msgTypes(req));
      const p = page(req);
      sendPage(res, 'txs', account ? s.q.tx.byAccount(account, isSigner(req), f, p) : emptyPage(p));
    },
  },
  {
    path: '/indexer/tx/v1/txs/by_height/:height',
    query: ['msgs', ...PAGE_QUERY],
    reads: (p) => [heightTag(Number(p.path.height))],
    handler: (req, res) => {
      const q = snapshotOf(res).q.tx;
      sendPage(res, 'txs', q.byHeight(pathInt(req, 'height'), filter(q, msgTypes(req)), page(req)));
    },
  },
  {
    path: '/indexer/tx/v1/txs/:tx_hash',
    query: [],
    reads: [],
    immutable: true,
    handler: (req, res) => {
      const hash = pathParam(req, 'tx_hash');
      const json = snapshotOf(res).q.tx.byHash(txHash(hash));
      if (json === undefined) throw new NotFoundError(`transaction not found: ${shown(hash)}`);
      sendJson(res, txResponse(json));
    },
  },
];
