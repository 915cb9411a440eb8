import { expect } from 'chai';
import request, { Response } from 'supertest';
import { createRequestListener } from '../../src/serve/routing';
import { SHOWN_VALUE_CHARS } from '../../src/http/errors';
import { loadOpenApi } from '../../src/serve/openapi';
import { bech32Of, hexOf } from '../helpers/address';
import { makeTestApp, TestApp } from '../helpers/app';
import { rollyticsKey } from './pages';
import { appOptions } from '../helpers/app-options';

function expectError(res: Response, status: number, code: number, what: string): void {
  expect(res.status, `${what}: ${res.text}`).to.equal(status);
  expect(res.headers['content-type'], what).to.match(/^application\/json/);
  expect(Object.keys(res.body), what).to.deep.equal(['code', 'message', 'details']);
  expect(res.body.code, what).to.equal(code);
  expect(res.body.message, what).to.be.a('string').and.not.equal('');
  expect(res.body.details, what).to.deep.equal([]);
}

async function someAccount(t: TestApp): Promise<string> {
  return bech32Of(t.dump.tokens[0].owner, t.dump.prefix);
}

describe('errors: a bad address', () => {
  it('says it is not a bech32 or 0x address, quoting the value', async () => {
    const t = await makeTestApp('move');
    for (const [path, name, value] of [
      ['/indexer/tx/v1/txs/by_account/not-an-address', 'account', 'not-an-address'],
      // a bech32 address with one character mistyped: its checksum fails, and it is not hex either
      [`/indexer/nft/v1/tokens/by_account/${(await someAccount(t)).slice(0, -1)}x`, 'account', `${(await someAccount(t)).slice(0, -1)}x`],
      ['/indexer/nft/v1/collections/0xnothex', 'collection_addr', '0xnothex'],
    ]) {
      const res = await t.api.get(path);
      expectError(res, 400, 3, path);
      expect(res.body.message, path).to.equal(`invalid value for ${name}: ${value} (not a bech32 or 0x address)`);
    }
    const long = await t.api.get(`/indexer/nft/v1/collections/0x${'1'.repeat(65)}`);
    expect(long.body.message).to.match(/\(invalid address format\)$/);
  });
});

describe('errors: 404 for a missing object', () => {
  it('returns 404 with gRPC code 5 for a missing block, tx and collection', async () => {
    const t = await makeTestApp('wasm');
    for (const path of ['/indexer/block/v1/blocks/100000', `/indexer/tx/v1/txs/${'0'.repeat(64)}`, `/indexer/nft/v1/collections/0x${'9'.repeat(64)}`]) {
      expectError(await t.api.get(path), 404, 5, path);
    }
  });

  it('returns 404 with the JSON error for an unknown route', async () => {
    const t = await makeTestApp('move');
    for (const path of ['/indexer/foo', '/indexer/block/v2/blocks', '/nope', '/indexer/nft/v1/txs/0x1']) expectError(await t.api.get(path), 404, 5, path);
  });

  for (const vm of ['move', 'wasm'] as const) {
    it(`returns 404 with the JSON error for the EVM-only routes on ${vm}`, async () => {
      const t = await makeTestApp(vm);
      for (const path of ['/indexer/tx/v1/evm-txs', '/indexer/tx/v1/evm-txs/', `/indexer/tx/v1/evm-txs/by_account/${await someAccount(t)}`,
        '/indexer/tx/v1/evm-txs/by_height/5', `/indexer/tx/v1/evm-txs/0x${'ab'.repeat(32)}`, '/indexer/tx/v1/evm-internal-txs',
        '/indexer/tx/v1/evm-internal-txs/by_height/5', `/indexer/tx/v1/evm-internal-txs/0x${'ab'.repeat(32)}`]) {
        expectError(await t.api.get(path), 404, 5, path);
      }
    });
  }
});

describe('errors: 503 while no snapshot is loaded', () => {
  it('answers every route with 503 and gRPC code 14', async () => {
    const app = createRequestListener({ snapshots: { current: () => undefined }, openapi: loadOpenApi(), options: appOptions({ corsOrigin: '*', validateResponses: true }) });
    for (const path of ['/status', '/indexer/block/v1/blocks', '/indexer/tx/v1/txs/by_height/1', '/indexer/richlist/v1/umin']) {
      expectError(await request(app).get(path), 503, 14, path);
    }
  });
});

