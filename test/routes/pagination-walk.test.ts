/**
 * Walks every list route the way clients page (API-CONTRACT §3): follow next_key with the same
 * limit, reverse and filters until it is null, and page by pagination.offset alone. The rows must
 * come exactly once each, in the documented order (compared with an ordering computed from the
 * dump), with the exact total on every page, null next_key on the last page, no key on an empty
 * page and no key twice.
 */
import { expect } from 'chai';
import { bech32Of, hexOf } from '../helpers/address';
import { makeTestApp, TestApp, VMS } from '../helpers/app';
import { normalizeName, Vm } from '../helpers/dump';
import {
  busiestHeight, collectionsAsc, collectionsOfOwner, hasMsg, holdersAsc, longestHistory, msgTypesByUse, nftTxs,
  ownersByTokenCount, reversed, signersByTxCount, sortTokens, txsOf,
} from './model';
import { getList, qs, QueryValue, walkKeys, walkOffsets } from './pages';

interface ListSpec {
  name: string;
  path: string;
  itemsKey: string;
  filters?: Record<string, QueryValue>;
  /** every row the list holds, ascending (pagination.reverse=false) */
  ascending: unknown[];
}

const LIMITS = [1, 7, 100, 1000];
/**
 * Walks longer than this many pages start near the end (page 1 by pagination.offset, then keys
 * only), so limit 1 over 3000 txs stays cheap while still ending on a real last page.
 */
const MAX_PAGES = 20;
// Pages of 100 and 1000 rows go through an app without response validation: checking 1000 Txs
// against openapi.yaml costs ~0.5 s a page, and every shape is validated by the route tests.

function specs(t: TestApp): ListSpec[] {
  const d = t.dump;
  const b32 = (hex: string): string => bech32Of(Buffer.from(hex, 'hex'), d.prefix);
  const types = msgTypesByUse(d).slice(2, 4).map(([m]) => m);
  const [signer] = signersByTxCount(d)[0];
  const height = busiestHeight(d);
  const [collector] = [...ownersByTokenCount(d)].sort((a, b) => collectionsOfOwner(d, b[0]).length - collectionsOfOwner(d, a[0]).length)[0];
  const [owner] = ownersByTokenCount(d)[0];
  const ownerTokens = d.tokens.filter((k) => k.owner.toString('hex') === owner);
  const ownerCollection = collectionsOfOwner(d, owner)[0].addr;
  const ownerInCollection = ownerTokens.filter((k) => k.collection.equals(ownerCollection));
  const biggest = [...d.collections].sort((a, b) => b.obj.collection.nfts.length - a.obj.collection.nfts.length)[0].addr;
  const inBiggest = d.tokens.filter((k) => k.collection.equals(biggest));
  const token = longestHistory(d);
  const nameQuery = 'E';
  const byName = collectionsAsc(d).filter((c) => normalizeName(c.name).includes('e') || normalizeName(c.originName).includes('e'));
  const list: ListSpec[] = [
    { name: 'blocks', path: '/indexer/block/v1/blocks', itemsKey: 'blocks', ascending: d.blocks.map((b) => b.obj) },
    { name: 'txs', path: '/indexer/tx/v1/txs', itemsKey: 'txs', ascending: txsOf(d).map((x) => x.obj) },
    {
      name: 'txs?msgs', path: '/indexer/tx/v1/txs', itemsKey: 'txs',
      filters: { msgs: [types[0], `/${types[1]}`] }, ascending: txsOf(d, hasMsg(types)).map((x) => x.obj),
    },
    {
      name: 'txs/by_account (busiest signer)', path: `/indexer/tx/v1/txs/by_account/${b32(signer)}`, itemsKey: 'txs',
      ascending: txsOf(d, (x) => x.accounts.has(signer)).map((x) => x.obj),
    },
    {
      name: 'txs/by_height (busiest block)', path: `/indexer/tx/v1/txs/by_height/${height}`, itemsKey: 'txs',
      ascending: txsOf(d, (x) => x.height === height).map((x) => x.obj),
    },
    { name: 'collections', path: '/indexer/nft/v1/collections', itemsKey: 'collections', ascending: collectionsAsc(d).map((c) => c.obj) },
    {
      name: 'collections/by_account', path: `/indexer/nft/v1/collections/by_account/${b32(collector)}`, itemsKey: 'collections',
      ascending: collectionsOfOwner(d, collector).map((c) => c.obj),
    },
    { name: `collections/by_name/${nameQuery}`, path: `/indexer/nft/v1/collections/by_name/${nameQuery}`, itemsKey: 'collections', ascending: byName.map((c) => c.obj) },
    ...(['token_id', 'height'] as const).flatMap((order) => [
      {
        name: `tokens/by_account order_by=${order}`, path: `/indexer/nft/v1/tokens/by_account/${b32(owner)}`, itemsKey: 'tokens',
        filters: { order_by: order }, ascending: sortTokens(ownerTokens, order).map((k) => k.obj),
      },
      {
        name: `tokens/by_account collection_addr order_by=${order}`, path: `/indexer/nft/v1/tokens/by_account/0x${owner}`, itemsKey: 'tokens',
        filters: { order_by: order, collection_addr: hexOf(ownerCollection) }, ascending: sortTokens(ownerInCollection, order).map((k) => k.obj),
      },
      {
        name: `tokens/by_collection order_by=${order}`, path: `/indexer/nft/v1/tokens/by_collection/${hexOf(biggest)}`, itemsKey: 'tokens',
        filters: { order_by: order }, ascending: sortTokens(inBiggest, order).map((k) => k.obj),
      },
    ]),
    {
      name: 'nft txs', path: `/indexer/nft/v1/txs/${hexOf(token.collection)}/${encodeURIComponent(token.tokenId)}`, itemsKey: 'txs',
      ascending: nftTxs(d, token).map((x) => x.obj),
    },
  ];
  if (d.vm === 'evm') {
    const denom = [...new Set(d.holders.map((h) => h.denom))][0];
    list.push({ name: 'richlist', path: `/indexer/richlist/v1/${denom}`, itemsKey: 'holders', ascending: holdersAsc(d, denom).map((h) => h.obj) });
  }
  return list;
}

