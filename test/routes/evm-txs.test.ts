import { expect } from 'chai';
import { addressForms } from '../helpers/address';
import { makeTestApp, TestApp } from '../helpers/app';
import { byLinkCount, EVM_LOG_KEYS, EVM_TX_KEYS, EvmModel, EvmTxRow, loadEvmModel } from './evm-model';
import { reversed } from './model';
import { emptyList, getList, qs, rollyticsKey, walkKeys } from './pages';

const models = new Map<string, EvmModel>();
async function evmApp(): Promise<{ t: TestApp; m: EvmModel }> {
  const t = await makeTestApp('evm');
  let m = models.get(t.dumpDir);
  if (!m) { m = loadEvmModel(t.dumpDir, t.dump.prefix); models.set(t.dumpDir, m); }
  return { t, m };
}

const objs = (rows: { obj: unknown }[]): unknown[] => rows.map((r) => r.obj);
const LIMITS = [7, 100, 1000];

describe('GET /indexer/tx/v1/evm-txs', () => {
  it('returns the newest EVM txs first, each the receipt as the EvmTx object, with the exact total', async () => {
    const { t, m } = await evmApp();
    expect(m.txs.length).to.be.greaterThan(500);
    const body = await getList(t, '/indexer/tx/v1/evm-txs?pagination.limit=50', 'txs');
    expect(body.txs).to.deep.equal(objs(reversed(m.txs).slice(0, 50)));
    expect(body.pagination.previous_key).to.equal(null);
    expect(body.pagination.next_key).to.be.a('string');
    expect(body.pagination.total).to.equal(String(m.txs.length));
  });

  it('keeps the reference key order, drops the node\'s other receipt fields, and serves "" for a creation\'s to', async () => {
    const { t, m } = await evmApp();
    const res = await t.api.get('/indexer/tx/v1/evm-txs?pagination.limit=1000&pagination.reverse=false');
    const txs = (res.body as { txs: Record<string, unknown>[] }).txs;
    for (const tx of txs) {
      expect(Object.keys(tx)).to.deep.equal(EVM_TX_KEYS);
      for (const l of (tx.logs as Record<string, unknown>[] | null) ?? []) expect(Object.keys(l)).to.deep.equal(EVM_LOG_KEYS);
    }
    const creations = m.txs.filter((r) => r.creation);
    expect(creations.length, 'the demo creates contracts').to.be.greaterThan(0);
    for (const c of creations) {
      const tx = (await t.api.get(`/indexer/tx/v1/evm-txs/${c.hash}`)).body.tx as Record<string, unknown>;
      expect(tx.to).to.equal('');
      expect(tx.contractAddress).to.match(/^0x[0-9a-f]{40}$/);
    }
  });

  for (const reverse of [true, false]) {
    it(`walks every EVM tx exactly once by next_key, reverse=${reverse}, limits ${LIMITS.join(', ')}`, async () => {
      const { t, m } = await evmApp();
      const want = objs(reverse ? reversed(m.txs) : m.txs);
      for (const limit of LIMITS) {
        const got = await walkKeys(t, { path: '/indexer/tx/v1/evm-txs', itemsKey: 'txs', limit, reverse, total: m.txs.length });
        expect(got, `limit ${limit}`).to.deep.equal(want);
      }
    });
  }

  it('answers total "0" with pagination.count_total=false and accepts rollytics\' {"sequence":n} key', async () => {
    const { t, m } = await evmApp();
    const body = await getList(t, '/indexer/tx/v1/evm-txs?pagination.limit=3&pagination.count_total=false', 'txs');
    expect(body.pagination.total).to.equal('0');
    const at = m.txs[100];
    const page = await getList(t, `/indexer/tx/v1/evm-txs${qs({ 'pagination.key': rollyticsKey({ sequence: at.sequence }), 'pagination.limit': 3 })}`, 'txs');
    expect(page.txs).to.deep.equal(objs(m.txs.slice(97, 100).reverse()));
  });
});

