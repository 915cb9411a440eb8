/**
 * Every query parameter read exactly as rollytics reads it (docs/api-contract.md#booleans,
 * rollytics api/handler/** and util/common-handler/common/pagination.go), route by route, with
 * the values real clients send: Python `requests` writes `True` / `False` for a bool, Go's
 * net/url with strconv.FormatBool writes `true` / `false`, JavaScript's URLSearchParams writes
 * `true` and a client that sends numbers writes `1`.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { bech32Of, hexOf } from '../helpers/address';
import { makeTestApp, ROOT, TestApp } from '../helpers/app';
import { loadEvmModel, byLinkCount } from './evm-model';
import { busiestHeight, longestHistory, ownersByTokenCount, signersByTxCount } from './model';

interface Param { $ref?: string; name?: string }
type Doc = { paths: Record<string, { get: { parameters?: Param[] } }> };
const doc = yaml.load(readFileSync(join(ROOT, 'openapi.yaml'), 'utf8')) as Doc;
const refsOf = (path: string): string[] => (doc.paths[path].get.parameters ?? []).map((p) => p.$ref ?? p.name ?? '');
const takes = (path: string, ref: string): boolean => refsOf(path).includes(`#/components/parameters/${ref}`);

/** Python requests, Go net/url, JavaScript: what each writes for true and false. */
const CLIENT_TRUE = { 'Python requests': 'True', 'Go net/url': 'true', 'JavaScript URLSearchParams': 'true', 'JavaScript Number(true)': '1' };
const CLIENT_FALSE = { 'Python requests': 'False', 'Go net/url': 'false', 'JavaScript URLSearchParams': 'false', 'JavaScript Number(false)': '0' };

