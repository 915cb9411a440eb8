import { NotFoundError, shown } from '../../http/errors';
import { emptyPage } from '../../snapshot/pagination';
import { address, page, PAGE_QUERY, pathParam, query, tokenIdCandidates, tokenOrder } from '../../http/params';
import type { ApiRoute } from '../../http/route';
import { sendJson, sendPage } from '../../http/send';
import { normalizeName } from '../../lib/normalize';
import { ANY_TX, collectionTag, COLLECTIONS, ownerTag } from '../../snapshot/tags';
import { addressHex, snapshotOf } from '../context';
import { collectionResponse } from '../../wire/nft';

/** rollytics api/handler/nft */
export const nftRoutes: readonly ApiRoute[] = [
  {
    path: '/indexer/nft/v1/collections',
    query: PAGE_QUERY,
    reads: [COLLECTIONS],
    handler: (req, res) => sendPage(res, 'collections', snapshotOf(res).q.nft.collections(page(req))),
  },
  {
    // the collections' JSON carries their nft_count, which any mint or burn of theirs moves
    path: '/indexer/nft/v1/collections/by_account/:account',
    query: PAGE_QUERY,
    reads: (p, s) => [ownerTag(addressHex(p.path.account, s)), COLLECTIONS],
    handler: (req, res) => {
      const s = snapshotOf(res);
      const account = s.q.tx.account(address('account', pathParam(req, 'account'), s.meta.prefix));
      const p = page(req);
      sendPage(res, 'collections', account ? s.q.nft.collectionsByAccount(account, p) : emptyPage(p));
    },
  },
  {
    path: '/indexer/nft/v1/collections/by_name/:name',
    query: PAGE_QUERY,
    reads: [COLLECTIONS],
    handler: (req, res) => sendPage(res, 'collections', snapshotOf(res).q.nft.collectionsByName(normalizeName(pathParam(req, 'name')), page(req))),
  },
  {
    path: '/indexer/nft/v1/collections/:collection_addr',
    query: [],
    reads: (p, s) => [collectionTag(addressHex(p.path.collection_addr, s))],
    handler: (req, res) => {
      const s = snapshotOf(res);
      const raw = pathParam(req, 'collection_addr');
      const json = s.q.nft.collection(address('collection_addr', raw, s.meta.prefix));
      if (json === undefined) throw new NotFoundError(`nft collection not found: ${shown(raw)}`);
      sendJson(res, collectionResponse(json));
    },
  },
  {
    path: '/indexer/nft/v1/tokens/by_account/:account',
    query: ['collection_addr', 'token_id', 'order_by', ...PAGE_QUERY],
    reads: (p, s) => {
      const tags = [ownerTag(addressHex(p.path.account, s))];
      // filtered by collection, its counts are read too
      const c = p.query.collection_addr;
      if (typeof c === 'string' && c !== '') tags.push(collectionTag(addressHex(c, s)));
      return tags;
    },
    handler: (req, res) => {
      const s = snapshotOf(res);
      const account = s.q.tx.account(address('account', pathParam(req, 'account'), s.meta.prefix));
      const collection = query<string>(req, 'collection_addr');
      const filter = {
        collectionAddr: collection ? address('collection_addr', collection, s.meta.prefix) : undefined,
        tokenIds: tokenIdCandidates(req),
      };
      const p = page(req);
      sendPage(res, 'tokens', account ? s.q.nft.tokensByAccount(account, filter, tokenOrder(req), p) : emptyPage(p));
    },
  },
  {
    path: '/indexer/nft/v1/tokens/by_collection/:collection_addr',
    query: ['token_id', 'order_by', ...PAGE_QUERY],
    reads: (p, s) => [collectionTag(addressHex(p.path.collection_addr, s))],
    handler: (req, res) => {
      const s = snapshotOf(res);
      const collection = address('collection_addr', pathParam(req, 'collection_addr'), s.meta.prefix);
      sendPage(res, 'tokens', s.q.nft.tokensByCollection(collection, { tokenIds: tokenIdCandidates(req) }, tokenOrder(req), page(req)));
    },
  },
  {
    // a Move token's txs fall back to its object account's txs: any new tx may add one
    path: '/indexer/nft/v1/txs/:collection_addr/:token_id',
    query: PAGE_QUERY,
    reads: (p, s) => [collectionTag(addressHex(p.path.collection_addr, s)), ANY_TX],
    handler: (req, res) => {
      const s = snapshotOf(res);
      const collection = address('collection_addr', pathParam(req, 'collection_addr'), s.meta.prefix);
      sendPage(
        res,
        'txs',
        s.q.nft.nftTxs(collection, pathParam(req, 'token_id'), page(req), (account, p) => s.q.tx.byAccount(account, false, {}, p)),
      );
    },
  },
];