describe('GET /indexer/tx/v1/evm-txs/by_height/:height', () => {
  const busiest = (m: EvmModel): number => {
    const n = new Map<number, number>();
    for (const r of m.txs) n.set(r.height, (n.get(r.height) ?? 0) + 1);
    return [...n.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0][0];
  };

  it('lists the EVM txs of a block in block order with reverse=false, with the exact count', async () => {
    const { t, m } = await evmApp();
    const h = busiest(m);
    const rows = m.txs.filter((r) => r.height === h);
    expect(rows.length).to.be.greaterThan(2);
    const body = await getList(t, `/indexer/tx/v1/evm-txs/by_height/${h}?pagination.reverse=false`, 'txs');
    expect(body).to.deep.equal({ txs: objs(rows), pagination: { previous_key: null, next_key: null, total: String(rows.length) } });
    const got = await walkKeys(t, { path: `/indexer/tx/v1/evm-txs/by_height/${h}`, itemsKey: 'txs', limit: 2, reverse: true, total: rows.length });
    expect(got).to.deep.equal(objs(reversed(rows)));
  });

  it('answers an empty list for a block without EVM txs and 400 naming a bad height', async () => {
    const { t, m } = await evmApp();
    const heights = new Set(m.txs.map((r) => r.height));
    const none = t.dump.blocks.find((b) => !heights.has(b.height)) as { height: number };
    expect(await getList(t, `/indexer/tx/v1/evm-txs/by_height/${none.height}`, 'txs')).to.deep.equal(emptyList('txs'));
    const res = await t.api.get('/indexer/tx/v1/evm-txs/by_height/abc');
    expect(res.status).to.equal(400);
    expect(res.body.message).to.contain('height').and.contain('abc');
  });
});

describe('GET /indexer/tx/v1/evm-txs/by_account/:account', () => {
  it('walks the EVM txs linked to the busiest account (from, to, contract, logs, address topics), in any address form', async () => {
    const { t, m } = await evmApp();
    const [hex, n] = byLinkCount(m.txs)[0];
    const rows = m.txs.filter((r) => r.accounts.has(hex));
    expect(rows.length).to.equal(n);
    for (const [form, account] of Object.entries(addressForms(Buffer.from(hex, 'hex'), t.dump.prefix))) {
      const body = await getList(t, `/indexer/tx/v1/evm-txs/by_account/${encodeURIComponent(account)}?pagination.limit=20`, 'txs');
      expect({ txs: body.txs, total: body.pagination.total }, form).to.deep.equal({ txs: objs(reversed(rows).slice(0, 20)), total: String(n) });
    }
    for (const reverse of [true, false]) {
      for (const limit of [7, 100]) {
        const got = await walkKeys(t, { path: `/indexer/tx/v1/evm-txs/by_account/0x${hex}`, itemsKey: 'txs', limit, reverse, total: n });
        expect(got, `reverse ${reverse} limit ${limit}`).to.deep.equal(objs(reverse ? reversed(rows) : rows));
      }
    }
  });

  it('links an account that only appears in an address-shaped log topic', async () => {
    const { t, m } = await evmApp();
    const topicOnly = (r: EvmTxRow): string[] => [...r.accounts].filter((a) => a !== r.signer
      && `0x${a}` !== r.obj.to && `0x${a}` !== r.obj.contractAddress
      && !((r.obj.logs as { address: string }[] | null) ?? []).some((l) => l.address.toLowerCase() === `0x${a}`));
    const row = m.txs.find((r) => topicOnly(r).length > 0) as EvmTxRow;
    const hex = topicOnly(row)[0];
    const rows = m.txs.filter((r) => r.accounts.has(hex));
    const got = await walkKeys(t, { path: `/indexer/tx/v1/evm-txs/by_account/0x${hex}`, itemsKey: 'txs', limit: 50, reverse: false, total: rows.length });
    expect(got).to.deep.equal(objs(rows));
  });

  it('is_signer=true keeps only the txs the account sent (from)', async () => {
    const { t, m } = await evmApp();
    // the busiest account that both sent txs and received others
    const sentBy = (hex: string): EvmTxRow[] => m.txs.filter((r) => r.signer === hex);
    const [hex, linked] = byLinkCount(m.txs).find(([a, n]) => sentBy(a).length > 0 && sentBy(a).length < n) as [string, number];
    const sent = sentBy(hex);
    expect(sent.length).to.be.greaterThan(0).and.lessThan(linked);
    const got = await walkKeys(t, { path: `/indexer/tx/v1/evm-txs/by_account/0x${hex}`, itemsKey: 'txs', filters: { is_signer: 'true' }, limit: 25, reverse: true, total: sent.length });
    expect(got).to.deep.equal(objs(reversed(sent)));
  });

  it('answers an empty list for an unknown account and 400 naming a malformed one', async () => {
    const { t } = await evmApp();
    expect(await getList(t, `/indexer/tx/v1/evm-txs/by_account/0x${'12'.repeat(20)}`, 'txs')).to.deep.equal(emptyList('txs'));
    const res = await t.api.get('/indexer/tx/v1/evm-txs/by_account/init1notanaddress');
    expect(res.status).to.equal(400);
    expect(res.body).to.deep.include({ code: 3, details: [] });
    expect(res.body.message).to.contain('account').and.contain('init1notanaddress');
  });
});

