/**
 * What the base-URL and many-chains tests ask of a served chain (issue #31): one path of every
 * route family with data, and the URL building of the real clients (Celatone, interwovenkit:
 * docs/scaling.md) from an indexer base URL.
 */
import { expect } from 'chai';
import { openDatabase } from '../../src/sqlite';
import { pickAccounts } from '../helpers/fixture-accounts';
import { DEMO, get } from '../helpers/serve';

export const json = async (url: string): Promise<Record<string, unknown>> => {
  const r = await get(url);
  expect(r.status, `${url}: ${r.body}`).to.equal(200);
  return JSON.parse(r.body) as Record<string, unknown>;
};
export const first = <T>(body: Record<string, unknown>, key: string): T => {
  const list = body[key] as T[];
  expect(list, key).to.be.an('array');
  expect(list.length, key).to.be.greaterThan(0);
  return list[0];
};

/** One path of every route of openapi.yaml that has data in this demo, found through the root server. */
export async function routePaths(root: string, vm: 'move' | 'evm'): Promise<string[]> {
  const [account] = pickAccounts(DEMO(vm));
  const height = first<{ height: string }>(await json(`${root}/indexer/block/v1/blocks?pagination.limit=1`), 'blocks').height;
  const tx = first<{ txhash: string }>(await json(`${root}/indexer/tx/v1/txs?pagination.limit=1`), 'txs');
  const col = first<{ object_addr: string; collection: { name: string } }>(await json(`${root}/indexer/nft/v1/collections?pagination.limit=1`), 'collections');
  const token = first<{ nft: { token_id: string } }>(await json(`${root}/indexer/nft/v1/tokens/by_collection/${col.object_addr}?pagination.limit=1`), 'tokens');
  const paths = [
    '/status', '/indexer/block/v1/avg_blocktime', '/indexer/block/v1/blocks?pagination.limit=3', `/indexer/block/v1/blocks/${height}`,
    '/indexer/tx/v1/txs?pagination.limit=2&pagination.reverse=false', `/indexer/tx/v1/txs/by_account/${account}`,
    `/indexer/tx/v1/txs/by_height/${height}`, `/indexer/tx/v1/txs/${tx.txhash}`,
    '/indexer/nft/v1/collections', `/indexer/nft/v1/collections/by_account/${account}`,
    `/indexer/nft/v1/collections/by_name/${encodeURIComponent(col.collection.name)}`, `/indexer/nft/v1/collections/${col.object_addr}`,
    `/indexer/nft/v1/tokens/by_account/${account}`, `/indexer/nft/v1/tokens/by_collection/${col.object_addr}`,
    `/indexer/nft/v1/txs/${col.object_addr}/${encodeURIComponent(token.nft.token_id)}`,
  ];
  if (vm === 'evm') {
    const db = openDatabase(DEMO(vm), { readonly: true, fileMustExist: true });
    const denom = db.prepare('SELECT denom FROM richlist_denoms ORDER BY holder_count DESC LIMIT 1').pluck().get() as string;
    db.close();
    const etx = first<{ transactionHash: string; blockNumber: string }>(await json(`${root}/indexer/tx/v1/evm-txs?pagination.limit=1`), 'txs');
    const itx = first<{ hash: string; height: string }>(await json(`${root}/indexer/tx/v1/evm-internal-txs?pagination.limit=1`), 'internal_txs');
    paths.push(
      `/indexer/richlist/v1/${encodeURIComponent(denom)}?pagination.limit=5`,
      '/indexer/tx/v1/evm-txs?pagination.limit=2', `/indexer/tx/v1/evm-txs/by_account/${account}`,
      `/indexer/tx/v1/evm-txs/by_height/${BigInt(etx.blockNumber).toString()}`, `/indexer/tx/v1/evm-txs/${etx.transactionHash}`,
      '/indexer/tx/v1/evm-internal-txs?pagination.limit=2', `/indexer/tx/v1/evm-internal-txs/by_height/${itx.height}`,
      `/indexer/tx/v1/evm-internal-txs/by_account/${account}`, `/indexer/tx/v1/evm-internal-txs/${itx.hash}`,
    );
  }
  return paths;
}