describe('errors: 400 naming the parameter and the value', () => {
  // [path, parameter, value as sent]; {account} and {collection} are filled in from the dump
  const cases: [string, string, string][] = [
    ['/indexer/block/v1/blocks/abc', 'height', 'abc'],
    ['/indexer/tx/v1/txs/by_height/-4', 'height', '-4'],
    ['/indexer/tx/v1/txs/nothex', 'tx_hash', 'nothex'],
    ['/indexer/tx/v1/txs/by_account/0xqq', 'account', '0xqq'],
    ['/indexer/nft/v1/collections/by_account/bad-account', 'account', 'bad-account'],
    ['/indexer/nft/v1/tokens/by_account/xyz', 'account', 'xyz'],
    ['/indexer/nft/v1/collections/0xnot-an-address', 'collection_addr', '0xnot-an-address'],
    ['/indexer/nft/v1/tokens/by_collection/0xnot-hex', 'collection_addr', '0xnot-hex'],
    ['/indexer/nft/v1/txs/0xnot-hex/1', 'collection_addr', '0xnot-hex'],
    ['/indexer/nft/v1/tokens/by_account/{account}?collection_addr=0xghi', 'collection_addr', '0xghi'],
    ['/indexer/nft/v1/tokens/by_account/{account}?order_by=name', 'order_by', 'name'],
    ['/indexer/nft/v1/tokens/by_collection/{collection}?order_by=owner', 'order_by', 'owner'],
    ['/indexer/tx/v1/txs?pagination.limit=abc', 'pagination.limit', 'abc'],
    ['/indexer/tx/v1/txs?pagination.limit=0', 'pagination.limit', '0'],
    ['/indexer/nft/v1/collections?pagination.limit=1001', 'pagination.limit', '1001'],
    ['/indexer/block/v1/blocks?pagination.limit=2.5', 'pagination.limit', '2.5'],
    // not decimal integers (reference §2.1: Go Atoi rejects them; API-CONTRACT §5 Q15: 400)
    ['/indexer/block/v1/blocks?pagination.limit=0x2', 'pagination.limit', '0x2'],
    ['/indexer/block/v1/blocks?pagination.limit=1e1', 'pagination.limit', '1e1'],
    // Infinity passes the validator's integer check and reaches SQLite (found by bad-input.test.ts)
    ['/indexer/block/v1/blocks?pagination.limit=Infinity', 'pagination.limit', 'Infinity'],
    ['/indexer/nft/v1/collections?pagination.offset=Infinity', 'pagination.offset', 'Infinity'],
    ['/indexer/tx/v1/txs?pagination.offset=-Infinity', 'pagination.offset', '-Infinity'],
    ['/indexer/richlist/v1/umin?pagination.offset=-1', 'pagination.offset', '-1'],
    ['/indexer/tx/v1/txs?pagination.offset=ten', 'pagination.offset', 'ten'],
    ['/indexer/tx/v1/txs?pagination.key=%21%21%21', 'pagination.key', '!!!'],
    [`/indexer/tx/v1/txs?pagination.key=${rollyticsKey('abc')}`, 'pagination.key', rollyticsKey('abc')],
    [`/indexer/tx/v1/txs?pagination.key=${encodeURIComponent(rollyticsKey('{bad'))}`, 'pagination.key', rollyticsKey('{bad')],
    [`/indexer/tx/v1/txs?pagination.key=${encodeURIComponent(rollyticsKey('-5'))}`, 'pagination.key', rollyticsKey('-5')],
  ];

  for (const [template, param, value] of cases) {
    it(`returns 400, code 3, naming ${param} and ${JSON.stringify(value)} for ${template}`, async () => {
      const t = await makeTestApp('move');
      const path = template.replace('{account}', await someAccount(t)).replace('{collection}', hexOf(t.dump.collections[0].addr));
      const res = await t.api.get(path);
      expectError(res, 400, 3, path);
      expect(res.body.message, path).to.contain(param).and.contain(value);
    });
  }

  it('answers malformed JSON keys with 400 naming pagination.key', async () => {
    const t = await makeTestApp('evm');
    const col = hexOf(t.dump.collections[0].addr);
    for (const [path, key] of [
      ['/indexer/tx/v1/txs', { sequence: 'x' }],
      ['/indexer/block/v1/blocks', { height: 1.5 }],
      ['/indexer/block/v1/blocks', { height: '12' }],
      [`/indexer/nft/v1/tokens/by_collection/${col}`, { height: 1, token_id: 5 }],
      ['/indexer/tx/v1/txs', []],
      ['/indexer/tx/v1/txs', 'null'],
    ] as [string, unknown][]) {
      const res = await t.api.get(`${path}?pagination.key=${encodeURIComponent(rollyticsKey(typeof key === 'string' ? key : JSON.stringify(key)))}`);
      expectError(res, 400, 3, `${path} ${JSON.stringify(key)}`);
      expect(res.body.message).to.contain('pagination.key');
    }
  });

  it('answers a path parameter whose percent-encoding does not decode like any other bad value', async () => {
    const t = await makeTestApp('evm');
    for (const [path, param] of [
      ['/indexer/nft/v1/collections/by_name/%E0%A4%A', 'name'],
      ['/indexer/nft/v1/collections/%ZZ', 'collection_addr'],
      ['/indexer/tx/v1/txs/by_account/%E0%A4%A', 'account'],
      ['/indexer/block/v1/blocks/%E0%A4%A', 'height'],
      ['/indexer/nft/v1/txs/0x1/%E0%A4%A', 'token_id'],
      ['/indexer/richlist/v1/%E0%A4%A', 'denom'],
      ['/indexer/tx/v1/evm-txs/%E0%A4%A', 'tx_hash'],
    ]) {
      const res = await t.api.get(path);
      expectError(res, 400, 3, path);
      expect(res.body.message, path).to.equal(`invalid value for ${param}: ${path.slice(path.lastIndexOf('/') + 1)} (malformed percent-encoding)`);
    }
    expectError(await t.api.get('/no/such/%ZZ'), 404, 5, '/no/such/%ZZ');
  });

  it('never leaks a stack, SQL or a file path in an error message', async () => {
    const t = await makeTestApp('move');
    for (const path of ['/indexer/tx/v1/txs?pagination.key=%7B', '/indexer/block/v1/blocks/%E0%A4%A', '/indexer/nft/v1/collections/by_name/%ZZ']) {
      const res = await t.api.get(path);
      expect(res.status, path).to.be.within(400, 499);
      expect(res.body.message, path).to.not.match(/SELECT|sqlite|\/work\/|node_modules|\n\s+at /i);
    }
  });
});