describe('query parameters, read as rollytics reads them (EVM demo: every route exists)', () => {
  let t: TestApp;
  /** every list route of openapi.yaml with its path parameters filled in from the demo dump */
  let lists: string[];
  let account: string;
  let evmAccount: string;
  let internalAccount: string;

  before(async () => {
    t = await makeTestApp('evm');
    const d = t.dump;
    const b32 = (hex: string): string => bech32Of(Buffer.from(hex, 'hex'), d.prefix);
    const evm = loadEvmModel(t.dumpDir, d.prefix);
    // accounts that signed some but not all of their txs, so is_signer=true changes the list
    const partial = <T extends { accounts: Set<string>; signer?: string }>(rows: T[]): string => {
      const [hex] = byLinkCount(rows).find(([a, n]) => { const s = rows.filter((r) => r.signer === a).length; return s > 0 && s < n; }) ?? [];
      expect(hex, 'an account that signed some of its txs').to.be.a('string');
      return b32(hex as string);
    };
    account = partial(d.txs.map((x) => ({ accounts: x.accounts, signer: x.signer })));
    evmAccount = partial(evm.txs);
    internalAccount = b32(byLinkCount(evm.internals)[0][0]);
    const [owner] = ownersByTokenCount(d)[0];
    const token = longestHistory(d);
    const biggest = [...d.collections].sort((a, b) => b.obj.collection.nfts.length - a.obj.collection.nfts.length)[0].addr;
    const denom = d.holders[0]?.denom ?? 'umin';
    const values: Record<string, string> = {
      '{height}': String(busiestHeight(d)),
      '{collection_addr}': hexOf(biggest),
      '{token_id}': encodeURIComponent(token.tokenId),
      '{name}': 'e',
      '{denom}': encodeURIComponent(denom),
      '{tx_hash}': evm.internals[0].hash,
    };
    lists = Object.keys(doc.paths).filter((p) => takes(p, 'PaginationReverse')).map((p) => {
      let path = p.replace('{account}', p.includes('internal') ? internalAccount : p.includes('/tokens/') || p.includes('/collections/') ? b32(owner) : b32(signersByTxCount(d)[0][0]));
      if (p === '/indexer/nft/v1/txs/{collection_addr}/{token_id}') path = path.replace('{collection_addr}', hexOf(token.collection));
      for (const [k, v] of Object.entries(values)) path = path.replace(k, v);
      return path;
    });
    expect(lists.length, 'list routes in openapi.yaml').to.be.greaterThan(15);
  });

  const get = async (path: string): Promise<string> => {
    const res = await t.api.get(path);
    expect(res.status, `${path}: ${res.text}`).to.equal(200);
    return res.text;
  };
  const join2 = (path: string, q: string): string => `${path}${path.includes('?') ? '&' : '?'}${q}`;

  describe('is_signer: only the exact string `true` filters (rollytics: c.Query("is_signer", "false") == "true")', () => {
    for (const [route, who] of [['/indexer/tx/v1/txs/by_account/', 'account'], ['/indexer/tx/v1/evm-txs/by_account/', 'evmAccount']] as const) {
      it(`${route}{account}`, async () => {
        const path = `${route}${who === 'account' ? account : evmAccount}?pagination.limit=1000`;
        const all = JSON.parse(await get(path)) as { pagination: { total: string } };
        const signed = JSON.parse(await get(`${path}&is_signer=true`)) as { pagination: { total: string } };
        expect(Number(signed.pagination.total), 'the account signed fewer txs than it is in').to.be.lessThan(Number(all.pagination.total));
        const unfiltered = await get(path);
        const filtered = await get(`${path}&is_signer=true`);
        for (const v of ['True', 'TRUE', 't', '1', '', 'yes', 'false', 'False', '0', 'true+', 'true%20', '%20true']) {
          expect(await get(`${path}&is_signer=${v}`), `is_signer=${v}`).to.equal(unfiltered);
        }
        expect(await get(`${path}&is_signer`), 'is_signer without =').to.equal(unfiltered);
        expect(await get(`${path}&is_signer=true&is_signer=false`), 'the first value is read').to.equal(filtered);
        expect(await get(`${path}&is_signer=false&is_signer=true`), 'the first value is read').to.equal(unfiltered);
        for (const [client, v] of Object.entries(CLIENT_TRUE)) {
          expect(await get(`${path}&is_signer=${v}`), `${client} sends is_signer=${v}`).to.equal(v === 'true' ? filtered : unfiltered);
        }
      });
    }

    it('/indexer/tx/v1/evm-internal-txs/by_account/{account} does not read it (rollytics neither)', async () => {
      const path = `/indexer/tx/v1/evm-internal-txs/by_account/${internalAccount}?pagination.limit=50`;
      const unfiltered = await get(path);
      expect(JSON.parse(unfiltered).internal_txs.length).to.be.greaterThan(0);
      for (const v of ['true', 'True', '1', 'x']) expect(await get(`${path}&is_signer=${v}`), `is_signer=${v}`).to.equal(unfiltered);
    });
  });

  describe('pagination.reverse and pagination.count_total: Go ParseBool, any other value the default (fiber QueryBool)', () => {
    it('every list route: ParseBool spellings and what clients send read as Go reads them; others are the default', async () => {
      let differs = 0;
      for (const path of lists) {
        const desc = await get(join2(path, 'pagination.limit=3'));
        const asc = await get(join2(path, 'pagination.limit=3&pagination.reverse=false'));
        if (desc !== asc) differs++;
        for (const v of ['abc', '', 'yes', 'tRUE', '2']) {
          expect(await get(join2(path, `pagination.limit=3&pagination.reverse=${v}`)), `${path} reverse=${v}`).to.equal(desc);
        }
        for (const [client, v] of Object.entries(CLIENT_FALSE)) {
          expect(await get(join2(path, `pagination.limit=3&pagination.reverse=${v}`)), `${path}: ${client} reverse=${v}`).to.equal(asc);
        }
        for (const [client, v] of Object.entries(CLIENT_TRUE)) {
          expect(await get(join2(path, `pagination.limit=3&pagination.reverse=${v}`)), `${path}: ${client} reverse=${v}`).to.equal(desc);
        }
        expect(await get(join2(path, 'pagination.limit=3&pagination.reverse=false&pagination.reverse=true')), `${path}: first value`).to.equal(asc);
        const counted = await get(join2(path, 'pagination.limit=3'));
        const uncounted = await get(join2(path, 'pagination.limit=3&pagination.count_total=false'));
        for (const [client, v] of Object.entries(CLIENT_FALSE)) {
          expect(await get(join2(path, `pagination.limit=3&pagination.count_total=${v}`)), `${path}: ${client} count_total=${v}`).to.equal(uncounted);
        }
        for (const v of ['abc', '', 'no']) {
          expect(await get(join2(path, `pagination.limit=3&pagination.count_total=${v}`)), `${path} count_total=${v}`).to.equal(counted);
        }
      }
      expect(differs, 'list routes whose order the test can see').to.be.greaterThan(lists.length / 2);
    });
  });

  describe('pagination.limit and pagination.offset (rollytics QueryInt)', () => {
    it('every list route: empty is the default, a repeated one is read from its first value', async () => {
      for (const path of lists) {
        const byDefault = await get(path);
        expect(await get(join2(path, 'pagination.limit=')), `${path} limit=`).to.equal(byDefault);
        expect(await get(join2(path, 'pagination.offset=')), `${path} offset=`).to.equal(byDefault);
        const two = await get(join2(path, 'pagination.limit=2'));
        expect(await get(join2(path, 'pagination.limit=2&pagination.limit=7')), `${path} limit=2&limit=7`).to.equal(two);
        const skipped = await get(join2(path, 'pagination.limit=2&pagination.offset=1'));
        expect(await get(join2(path, 'pagination.limit=2&pagination.offset=1&pagination.offset=5')), `${path} offset=1&offset=5`).to.equal(skipped);
        // pagination.key: empty is the first page; a repeated one is read from its first value
        expect(await get(join2(path, 'pagination.limit=2&pagination.key=')), `${path} key=`).to.equal(two);
        const next = (JSON.parse(two) as { pagination: { next_key: string | null } }).pagination.next_key;
        if (next !== null) {
          const second = await get(join2(path, `pagination.limit=2&pagination.key=${encodeURIComponent(next)}`));
          expect(await get(join2(path, `pagination.limit=2&pagination.key=${encodeURIComponent(next)}&pagination.key=%21%21`)), `${path} key twice`).to.equal(second);
        }
      }
    });

    it('not a decimal integer is a 400 naming it (a deliberate difference: rollytics silently uses the default)', async () => {
      for (const q of ['pagination.limit=abc', 'pagination.limit=%205', 'pagination.offset=1e3', 'pagination.limit=5&pagination.limit=x']) {
        const res = await t.api.get(`/indexer/tx/v1/txs?${q}`);
        if (q.endsWith('x')) { expect(res.status, q).to.equal(200); continue; }
        expect(res.status, q).to.equal(400);
        expect(res.body.message, q).to.match(/^invalid value for pagination\.(limit|offset): /);
      }
    });
  });

  describe('{height} (rollytics strconv.ParseInt(v, 10, 64), then ≥ 1)', () => {
    it('blocks/{height} and every by_height route', async () => {
      const h = busiestHeight(t.dump);
      for (const route of ['/indexer/block/v1/blocks/', '/indexer/tx/v1/txs/by_height/', '/indexer/tx/v1/evm-txs/by_height/', '/indexer/tx/v1/evm-internal-txs/by_height/']) {
        const want = await get(`${route}${h}`);
        for (const v of [`+${h}`, `000${h}`, `${'0'.repeat(30)}${h}`]) expect(await get(`${route}${encodeURIComponent(v)}`), `${route}${v}`).to.equal(want);
        // valid int64 heights that no snapshot holds: not found, as rollytics
        for (const v of ['9007199254740993', '99999999999999999', '9223372036854775807']) {
          const res = await t.api.get(`${route}${v}`);
          if (route.includes('/blocks/')) {
            expect(res.status, `${route}${v}`).to.equal(404);
            expect(res.body.message).to.equal(`block not found: height ${v}`);
          } else {
            expect(res.status, `${route}${v}`).to.equal(200);
            expect(res.body.pagination.total, `${route}${v}`).to.equal('0');
          }
        }
        for (const [v, why] of [['9223372036854775808', 'must be <= 9223372036854775807'], ['1e3', 'must be a valid integer'], ['0x10', 'must be a valid integer']]) {
          const res = await t.api.get(`${route}${v}`);
          expect(res.status, `${route}${v}`).to.equal(400);
          expect(res.body.message).to.equal(`invalid value for height: ${v} (${why})`);
        }
        for (const v of ['0', '-5']) expect((await t.api.get(`${route}${v}`)).status, `${route}${v}`).to.equal(400);
      }
    });
  });

  describe('{tx_hash} (rollytics: hex either case, odd length padded, `0x` alone the empty hash)', () => {
    it('every by-hash route', async () => {
      const cosmos = t.dump.txs[0].obj.txhash as string;
      const evmHash = loadEvmModel(t.dumpDir, t.dump.prefix).txs[0].hash;
      for (const [route, hash] of [['/indexer/tx/v1/txs/', cosmos], ['/indexer/tx/v1/evm-txs/', evmHash], ['/indexer/tx/v1/evm-internal-txs/', evmHash]]) {
        const bare = hash.replace(/^0x/, '');
        const want = await get(`${route}${bare}`);
        for (const v of [bare.toLowerCase(), bare.toUpperCase(), `0x${bare}`]) expect(await get(`${route}${v}`), `${route}${v}`).to.equal(want);
        expect((await t.api.get(`${route}0x`)).status, `${route}0x: the empty hash names no tx`).to.equal(404);
        const bad = await t.api.get(`${route}0xZZ`);
        expect(bad.status).to.equal(400);
        expect(bad.body.message).to.equal('invalid value for tx_hash: 0xZZ (must be hex, with or without 0x)');
      }
    });
  });

  describe('order_by (rollytics normalizeOrderBy: trimmed, lower-cased, empty = token_id)', () => {
    it('both token lists', async () => {
      const [owner] = ownersByTokenCount(t.dump)[0];
      for (const path of lists.filter((p) => p.includes('/tokens/'))) {
        const byId = await get(join2(path, 'pagination.limit=5'));
        const byHeight = await get(join2(path, 'pagination.limit=5&order_by=height'));
        expect(byHeight, path).to.not.equal(byId);
        for (const v of ['', 'token_id', 'TOKEN_ID', '%20token_id%20']) expect(await get(join2(path, `pagination.limit=5&order_by=${v}`)), `${path} order_by=${v}`).to.equal(byId);
        for (const v of ['HEIGHT', 'Height', '%20height', 'height%09']) expect(await get(join2(path, `pagination.limit=5&order_by=${v}`)), `${path} order_by=${v}`).to.equal(byHeight);
        expect(await get(join2(path, 'pagination.limit=5&order_by=height&order_by=sideways')), `${path}: first value`).to.equal(byHeight);
        const bad = await t.api.get(join2(path, 'order_by=sideways'));
        expect(bad.status).to.equal(400);
        expect(bad.body.message).to.equal('invalid value for order_by: sideways (must be one of: token_id, height)');
      }
      expect(owner).to.be.a('string');
    });
  });

  describe('filters with an empty value mean no filter (rollytics: "" is no filter)', () => {
    it('collection_addr and token_id on the token lists', async () => {
      for (const path of lists.filter((p) => p.includes('/tokens/'))) {
        const all = await get(join2(path, 'pagination.limit=5'));
        if (takes(path.includes('by_account') ? '/indexer/nft/v1/tokens/by_account/{account}' : '/indexer/nft/v1/tokens/by_collection/{collection_addr}', 'CollectionAddrQuery')) {
          expect(await get(join2(path, 'pagination.limit=5&collection_addr=')), `${path} collection_addr=`).to.equal(all);
        }
        expect(await get(join2(path, 'pagination.limit=5&token_id=')), `${path} token_id=`).to.equal(all);
      }
    });
  });
});
