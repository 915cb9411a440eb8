import { expect } from 'chai';
import { makeTestApp, VMS } from '../helpers/app';
import { getList, qs, rollyticsKey } from './pages';

const BLOCK_KEYS = ['chain_id', 'height', 'hash', 'block_time', 'timestamp', 'gas_used', 'gas_wanted', 'tx_count', 'total_fee', 'proposer'];

describe('GET /indexer/block/v1/blocks', () => {
  for (const vm of VMS) {
    it(`returns the 100 newest ${vm} blocks by default, as the dump describes them`, async () => {
      const t = await makeTestApp(vm);
      const body = await getList(t, '/indexer/block/v1/blocks', 'blocks');
      const expected = t.dump.blocks.slice(-100).reverse().map((b) => b.obj);
      expect(body.blocks).to.deep.equal(expected);
      expect(body.pagination.previous_key).to.equal(null);
      expect(body.pagination.next_key).to.be.a('string');
      expect(body.pagination.total).to.equal(String(t.dump.blocks.length));
    });
  }

  it('returns the oldest blocks first with pagination.reverse=false', async () => {
    const t = await makeTestApp('wasm');
    const body = await getList(t, '/indexer/block/v1/blocks?pagination.reverse=false&pagination.limit=5', 'blocks');
    expect(body.blocks).to.deep.equal(t.dump.blocks.slice(0, 5).map((b) => b.obj));
  });

  it('serves every numeric field as a decimal string, the hash upper-case, whole-second timestamps and the keys in order', async () => {
    const t = await makeTestApp('move', { validateResponses: false });
    const res = await t.api.get('/indexer/block/v1/blocks?pagination.limit=1000');
    expect(res.status).to.equal(200);
    const blocks = res.body.blocks as Record<string, unknown>[];
    expect(blocks).to.have.length(t.dump.blocks.length);
    for (const b of blocks) {
      expect(Object.keys(b)).to.deep.equal(BLOCK_KEYS);
      for (const k of ['height', 'block_time', 'gas_used', 'gas_wanted', 'tx_count']) expect(b[k]).to.be.a('string').and.match(/^[0-9]+$/);
      expect(b.hash).to.match(/^[0-9A-F]{64}$/);
      expect(b.timestamp).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      expect(Object.keys(b.proposer as object)).to.deep.equal(['moniker', 'identity', 'operator_address']);
      expect((b.proposer as { identity: string }).identity).to.equal('');
    }
    expect(res.text).to.match(/^\{"blocks":\[\{"chain_id":"[^"]+","height":"400","hash":"/);
  });

  it('serves total_fee null for a block without txs and an array for a block with txs', async () => {
    const t = await makeTestApp('evm');
    const empty = t.dump.blocks.find((b) => b.txCount === 0);
    const busy = t.dump.blocks.find((b) => b.txCount > 0);
    expect(empty, 'the demo chain has empty blocks').to.not.equal(undefined);
    for (const b of [empty, busy]) {
      const res = await t.api.get(`/indexer/block/v1/blocks/${b?.height}`);
      expect(res.body).to.deep.equal({ block: b?.obj });
    }
    const res = await t.api.get(`/indexer/block/v1/blocks/${empty?.height}`);
    expect(res.text).to.contain('"tx_count":"0","total_fee":null,');
  });

  it('answers total "0" with pagination.count_total=false', async () => {
    const t = await makeTestApp('move');
    const body = await getList(t, '/indexer/block/v1/blocks?pagination.count_total=false&pagination.limit=3', 'blocks');
    expect(body.blocks).to.deep.equal(t.dump.blocks.slice(-3).reverse().map((b) => b.obj));
    expect(body.pagination.total).to.equal('0');
  });

  it('accepts pagination.offset=0 beside a key, as Celatone sends it', async () => {
    const t = await makeTestApp('move');
    const first = await getList(t, '/indexer/block/v1/blocks?pagination.limit=5', 'blocks');
    const key = first.pagination.next_key as string;
    const withOffset = await getList(t, `/indexer/block/v1/blocks${qs({ 'pagination.key': key, 'pagination.limit': 5, 'pagination.offset': 0, 'pagination.reverse': true })}`, 'blocks');
    expect(withOffset.blocks).to.deep.equal(t.dump.blocks.slice(-10, -5).reverse().map((b) => b.obj));
  });

  it('lets a key beat pagination.offset', async () => {
    const t = await makeTestApp('move');
    const first = await getList(t, '/indexer/block/v1/blocks?pagination.limit=5', 'blocks');
    const key = first.pagination.next_key as string;
    const body = await getList(t, `/indexer/block/v1/blocks${qs({ 'pagination.key': key, 'pagination.limit': 5, 'pagination.offset': 200 })}`, 'blocks');
    expect(body.blocks).to.deep.equal(t.dump.blocks.slice(-10, -5).reverse().map((b) => b.obj));
  });

  it('accepts rollytics keys: base64 of a decimal offset and {"height":n}', async () => {
    const t = await makeTestApp('wasm');
    const desc = t.dump.blocks.slice().reverse().map((b) => b.obj);
    const byOffset = await getList(t, `/indexer/block/v1/blocks${qs({ 'pagination.key': rollyticsKey('100'), 'pagination.limit': 4 })}`, 'blocks');
    expect(byOffset.blocks).to.deep.equal(desc.slice(100, 104));
    const plainOffset = await getList(t, '/indexer/block/v1/blocks?pagination.offset=100&pagination.limit=4', 'blocks');
    expect(plainOffset.blocks).to.deep.equal(byOffset.blocks);
    const byHeight = await getList(t, `/indexer/block/v1/blocks${qs({ 'pagination.key': rollyticsKey({ height: 250 }), 'pagination.limit': 3 })}`, 'blocks');
    expect(byHeight.blocks).to.deep.equal(t.dump.blocks.filter((b) => b.height < 250).slice(-3).reverse().map((b) => b.obj));
    const ascending = await getList(t, `/indexer/block/v1/blocks${qs({ 'pagination.key': rollyticsKey({ height: 250 }), 'pagination.limit': 3, 'pagination.reverse': false })}`, 'blocks');
    expect(ascending.blocks).to.deep.equal(t.dump.blocks.filter((b) => b.height > 250).slice(0, 3).map((b) => b.obj));
  });

  it('returns previous_key as rollytics does (offset − limit once offset ≥ limit) or null', async () => {
    const t = await makeTestApp('move');
    const body = await getList(t, '/indexer/block/v1/blocks?pagination.offset=200&pagination.limit=100', 'blocks');
    expect([null, rollyticsKey('100')]).to.deep.include(body.pagination.previous_key);
    const start = await getList(t, '/indexer/block/v1/blocks?pagination.offset=50&pagination.limit=100', 'blocks');
    expect(start.pagination.previous_key).to.equal(null);
  });

  it('accepts pagination.limit 1 and 1000 and rejects 0 and 1001 with 400', async () => {
    const t = await makeTestApp('move');
    expect((await getList(t, '/indexer/block/v1/blocks?pagination.limit=1', 'blocks')).blocks).to.have.length(1);
    expect((await getList(t, '/indexer/block/v1/blocks?pagination.limit=1000', 'blocks')).blocks).to.have.length(t.dump.blocks.length);
    for (const limit of ['0', '1001']) {
      const res = await t.api.get(`/indexer/block/v1/blocks?pagination.limit=${limit}`);
      expect(res.status, limit).to.equal(400);
      expect(res.body.code).to.equal(3);
      expect(res.body.message).to.contain('pagination.limit').and.contain(limit);
    }
  });
});

describe('GET /indexer/block/v1/blocks/:height', () => {
  for (const vm of VMS) {
    it(`returns {"block": Block} for the first, a middle and the last ${vm} block`, async () => {
      const t = await makeTestApp(vm);
      const blocks = t.dump.blocks;
      for (const b of [blocks[0], blocks[Math.floor(blocks.length / 2)], blocks[blocks.length - 1]]) {
        const res = await t.api.get(`/indexer/block/v1/blocks/${b.height}`);
        expect(res.status).to.equal(200);
        expect(res.body).to.deep.equal({ block: b.obj });
      }
    });
  }

  it('returns 404 when no block is indexed at the height', async () => {
    const t = await makeTestApp('move');
    const height = t.dump.blocks[t.dump.blocks.length - 1].height + 1;
    const res = await t.api.get(`/indexer/block/v1/blocks/${height}`);
    expect(res.status).to.equal(404);
    expect(res.headers['content-type']).to.match(/^application\/json/);
    expect(res.body).to.have.keys('code', 'message', 'details');
    expect(res.body.code).to.equal(5);
    expect(res.body.details).to.deep.equal([]);
  });

  // 0x10, 1e3, " 7" and Infinity are not decimal integers: rollytics (reference §2.2, base-10
  // ParseInt) answers 400, and serving block 16 for "0x10" is a wrong answer, not a lenient one.
  for (const bad of ['abc', '0', '-1', '1.5', '99999999999999999999', 'Infinity', '1e3', '0x10', ' 7']) {
    it(`returns 400 naming the height when it is ${JSON.stringify(bad)}`, async () => {
      const t = await makeTestApp('move');
      const res = await t.api.get(`/indexer/block/v1/blocks/${encodeURIComponent(bad)}`);
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal(3);
      expect(res.body.details).to.deep.equal([]);
      expect(res.body.message).to.contain('height').and.contain(bad);
    });
  }

  it('names the int64 bound as the integer it is, not a float (99999999999999999999 → at most 9223372036854775807)', async () => {
    const t = await makeTestApp('move');
    for (const path of ['/indexer/block/v1/blocks/99999999999999999999', '/indexer/tx/v1/txs/by_height/9223372036854775808']) {
      const res = await t.api.get(path);
      expect(res.status, res.text).to.equal(400);
      expect(res.body.message, path).to.match(/must be <= 9223372036854775807\)$/);
      expect(res.body.message).to.not.contain('9223372036854776000');
    }
  });
});