/**
 * A client's value is echoed in an error message at most SHOWN_VALUE_CHARS (100) characters
 * long, on every route, for every parameter, whatever the status (400, 404, 405): a 7,000-char
 * hash or path must not come back as a 7 KB error body.
 */
describe('errors: a long value is never echoed whole', () => {
  const LONG = 7_000;
  // Each value is one family the routes parse differently: a valid hex hash with and without 0x
  // (404s), a bech32 address (its checksum error), anything else (names, denoms, numbers).
  const long = (alphabet: string, prefix = ''): string => prefix + alphabet.repeat(Math.ceil(LONG / alphabet.length)).slice(0, LONG - prefix.length);
  const values = [long('0123456789abcdef'), long('0123456789abcdef', '0x'), long('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 'init1'), long('Zz-_.~Aa')];

  /** The longest run of `value` (from any start) that `text` contains, up to 101. */
  function echoed(text: string, value: string): number {
    for (let start = 0; start < 40; start++) if (text.includes(value.slice(start, start + SHOWN_VALUE_CHARS + 1))) return SHOWN_VALUE_CHARS + 1;
    return 0;
  }

  type Param = { name: string; in: 'path' | 'query' };
  function operations(doc: Record<string, unknown>): { path: string; params: Param[] }[] {
    const refs = ((doc.components as Record<string, unknown>).parameters) as Record<string, Param>;
    const resolve = (p: Param | { $ref: string }): Param => ('$ref' in p ? refs[p.$ref.split('/').pop() as string] : p);
    return Object.entries(doc.paths as Record<string, { get: { parameters?: (Param | { $ref: string })[] } }>)
      .filter(([path]) => path.startsWith('/indexer/'))
      .map(([path, item]) => ({ path, params: (item.get.parameters ?? []).map(resolve) }));
  }

  for (const vm of ['evm', 'move'] as const) {
    it(`cuts every echoed value at ${SHOWN_VALUE_CHARS} characters: every route and parameter, ${vm} (400, 404, 405)`, async function () {
      this.timeout(120_000);
      const t = await makeTestApp(vm);
      const fill: Record<string, string> = {
        height: '1', tx_hash: 'ab'.repeat(32), account: await someAccount(t), collection_addr: hexOf(t.dump.collections[0].addr),
        token_id: '1', name: 'x', denom: 'umin',
      };
      const requests: { method: 'get' | 'post'; url: string; value: string }[] = [];
      // on a chain without EVM, the other routes answer as on the EVM chain: only the EVM ones differ
      for (const op of operations(loadOpenApi()).filter((o) => vm === 'evm' || o.path.includes('/evm-'))) {
        const base = op.path.replace(/\{(\w+)\}/g, (_m, n: string) => encodeURIComponent(fill[n]));
        for (const p of op.params) {
          for (const value of values) {
            const url = p.in === 'path'
              ? op.path.replace(/\{(\w+)\}/g, (_m, n: string) => encodeURIComponent(n === p.name ? value : fill[n]))
              : `${base}?${encodeURIComponent(p.name)}=${encodeURIComponent(value)}`;
            requests.push({ method: 'get', url, value });
          }
        }
        // a long unknown query parameter name, and the wrong method on a long path
        requests.push({ method: 'get', url: `${base}?${values[3]}=1`, value: values[3] });
        requests.push({ method: 'post', url: `${base}/${values[3]}`, value: values[3] });
      }
      requests.push({ method: 'get', url: `/indexer/${values[3]}`, value: values[3] });
      requests.push({ method: 'post', url: `/status?x=${values[3]}`, value: values[3] });
      const statuses = new Map<number, number>();
      const whole: string[] = [];
      for (const r of requests) {
        const res = await t.api[r.method](r.url);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status < 400) continue;
        const what = `${r.method.toUpperCase()} ${r.url.slice(0, 80)}… → ${res.status} ${res.text.slice(0, 160)}…`;
        expectError(res, res.status, res.body.code as number, what);
        if (echoed(res.text, r.value) || res.text.length >= 500) whole.push(what);
      }
      expect(whole, whole.join('\n')).to.deep.equal([]);
      // the search reached every kind of error it is about
      expect([...statuses.keys()], JSON.stringify([...statuses])).to.include.members(vm === 'evm' ? [400, 404, 405] : [404, 405]);
    });
  }
});