/** A few names per VM: the specs are computed when the suite runs (they need the imported chain). */
const NAMES = ['blocks', 'txs', 'txs?msgs', 'txs/by_account', 'txs/by_height', 'collections', 'collections/by_account',
  'collections/by_name', 'tokens/by_account', 'tokens/by_collection', 'nft txs', 'richlist'];

function specsNamed(t: TestApp, prefix: string): ListSpec[] {
  return specs(t).filter((s) => s.name === prefix || s.name.startsWith(`${prefix} `) || s.name.startsWith(`${prefix}?`) || s.name.startsWith(`${prefix}/`));
}

describe('pagination: following next_key and paging by offset', () => {
  for (const vm of VMS as Vm[]) {
    describe(`on the ${vm} demo chain`, () => {
      for (const prefix of NAMES) {
        if (prefix === 'richlist' && vm !== 'evm') continue;
        it(`walks ${prefix} by next_key in both orders with limits ${LIMITS.join(', ')}: every row once, in order, then null`, async () => {
          const t = await makeTestApp(vm);
          const unchecked = await makeTestApp(vm, { validateResponses: false });
          const found = specsNamed(t, prefix);
          expect(found.length, prefix).to.be.greaterThan(0);
          for (const spec of found) {
            expect(spec.ascending.length, `${spec.name} has rows`).to.be.greaterThan(0);
            for (const reverse of [true, false]) {
              const all = reverse ? reversed(spec.ascending) : spec.ascending;
              for (const limit of LIMITS) {
                const pages = Math.ceil(all.length / limit);
                const startOffset = pages > MAX_PAGES ? all.length - MAX_PAGES * limit : undefined;
                const items = await walkKeys(limit >= 100 ? unchecked : t, {
                  path: spec.path, itemsKey: spec.itemsKey, filters: spec.filters, limit, reverse, total: all.length, startOffset,
                });
                expect(items, `${spec.name} reverse=${reverse} limit=${limit}`).to.deep.equal(all.slice(startOffset ?? 0));
              }
            }
          }
        });

        it(`answers ${prefix} with total "0" and the same rows when pagination.count_total=false`, async () => {
          const t = await makeTestApp(vm);
          for (const spec of specsNamed(t, prefix)) {
            const url = spec.path + qs({ ...spec.filters, 'pagination.limit': 3, 'pagination.count_total': false });
            const body = await getList(t, url, spec.itemsKey);
            expect(body[spec.itemsKey], url).to.deep.equal(reversed(spec.ascending).slice(0, 3));
            expect(body.pagination.total, url).to.equal('0');
            expect(body.pagination.next_key === null, url).to.equal(spec.ascending.length <= 3);
          }
        });

        it(`pages ${prefix} by pagination.offset alone in both orders`, async () => {
          const t = await makeTestApp(vm);
          const unchecked = await makeTestApp(vm, { validateResponses: false });
          const found = specsNamed(t, prefix);
          expect(found.length, prefix).to.be.greaterThan(0);
          for (const spec of found) {
            for (const reverse of [true, false]) {
              const all = reverse ? reversed(spec.ascending) : spec.ascending;
              const limit = [7, 100, 1000].find((l) => Math.ceil(all.length / l) <= MAX_PAGES) as number;
              const items = await walkOffsets(limit >= 100 ? unchecked : t, { path: spec.path, itemsKey: spec.itemsKey, filters: spec.filters, limit, reverse, total: all.length });
              expect(items, `${spec.name} reverse=${reverse} limit=${limit}`).to.deep.equal(all);
            }
          }
        });
      }
    });
  }
});
