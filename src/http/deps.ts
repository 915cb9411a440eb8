import type { Request } from 'express';
import { canonicalAddress } from '../lib/address';
import {
  accountTag, ANY_TX, collectionTag, COLLECTIONS, denomTag, heightTag, INTERNAL_TXS, ownerTag, TIP,
} from '../snapshot/changes';
import type { Snapshot } from '../snapshot/open';

/**
 * What each route's answer reads, as change-record tags (src/snapshot/changes.ts; the table in
 * docs/response-cache.md): a cached answer is dropped when a write names one of them. Keyed by
 * the route pattern as the routers declare it. A route missing here is cached with unknown
 * deps: dropped by every write (never stale, only less cached).
 *
 * `immutable`: a 200 of the route can never change — a tx, EVM tx or block, once present, is
 * never rewritten (an answer about one not yet present is a 404, never cached) — so it is sent
 * with a long `Cache-Control: immutable` (caching.ts IMMUTABLE_CACHE_CONTROL, set by send.ts sendJson).
 */
interface RouteDeps {
  deps(p: Params, s: Snapshot): string[];
  immutable?: true;
}

type Params = { path: Record<string, string>; query: Request['query'] };

const tip = (): string[] => [TIP];
const height = (p: Params): string[] => [heightTag(Number(p.path.height))];
const none = (): string[] => [];
/** the canonical bytes of an address parameter, as the writer names accounts and collections */
const hex = (value: unknown, s: Snapshot): string => canonicalAddress(String(value), s.meta.prefix).toString('hex');

export const ROUTE_DEPS: Record<string, RouteDeps> = {
  '/status': { deps: tip },
  '/indexer/block/v1/avg_blocktime': { deps: tip },
  '/indexer/block/v1/blocks': { deps: tip },
  '/indexer/block/v1/blocks/:height': { deps: height, immutable: true },
  '/indexer/tx/v1/txs': { deps: tip },
  '/indexer/tx/v1/txs/by_account/:account': { deps: (p, s) => [accountTag(hex(p.path.account, s))] },
  '/indexer/tx/v1/txs/by_height/:height': { deps: height },
  '/indexer/tx/v1/txs/:tx_hash': { deps: none, immutable: true },
  '/indexer/tx/v1/evm-txs': { deps: tip },
  '/indexer/tx/v1/evm-txs/by_account/:account': { deps: (p, s) => [accountTag(hex(p.path.account, s))] },
  '/indexer/tx/v1/evm-txs/by_height/:height': { deps: height },
  '/indexer/tx/v1/evm-txs/:tx_hash': { deps: none, immutable: true },
  // internal txs trail the blocks (internal_tx_height): any of them may still grow
  '/indexer/tx/v1/evm-internal-txs': { deps: () => [TIP, INTERNAL_TXS] },
  '/indexer/tx/v1/evm-internal-txs/by_height/:height': { deps: () => [INTERNAL_TXS] },
  '/indexer/tx/v1/evm-internal-txs/by_account/:account': { deps: () => [INTERNAL_TXS] },
  '/indexer/tx/v1/evm-internal-txs/:tx_hash': { deps: () => [INTERNAL_TXS] },
  '/indexer/nft/v1/collections': { deps: () => [COLLECTIONS] },
  // the collections' JSON carries their nft_count, which any mint or burn of theirs moves
  '/indexer/nft/v1/collections/by_account/:account': { deps: (p, s) => [ownerTag(hex(p.path.account, s)), COLLECTIONS] },
  '/indexer/nft/v1/collections/by_name/:name': { deps: () => [COLLECTIONS] },
  '/indexer/nft/v1/collections/:collection_addr': { deps: (p, s) => [collectionTag(hex(p.path.collection_addr, s))] },
  '/indexer/nft/v1/tokens/by_account/:account': {
    deps: (p, s) => {
      const tags = [ownerTag(hex(p.path.account, s))];
      // filtered by collection, its counts are read too
      const c = p.query.collection_addr;
      if (typeof c === 'string' && c !== '') tags.push(collectionTag(hex(c, s)));
      return tags;
    },
  },
  '/indexer/nft/v1/tokens/by_collection/:collection_addr': { deps: (p, s) => [collectionTag(hex(p.path.collection_addr, s))] },
  // a Move token's txs fall back to its object account's txs: any new tx may add one
  '/indexer/nft/v1/txs/:collection_addr/:token_id': { deps: (p, s) => [collectionTag(hex(p.path.collection_addr, s)), ANY_TX] },
  '/indexer/richlist/v1/:denom': {
    deps: (p, s) => {
      const stored = s.q.richlist.storedDenom(String(p.path.denom));
      return [denomTag(stored ?? String(p.path.denom))];
    },
  },
};

function routeOf(req: Request): RouteDeps | undefined {
  const path = (req.route as { path?: unknown } | undefined)?.path;
  return typeof path === 'string' ? ROUTE_DEPS[path] : undefined;
}

/** The tags the answer to `req` read on `s`; undefined when unknown (any write drops it). */
export function answerDeps(req: Request, s: Snapshot): string[] | undefined {
  const r = routeOf(req);
  if (r === undefined) return undefined;
  try {
    return r.deps({ path: req.params, query: req.query }, s);
  } catch {
    return undefined;
  }
}

/** Whether a 200 of the route `req` matched can never change (module comment). */
export function immutableRoute(req: Request): boolean {
  return routeOf(req)?.immutable === true;
}
