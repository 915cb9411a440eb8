import { Router } from 'express';
import { NotFoundError, shown } from '../../http/errors';
import { emptyPage } from '../../snapshot/pagination';
import { address, page, pathParam, query, tokenIdCandidates, tokenOrder } from '../../http/params';
import { sendJson, sendPage } from '../../http/send';
import { normalizeName } from '../../lib/normalize';
import { snapshotOf } from '../context';
import { collectionResponse } from '../../wire/nft';

/** rollytics api/handler/nft */
export function nftRouter(): Router {
  return Router()
    .get('/indexer/nft/v1/collections', (req, res) => sendPage(res, 'collections', snapshotOf(res).q.nft.collections(page(req))))
    .get('/indexer/nft/v1/collections/by_account/:account', (req, res) => {
      const s = snapshotOf(res);
      const account = s.q.tx.account(address('account', pathParam(req, 'account'), s.meta.prefix));
      const p = page(req);
      sendPage(res, 'collections', account ? s.q.nft.collectionsByAccount(account, p) : emptyPage(p));
    })
    .get('/indexer/nft/v1/collections/by_name/:name', (req, res) =>
      sendPage(res, 'collections', snapshotOf(res).q.nft.collectionsByName(normalizeName(pathParam(req, 'name')), page(req))))
    .get('/indexer/nft/v1/collections/:collection_addr', (req, res) => {
      const s = snapshotOf(res);
      const raw = pathParam(req, 'collection_addr');
      const json = s.q.nft.collection(address('collection_addr', raw, s.meta.prefix));
      if (json === undefined) throw new NotFoundError(`nft collection not found: ${shown(raw)}`);
      sendJson(res, collectionResponse(json));
    })
    .get('/indexer/nft/v1/tokens/by_account/:account', (req, res) => {
      const s = snapshotOf(res);
      const account = s.q.tx.account(address('account', pathParam(req, 'account'), s.meta.prefix));
      const collection = query<string>(req, 'collection_addr');
      const filter = {
        collectionAddr: collection ? address('collection_addr', collection, s.meta.prefix) : undefined,
        tokenIds: tokenIdCandidates(req),
      };
      const p = page(req);
      sendPage(res, 'tokens', account ? s.q.nft.tokensByAccount(account, filter, tokenOrder(req), p) : emptyPage(p));
    })
    .get('/indexer/nft/v1/tokens/by_collection/:collection_addr', (req, res) => {
      const s = snapshotOf(res);
      const collection = address('collection_addr', pathParam(req, 'collection_addr'), s.meta.prefix);
      sendPage(res, 'tokens', s.q.nft.tokensByCollection(collection, { tokenIds: tokenIdCandidates(req) }, tokenOrder(req), page(req)));
    })
    .get('/indexer/nft/v1/txs/:collection_addr/:token_id', (req, res) => {
      const s = snapshotOf(res);
      const collection = address('collection_addr', pathParam(req, 'collection_addr'), s.meta.prefix);
      sendPage(res, 'txs', s.q.nft.nftTxs(collection, pathParam(req, 'token_id'), page(req),
        (account, p) => s.q.tx.byAccount(account, false, {}, p)));
    });
}
