/**
 * Property tests: random and malformed values for every parameter of every route. Whatever comes
 * in, the answer is a 2xx, or a 4xx with the JSON error body {code, message, details: []} — never
 * a 5xx (API-CONTRACT §4: 500 only for a server fault, never for bad input) — within 5 s.
 * Fixed seed and bounded runs, so a failure reproduces and the suite stays fast.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { bech32Of, hexOf } from '../helpers/address';
import { makeTestApp, TestApp } from '../helpers/app';
import { Vm } from '../helpers/dump';
import { ownersByTokenCount } from './model';
import { rawGet, RawResponse } from '../support/raw-http';

const SEED = 20250501;
const RUNS = 30;

/** What every answer must be, whatever was asked. */
function checkAnswer(res: RawResponse, target: string): void {
  const where = `GET ${target.slice(0, 300)} → ${res.status} ${res.body.slice(0, 300)}`;
  expect(res.status, where).to.be.within(200, 499);
  expect(res.ms, where).to.be.below(5000);
  expect(String(res.headers['content-type']), where).to.match(/^application\/json/);
  const body = JSON.parse(res.body) as Record<string, unknown>;
  if (res.status >= 400) {
    expect(Object.keys(body), where).to.deep.equal(['code', 'message', 'details']);
    expect(body.code, where).to.be.a('number');
    expect(body.message, where).to.be.a('string');
    expect(body.details, where).to.deep.equal([]);
  }
}

// ---- arbitraries -----------------------------------------------------------------------------

