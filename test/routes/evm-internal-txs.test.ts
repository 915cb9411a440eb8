import { expect } from 'chai';
import { makeTestApp, TestApp } from '../helpers/app';
import { byLinkCount, EvmModel, INTERNAL_TX_KEYS, InternalRow, loadEvmModel } from './evm-model';
import { reversed } from './model';
import { emptyList, getList, walkKeys } from './pages';

let model: EvmModel | undefined;
async function evmApp(): Promise<{ t: TestApp; m: EvmModel }> {
  const t = await makeTestApp('evm');
  model ??= loadEvmModel(t.dumpDir, t.dump.prefix);
  return { t, m: model };
}

const objs = (rows: InternalRow[]): unknown[] => rows.map((r) => r.obj);

describe('GET /indexer/tx/v1/evm-internal-txs', () => {
  it('returns the newest internal txs first, with numbers for height / index / parent_index and the exact total', async () => {
    const { t, m } = await evmApp();
    expect(m.internals.length).to.be.greaterThan(1000);
    const body = await getList(t, '/indexer/tx/v1/evm-internal-txs?pagination.limit=40', 'internal_txs');
    expect(body.internal_txs).to.deep.equal(objs(reversed(m.internals).slice(0, 40)));
    expect(body.pagination.total).to.equal(String(m.internals.length));
    for (const it of body.internal_txs as Record<string, unknown>[]) {
      expect(Object.keys(it)).to.deep.equal(INTERNAL_TX_KEYS);
      for (const k of ['height', 'parent_index', 'index']) expect(it[k]).to.be.a('number');
    }
  });

  it('serves every hex field even-length (0x0 → 0x00), the top-level output as 0x, parent_index −1 at the top', async () => {
    const { t, m } = await evmApp();
    const body = await getList(t, '/indexer/tx/v1/evm-internal-txs?pagination.limit=1000&pagination.reverse=false', 'internal_txs');
    const served = body.internal_txs as Record<string, string | number>[];
    for (const it of served) {
      for (const k of ['input', 'output', 'value', 'gas', 'gasUsed']) expect(it[k], k).to.match(/^0x([0-9a-f]{2})*$/);
      if (it.index === 0) expect([it.parent_index, it.output]).to.deep.equal([-1, '0x']);
      else expect(it.parent_index).to.be.within(0, (it.index as number) - 1);
    }
    // the dump's tracer quantities include odd lengths, so the padding is exercised
    expect(served.some((it) => it.value === '0x00')).to.equal(true);
    expect(served).to.deep.equal(objs(m.internals.slice(0, 1000)));
  });

  for (const reverse of [true, false]) {
    it(`walks every internal tx exactly once by next_key, reverse=${reverse}, limits 13, 1000`, async () => {
      const { t, m } = await evmApp();
      for (const limit of [13, 1000]) {
        const got = await walkKeys(t, { path: '/indexer/tx/v1/evm-internal-txs', itemsKey: 'internal_txs', limit, reverse, total: m.internals.length });
        expect(got, `limit ${limit}`).to.deep.equal(objs(reverse ? reversed(m.internals) : m.internals));
      }
    });
  }
});

describe('GET /indexer/tx/v1/evm-internal-txs/by_height/:height', () => {
  it('lists the calls of a block in order, with the exact count, and [] for a block without any', async () => {
    const { t, m } = await evmApp();
    const n = new Map<number, number>();
    for (const r of m.internals) n.set(r.height, (n.get(r.height) ?? 0) + 1);
    const [h, count] = [...n.entries()].sort((a, b) => b[1] - a[1])[0];
    const rows = m.internals.filter((r) => r.height === h);
    expect(rows.length).to.equal(count);
    const got = await walkKeys(t, { path: `/indexer/tx/v1/evm-internal-txs/by_height/${h}`, itemsKey: 'internal_txs', limit: 4, reverse: false, total: count });
    expect(got).to.deep.equal(objs(rows));
    const none = t.dump.blocks.find((b) => !n.has(b.height)) as { height: number };
    expect(await getList(t, `/indexer/tx/v1/evm-internal-txs/by_height/${none.height}`, 'internal_txs')).to.deep.equal(emptyList('internal_txs'));
  });
});