describe('GET /indexer/tx/v1/evm-txs/:tx_hash', () => {
  it('returns {"tx": EvmTx} by EVM hash, with or without 0x, in either case', async () => {
    const { t, m } = await evmApp();
    for (const row of [m.txs[0], m.txs[m.txs.length - 1], m.txs.find((r) => r.failed) as EvmTxRow]) {
      for (const hash of [row.hash, row.hash.slice(2), row.hash.toUpperCase().replace(/^0X/, '0x')]) {
        const res = await t.api.get(`/indexer/tx/v1/evm-txs/${hash}`);
        expect(res.status, hash).to.equal(200);
        expect(res.body, hash).to.deep.equal({ tx: row.obj });
      }
    }
    expect((m.txs.find((r) => r.failed) as EvmTxRow).obj.status).to.equal('0x0');
  });

  it('answers 404 for an unknown hash (the cosmos hash is not an EVM hash) and 400 for a non-hex one', async () => {
    const { t } = await evmApp();
    const cosmos = t.dump.txs[0].hash;
    const res = await t.api.get(`/indexer/tx/v1/evm-txs/${cosmos}`);
    expect(res.status).to.equal(404);
    expect(res.body).to.deep.equal({ code: 5, message: `tx not found: ${cosmos}`, details: [] });
    const bad = await t.api.get('/indexer/tx/v1/evm-txs/0xnothex');
    expect(bad.status).to.equal(400);
    expect(bad.body.message).to.contain('tx_hash').and.contain('0xnothex');
  });
});

describe('the EVM route groups on Move and Wasm', () => {
  const paths = ['/indexer/tx/v1/evm-txs', '/indexer/tx/v1/evm-txs/', '/indexer/tx/v1/evm-txs/by_height/abc',
    '/indexer/tx/v1/evm-txs/by_account/nope?pagination.limit=0', `/indexer/tx/v1/evm-txs/0x${'ab'.repeat(32)}`,
    '/indexer/tx/v1/evm-internal-txs', '/indexer/tx/v1/evm-internal-txs/by_height/7', '/indexer/tx/v1/evm-internal-txs/by_account/x',
    '/indexer/tx/v1/evm-internal-txs/zz?pagination.key=!!', '/Indexer/TX/v1/EVM-Txs'];
  for (const vm of ['move', 'wasm'] as const) {
    it(`answers 404 with the JSON error on ${vm}, whatever the parameters and method`, async () => {
      const t = await makeTestApp(vm);
      for (const p of paths) {
        const res = await t.api.get(p);
        expect(res.status, p).to.equal(404);
        expect(res.headers['content-type'], p).to.match(/^application\/json/);
        expect(res.body.code, p).to.equal(5);
        expect(res.body.details, p).to.deep.equal([]);
        expect(res.body.message, p).to.contain('evm routes are not available on this chain');
      }
      expect((await t.api.post('/indexer/tx/v1/evm-txs')).status).to.equal(404);
    });
  }
});