const escapes = fc.constantFrom('%', '%2', '%ZZ', '%E0%A4%A', '%00', '%2F', '%2f', '%25', '%C0%AF', '%FF', '%u0041', '%%', '%0A', '%20', '%23', '%3F', '%2B', '+');
const escapeSoup = fc.array(fc.oneof(escapes, fc.string({ maxLength: 4 })), { maxLength: 6 }).map((a) => a.join(''));
const numberish = fc.oneof(
  fc.integer().map(String), fc.double().map(String), fc.bigInt().map(String),
  fc.constantFrom('1e3', '0x10', '-0', '+7', '007', ' 7', 'NaN', 'Infinity', '9007199254740993', '1.0', '', '0', '-1', '1000', '1001', '99999999999999999999'),
);
const hexDigits = fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), maxLength: 80 });
const addressish = fc.oneof(
  fc.tuple(fc.constantFrom('0x', '0X', '', 'init1', 'INIT1', 'cosmos1', '0x0x'), hexDigits).map(([p, h]) => p + h),
  fc.string({ unit: fc.constantFrom(...'qpzry9x8gf2tvdw0s3jn54khce6mua7l'), minLength: 30, maxLength: 70 }).map((s) => `init1${s}`),
);
/** Anything a path segment or a query value could be. */
const garbage = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 30 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
  { weight: 3, arbitrary: escapeSoup },
  { weight: 1, arbitrary: fc.string({ minLength: 2000, maxLength: 4000 }) },
  { weight: 3, arbitrary: numberish },
  { weight: 3, arbitrary: addressish },
);
const b64 = (s: string): string => Buffer.from(s).toString('base64');
const keyGarbage = fc.oneof(
  fc.jsonValue().map((v) => b64(JSON.stringify(v) ?? 'null')),
  fc.constantFrom<unknown>({ sequence: 'x' }, { height: 1.5 }, [], {}, { height: -1 }, { sequence: -5 }, { height: 1e300 }, { height: '1' },
    { token_id: 5, height: 1 }, { height: 1, token_id: 'a', collection_addr: 'zz' }, { amount: '1', account: '0x00' }, { amount: 'x' },
    { amount: '-5', account: '0x' }, { object_addr: '0xzz', height: 1 }, { sequence: 9007199254740992 }, { sequence: 1, height: 2 },
    null, 'str', 12, -3, 1.5, true).map((v) => b64(JSON.stringify(v))),
  fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b).toString('base64')),
  fc.constantFrom('MTAw', 'LTE=', 'OTk5OTk5OTk5OTk5OTk5OTk5OTk=', '', '====', 'e30', 'e30=', 'eyJzZXF1ZW5jZSI6MX0', 'eyJ', 'ey J9'),
  garbage,
);
const scalarQuery = fc.oneof(garbage, fc.constantFrom('', 'true', 'false', 'TRUE', 'True', '1', '0', 't', 'yes', 'null', '[]', '{}', 'token_id', 'height', 'HEIGHT', ' height'));
/** Cursor-shaped JSON with the field names our keys and rollytics' keys use, and odd values. */
const cursorKey = fc.dictionary(
  fc.constantFrom('sequence', 'height', 'token_id', 'object_addr', 'collection_addr', 'amount', 'account', 'offset'),
  fc.oneof(fc.integer(), fc.nat(5000), fc.double(), fc.string({ maxLength: 8 }), hexDigits.map((h) => `0x${h}`), numberish, fc.constant(null), fc.boolean()),
  { maxKeys: 4 },
).map((o) => b64(JSON.stringify(o)));
/** Per parameter: mostly plausible values mixed with garbage, so checks behind the first one run too. */
const QUERY_VALUES = {
  'pagination.key': fc.oneof(keyGarbage, cursorKey),
  'pagination.offset': fc.oneof(fc.nat(5000).map(String), numberish, scalarQuery),
  'pagination.limit': fc.oneof(fc.integer({ min: 1, max: 1000 }).map(String), numberish, scalarQuery),
  'pagination.count_total': fc.oneof(fc.constantFrom('true', 'false'), scalarQuery),
  'pagination.reverse': fc.oneof(fc.constantFrom('true', 'false'), scalarQuery),
  msgs: fc.oneof(fc.constantFrom('cosmos.bank.v1beta1.MsgSend', '/cosmos.bank.v1beta1.MsgSend', 'cosmos.bank.v1beta1.MsgSend,/initia.move.v1.MsgExecute', ',', '/', ''), scalarQuery),
  order_by: fc.oneof(fc.constantFrom('token_id', 'height'), scalarQuery),
  is_signer: fc.oneof(fc.constantFrom('true', 'false'), scalarQuery),
  collection_addr: fc.oneof(addressish, scalarQuery),
  token_id: fc.oneof(fc.constantFrom('1', 'Glyph #1', 'Glyph%20%231', 'art/1 1', '%', '%%', '%E0%A4%A'), scalarQuery),
};
type QueryName = keyof typeof QUERY_VALUES;
const QUERY_NAMES = Object.keys(QUERY_VALUES) as QueryName[];
const queryValue = (a: fc.Arbitrary<string>): fc.Arbitrary<string | string[]> => fc.oneof({ weight: 5, arbitrary: a }, { weight: 1, arbitrary: fc.array(a, { minLength: 2, maxLength: 3 }) });
/** One to three parameters at a time (all of them at once would stop at the first bad one). */
const queryArb: fc.Arbitrary<Partial<Record<QueryName, string | string[]>>> = fc.subarray(QUERY_NAMES, { minLength: 1, maxLength: 3 })
  .chain((names) => fc.tuple(...names.map((n) => queryValue(QUERY_VALUES[n]))).map((values) => Object.fromEntries(names.map((n, i) => [n, values[i]]))));
/** How a value is put into the URL: percent-encoded, as clients do, or raw (malformed escapes and all). */
const encoding = fc.constantFrom<'encoded' | 'raw'>('encoded', 'encoded', 'raw');

function put(value: string, how: 'encoded' | 'raw'): string {
  if (how === 'raw') return value;
  try { return encodeURIComponent(value); } catch { return encodeURIComponent(value.replace(/[\ud800-\udfff]/g, '\ufffd')); }
}

