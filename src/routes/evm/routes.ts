import type { RequestHandler, Response } from 'express';
import { GRPC, NotFoundError, sendError, shown } from '../../http/errors';
import { address, isSigner, page, PAGE_QUERY, pathInt, pathParam, txHash } from '../../http/params';
import type { ApiRoute } from '../../http/route';
import { sendJson, sendPage } from '../../http/send';
import { accountTag, heightTag, INTERNAL_TXS, TIP } from '../../snapshot/tags';
import { addressHex, snapshotOf } from '../context';
import { evmTxResponse } from '../../wire/evm';

// case-insensitive, as the router (and rollytics' fiber router)
const EVM_PATH = /^\/indexer\/tx\/v1\/(evm-txs|evm-internal-txs)(\/|$)/i;

/**
 * The EVM groups exist only on EVM snapshots, and evm-internal-txs only where the source indexes
 * internal txs (rollytics' internal-tx extension; meta evm_internal_txs, src/snapshot/schema.ts).
 * Elsewhere the whole sub-tree answers 404 for any method and any parameters (rollytics: "evm
 * routes are not available on this chain"), before the request validator could turn a bad
 * parameter into a 400.
 */
export function evmUnavailable(): RequestHandler {
  return (req, res, next) => {
    const m = EVM_PATH.exec(req.path);
    const s = m === null ? undefined : snapshotOf(res);
    if (s === undefined || (s.q.evm && (s.meta.evmInternalTxs || m?.[1].toLowerCase() !== 'evm-internal-txs'))) {
      next();
      return;
    }
    res.setHeader('Cache-Control', 'no-store');
    sendError(res, 404, GRPC.NOT_FOUND, `not found: ${req.method} ${shown(req.path)} (evm routes are not available on this chain)`);
  };
}

/** rollytics api/handler/tx evm + internaltx handlers (docs/api-contract.md#evm-tx, docs/api-contract.md#evm-internal-tx) */
const evm = (res: Response) => {
  const s = snapshotOf(res);
  return { q: s.q.evm as NonNullable<typeof s.q.evm>, prefix: s.meta.prefix };
};

export const evmRoutes: readonly ApiRoute[] = [
  {
    path: '/indexer/tx/v1/evm-txs',
    query: PAGE_QUERY,
    reads: [TIP],
    handler: (req, res) => sendPage(res, 'txs', evm(res).q.txs(page(req))),
  },
  {
    path: '/indexer/tx/v1/evm-txs/by_account/:account',
    query: ['is_signer', ...PAGE_QUERY],
    reads: (p, s) => [accountTag(addressHex(p.path.account, s))],
    handler: (req, res) => {
      const { q, prefix } = evm(res);
      const account = q.account(address('account', pathParam(req, 'account'), prefix));
      sendPage(res, 'txs', q.txsByAccount(account, isSigner(req), page(req)));
    },
  },
  {
    path: '/indexer/tx/v1/evm-txs/by_height/:height',
    query: PAGE_QUERY,
    reads: (p) => [heightTag(Number(p.path.height))],
    handler: (req, res) => {
      const height = pathInt(req, 'height');
      sendPage(res, 'txs', evm(res).q.txsByHeight(height, page(req)));
    },
  },
  {
    path: '/indexer/tx/v1/evm-txs/:tx_hash',
    query: [],
    reads: [],
    immutable: true,
    handler: (req, res) => {
      const hash = pathParam(req, 'tx_hash');
      const json = evm(res).q.txByHash(txHash(hash));
      if (json === undefined) throw new NotFoundError(`tx not found: ${shown(hash)}`);
      sendJson(res, evmTxResponse(json));
    },
  },
  // internal txs trail the blocks (internal_tx_height): any of them may still grow
  {
    path: '/indexer/tx/v1/evm-internal-txs',
    query: PAGE_QUERY,
    reads: [TIP, INTERNAL_TXS],
    handler: (req, res) => sendPage(res, 'internal_txs', evm(res).q.internalTxs(page(req))),
  },
  {
    path: '/indexer/tx/v1/evm-internal-txs/by_height/:height',
    query: PAGE_QUERY,
    reads: [INTERNAL_TXS],
    handler: (req, res) => {
      const height = pathInt(req, 'height');
      sendPage(res, 'internal_txs', evm(res).q.internalByHeight(height, page(req)));
    },
  },
  {
    path: '/indexer/tx/v1/evm-internal-txs/by_account/:account',
    query: PAGE_QUERY,
    reads: [INTERNAL_TXS],
    handler: (req, res) => {
      const { q, prefix } = evm(res);
      const account = q.account(address('account', pathParam(req, 'account'), prefix));
      sendPage(res, 'internal_txs', q.internalByAccount(account, page(req)));
    },
  },
  {
    path: '/indexer/tx/v1/evm-internal-txs/:tx_hash',
    query: PAGE_QUERY,
    reads: [INTERNAL_TXS],
    handler: (req, res) => {
      // rollytics checks pagination before the hash here (docs/api-contract.md#evm-internal-tx)
      const p = page(req);
      const hash = pathParam(req, 'tx_hash');
      const found = evm(res).q.internalByHash(txHash(hash), p);
      if (!found) throw new NotFoundError(`transaction not found: ${shown(hash)}`);
      sendPage(res, 'internal_txs', found);
    },
  },
];