describe('GET /indexer/tx/v1/evm-internal-txs/by_account/:account', () => {
  it('walks the calls linked to an account (from, to, address-shaped ABI words of the input) in both orders', async () => {
    const { t, m } = await evmApp();
    const [hex, n] = byLinkCount(m.internals)[0];
    const rows = m.internals.filter((r) => r.accounts.has(hex));
    for (const reverse of [true, false]) {
      const got = await walkKeys(t, { path: `/indexer/tx/v1/evm-internal-txs/by_account/0x${hex.toUpperCase()}`, itemsKey: 'internal_txs', limit: 9, reverse, total: n });
      expect(got).to.deep.equal(objs(reverse ? reversed(rows) : rows));
    }
    // an account only named inside an input word (neither from nor to of that call)
    const word = m.internals.find((r) => [...r.accounts].some((a) => `0x${a}` !== r.obj.from && `0x${a}` !== r.obj.to)) as InternalRow;
    const a = [...word.accounts].find((x) => `0x${x}` !== word.obj.from && `0x${x}` !== word.obj.to) as string;
    const body = await getList(t, `/indexer/tx/v1/evm-internal-txs/by_account/0x${a}?pagination.limit=1000`, 'internal_txs');
    expect(body.internal_txs).to.deep.include(word.obj);
  });

  it('answers an empty list for an unknown account', async () => {
    const { t } = await evmApp();
    expect(await getList(t, `/indexer/tx/v1/evm-internal-txs/by_account/0x${'34'.repeat(20)}`, 'internal_txs')).to.deep.equal(emptyList('internal_txs'));
  });
});

describe('GET /indexer/tx/v1/evm-internal-txs/:tx_hash', () => {
  it('lists the call tree of an EVM tx depth-first with reverse=false, paged by next_key', async () => {
    const { t, m } = await evmApp();
    const n = new Map<string, number>();
    for (const r of m.internals) n.set(r.hash, (n.get(r.hash) ?? 0) + 1);
    const [hash, count] = [...n.entries()].sort((a, b) => b[1] - a[1])[0];
    expect(count).to.be.greaterThan(3);
    const rows = m.internals.filter((r) => r.hash === hash);
    const got = await walkKeys(t, { path: `/indexer/tx/v1/evm-internal-txs/${hash}`, itemsKey: 'internal_txs', limit: 2, reverse: false, total: count });
    expect(got).to.deep.equal(objs(rows));
    expect(rows.map((r) => r.obj.index)).to.deep.equal([...Array(count).keys()]);
  });

  it('answers 200 with an empty list for a known EVM tx whose trace failed (no rows)', async () => {
    const { t, m } = await evmApp();
    const failed = m.txs.filter((r) => r.failed);
    expect(failed.length).to.be.greaterThan(0);
    const traced = new Set(m.internals.map((r) => r.hash));
    for (const f of failed) expect(traced.has(f.hash), f.hash).to.equal(false);
    expect(await getList(t, `/indexer/tx/v1/evm-internal-txs/${failed[0].hash}`, 'internal_txs')).to.deep.equal(emptyList('internal_txs'));
  });

  it('answers 404 "transaction not found" for an unknown hash; checks pagination before the hash (as rollytics)', async () => {
    const { t } = await evmApp();
    const unknown = `0x${'cd'.repeat(32)}`;
    const res = await t.api.get(`/indexer/tx/v1/evm-internal-txs/${unknown}`);
    expect(res.status).to.equal(404);
    expect(res.body).to.deep.equal({ code: 5, message: `transaction not found: ${unknown}`, details: [] });
    const both = await t.api.get('/indexer/tx/v1/evm-internal-txs/nothex?pagination.key=%25%25');
    expect(both.status).to.equal(400);
    expect(both.body.message).to.contain('pagination.key');
    const hashOnly = await t.api.get('/indexer/tx/v1/evm-internal-txs/nothex');
    expect(hashOnly.status).to.equal(400);
    expect(hashOnly.body.message).to.contain('tx_hash').and.contain('nothex');
  });
});

describe('GET /status on EVM', () => {
  it('reports internal_tx_height by rollytics\' rule from the internal txs', async () => {
    const { t, m } = await evmApp();
    const top = Math.max(...m.internals.map((r) => r.height));
    const later = t.dump.blocks.some((b) => b.height > top && b.txCount > 0);
    const want = later ? top : Math.max(...t.dump.blocks.map((b) => b.height));
    const res = await t.api.get('/status');
    expect(res.body.internal_tx_height).to.equal(want);
    expect(Object.keys(res.body)).to.deep.equal(['version', 'commit_hash', 'chain_id', 'height', 'internal_tx_height', 'rich_list_height']);
  });
});