function queryString(q: Partial<Record<string, string | string[]>>, how: 'encoded' | 'raw'): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(q)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) parts.push(`${k}=${put(one, how)}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

// ---- routes ----------------------------------------------------------------------------------

type Params = Record<string, string>;
const ROUTES = [
  '/status', '/indexer/block/v1/avg_blocktime', '/swagger/doc.json',
  '/indexer/block/v1/blocks', '/indexer/block/v1/blocks/{height}',
  '/indexer/tx/v1/txs', '/indexer/tx/v1/txs/by_account/{account}', '/indexer/tx/v1/txs/by_height/{height}', '/indexer/tx/v1/txs/{tx_hash}',
  '/indexer/nft/v1/collections', '/indexer/nft/v1/collections/by_account/{account}', '/indexer/nft/v1/collections/by_name/{name}',
  '/indexer/nft/v1/collections/{collection_addr}', '/indexer/nft/v1/tokens/by_account/{account}',
  '/indexer/nft/v1/tokens/by_collection/{collection_addr}', '/indexer/nft/v1/txs/{collection_addr}/{token_id}',
  '/indexer/richlist/v1/{denom}',
  '/indexer/tx/v1/evm-txs', '/indexer/tx/v1/evm-txs/by_account/{account}', '/indexer/tx/v1/evm-txs/by_height/{height}',
  '/indexer/tx/v1/evm-txs/{tx_hash}', '/indexer/tx/v1/evm-internal-txs', '/indexer/tx/v1/evm-internal-txs/by_account/{account}',
  '/indexer/tx/v1/evm-internal-txs/by_height/{height}', '/indexer/tx/v1/evm-internal-txs/{tx_hash}',
];

/** Valid values, so query garbage reaches the handlers behind the path checks. */
function validParams(t: TestApp): Params {
  const d = t.dump;
  const token = d.tokens[0];
  return {
    height: String(d.blocks[Math.floor(d.blocks.length / 2)].height),
    account: bech32Of(Buffer.from(ownersByTokenCount(d)[0][0], 'hex'), d.prefix),
    tx_hash: d.txs[0].hash,
    name: 'Cool%20Cats',
    collection_addr: hexOf(token.collection),
    token_id: encodeURIComponent(token.tokenId),
    denom: d.vm === 'evm' ? [...d.denomContracts.keys()][0] : 'umin',
  };
}

function fill(template: string, params: Params): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => params[name]);
}

const vmArb = fc.constantFrom<Vm>('move', 'wasm', 'evm');

describe('bad input: random and malformed parameters never cause a 5xx', function () {
  this.timeout(120_000);

  before(async () => { await Promise.all((['move', 'wasm', 'evm'] as Vm[]).map((vm) => makeTestApp(vm))); });

  for (const route of ROUTES) {
    const names = [...route.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
    if (names.length) {
      it(`answers 2xx or a JSON 4xx for garbage path parameters of ${route}`, async () => {
        const pathArb = fc.record(Object.fromEntries(names.map((n) => [n, fc.tuple(garbage, encoding).map(([v, how]) => put(v, how))])) as Record<string, fc.Arbitrary<string>>);
        await fc.assert(fc.asyncProperty(vmArb, pathArb, fc.option(queryArb, { freq: 3 }), encoding, async (vm, params, query, how) => {
          const t = await makeTestApp(vm);
          const target = fill(route, params) + (query ? queryString(query, how) : '');
          checkAnswer(await rawGet(t.baseUrl, target), target);
        }), { seed: SEED, numRuns: RUNS, endOnFailure: true });
      });
    }

    it(`answers 2xx or a JSON 4xx for garbage query parameters of ${route}`, async () => {
      await fc.assert(fc.asyncProperty(vmArb, queryArb, encoding, async (vm, query, how) => {
        const t = await makeTestApp(vm);
        const target = fill(route, validParams(t)) + queryString(query, how);
        checkAnswer(await rawGet(t.baseUrl, target), target);
      }), { seed: SEED, numRuns: RUNS, endOnFailure: true });
    });
  }

  it('answers 2xx or a JSON 4xx for random request targets under /indexer', async () => {
    const segments = fc.array(fc.oneof(fc.constantFrom('indexer', 'tx', 'v1', 'txs', 'nft', 'block', 'blocks', 'by_account', 'by_height',
      'by_name', 'collections', 'tokens', 'richlist', 'evm-txs', '', '.', '..'), garbage.map((v) => put(v, 'encoded'))), { maxLength: 7 });
    await fc.assert(fc.asyncProperty(vmArb, segments, fc.option(queryArb), async (vm, segs, query) => {
      const t = await makeTestApp(vm);
      const target = `/indexer/${segs.join('/')}${query ? queryString(query, 'encoded') : ''}`;
      checkAnswer(await rawGet(t.baseUrl, target), target);
    }), { seed: SEED, numRuns: RUNS * 2, endOnFailure: true });
  });
});