/** Celatone (client-explorer.md §1): `${indexer}/indexer/...`, no trim; params as axios sends them. */
export const celatone = (indexer: string, path: string, params: Record<string, string | number | boolean | undefined>): string => {
  const q = Object.entries(params).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`).join('&');
  return `${indexer}${path}${q ? `?${q}` : ''}`;
};
/** interwovenkit (client-wallet.md §1.0): ky prefixUrl + a path without a leading slash, searchParams as URLSearchParams. */
export const wallet = (indexerUrl: string, path: string, params: Record<string, string | number | boolean | undefined>): string => {
  const prefix = indexerUrl.endsWith('/') ? indexerUrl : `${indexerUrl}/`;
  const sp = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) sp.set(k, String(v));
  const q = sp.toString();
  return `${prefix}${path}${q ? `?${q}` : ''}`;
};

/** The first pages of a list (up to 6), by next_key, as the client builds each page's URL. */
export async function pages(url: (key: string | undefined) => string, items: string, byKey: boolean): Promise<string[]> {
  const out: string[] = [];
  let key: string | undefined;
  for (let n = 0; n < 6; n++) {
    const r = await get(url(key));
    expect(r.status, `${url(key)}: ${r.body}`).to.equal(200);
    out.push(r.body);
    const body = JSON.parse(r.body) as Record<string, unknown> & { pagination: { next_key: string | null } };
    expect(body[items]).to.be.an(items === 'collection' ? 'object' : 'array');
    if (!byKey) return out;
    key = body.pagination.next_key ?? undefined;
    if (!key) break;
  }
  return out;
}


/**
 * The real clients' paging of the EVM demo from `rootUrl` and from each of `bases` (the same chain
 * under a prefix): every page the client builds, by next_key, must be the same bytes as at the
 * root. Returns how many calls paged past their first page.
 */
export async function pagesAsAtRoot(rootUrl: string, bases: string[]): Promise<number> {
  const [account] = pickAccounts(DEMO('evm'));
  const db = openDatabase(DEMO('evm'), { readonly: true, fileMustExist: true });
  const denom = db.prepare('SELECT denom FROM richlist_denoms ORDER BY holder_count DESC LIMIT 1').pluck().get() as string;
  db.close();
  const col = first<{ object_addr: string }>(await json(`${rootUrl}/indexer/nft/v1/collections?pagination.limit=1`), 'collections').object_addr;
  const calls: { items: string; byKey?: false; build: (base: string, key: string | undefined) => string }[] = [
    // E5: by_account with encodeURI, reverse=true, a small page
    { items: 'txs', build: (b, key) => celatone(b, `/indexer/tx/v1/txs/by_account/${encodeURI(account)}`, { 'pagination.key': key, 'pagination.limit': 3, 'pagination.reverse': true }) },
    // E8: tokens by collection, path not encoded, ascending
    { items: 'tokens', build: (b, key) => celatone(b, `/indexer/nft/v1/tokens/by_collection/${col}`, { 'pagination.key': key, 'pagination.limit': 2, 'pagination.reverse': false }) },
    // E16: rich list, denom with encodeURIComponent (evm%2F… on the evm demo's native denom), offset paging read by total
    { items: 'holders', byKey: false, build: (b) => celatone(b, `/indexer/richlist/v1/${encodeURIComponent(denom)}`, { 'pagination.limit': 10, 'pagination.offset': 10, 'pagination.reverse': true }) },
    // E17: evm-txs, count_total=false, key omitted when empty
    { items: 'txs', build: (b, key) => celatone(b, '/indexer/tx/v1/evm-txs', { 'pagination.count_total': false, 'pagination.key': key || undefined, 'pagination.limit': 5 }) },
    // wallet activity: by_account, reverse=true, limit=10, next_key pages
    { items: 'txs', build: (b, key) => wallet(b, `indexer/tx/v1/txs/by_account/${account}`, { 'pagination.reverse': true, 'pagination.limit': 10, 'pagination.key': key }) },
    // wallet NFTs: tokens by account, no params at all, then next_key
    { items: 'tokens', build: (b, key) => wallet(b, `indexer/nft/v1/tokens/by_account/${account}`, { 'pagination.key': key }) },
    { items: 'collection', byKey: false, build: (b) => wallet(b, `indexer/nft/v1/collections/${col}`, {}) },
  ];
  let paged = 0;
  for (const [i, c] of calls.entries()) {
    const atRoot = await pages((key) => c.build(rootUrl, key), c.items, c.byKey ?? true);
    if (atRoot.length > 1) paged++;
    for (const base of bases) {
      expect(await pages((key) => c.build(base, key), c.items, c.byKey ?? true), `call ${i} from ${base}`).to.deep.equal(atRoot);
    }
  }
  return paged;
}
