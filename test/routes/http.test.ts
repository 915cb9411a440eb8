import { expect } from 'chai';
import { makeTestApp } from '../helpers/app';
import { loadOpenApi } from '../../src/serve/openapi';

describe('HTTP: paths as clients write them', () => {
  it('tolerates a doubled leading slash (Celatone joins base URL and path untrimmed)', async () => {
    const t = await makeTestApp('move');
    const block = t.dump.blocks[4];
    for (const path of [`//indexer/block/v1/blocks/${block.height}`, '//status']) {
      const res = await t.api.get(path);
      expect(res.status, path).to.equal(200);
    }
    expect((await t.api.get(`//indexer/block/v1/blocks/${block.height}`)).body).to.deep.equal({ block: block.obj });
  });

  it('tolerates one trailing slash', async () => {
    const t = await makeTestApp('wasm');
    const block = t.dump.blocks[7];
    expect((await t.api.get(`/indexer/block/v1/blocks/${block.height}/`)).body).to.deep.equal({ block: block.obj });
    const list = await t.api.get('/indexer/nft/v1/collections/');
    expect(list.status).to.equal(200);
    expect(list.body.collections).to.have.length(t.dump.collections.length);
    expect((await t.api.get('/status/')).status).to.equal(200);
  });

  it('answers HEAD like GET, with no body', async () => {
    const t = await makeTestApp('move');
    for (const path of ['/status', '/indexer/block/v1/blocks/1', '/indexer/tx/v1/txs?pagination.limit=2']) {
      const res = await t.api.head(path);
      expect(res.status, path).to.equal(200);
      expect(res.headers['content-type'], path).to.match(/^application\/json/);
      expect(res.text ?? '', path).to.equal('');
    }
    expect((await t.api.head('/indexer/block/v1/blocks/100000')).status).to.equal(404);
  });

  it('sends Access-Control-Allow-Origin: * to browsers by default', async () => {
    const t = await makeTestApp('evm');
    for (const path of ['/status', '/indexer/tx/v1/txs/by_account/0x0000000000000000000000000000000000000001', '/indexer/block/v1/blocks/0']) {
      const res = await t.api.get(path).set('Origin', 'https://scan.example');
      expect(res.headers['access-control-allow-origin'], path).to.equal('*');
    }
  });

  it('answers a CORS preflight for GET', async () => {
    const t = await makeTestApp('evm');
    const res = await t.api.options('/indexer/nft/v1/collections')
      .set('Origin', 'https://scan.example')
      .set('Access-Control-Request-Method', 'GET')
      .set('Access-Control-Request-Headers', 'accept');
    expect(res.status).to.be.within(200, 204);
    expect(res.headers['access-control-allow-origin']).to.equal('*');
    expect(res.headers['access-control-allow-methods']).to.match(/\bGET\b/);
  });

  it('serves the enforced OpenAPI document at /swagger/doc.json: whole on EVM, without the /evm- paths on Move and Wasm (as rollytics)', async () => {
    const whole = JSON.parse(JSON.stringify(loadOpenApi())) as { paths: Record<string, unknown>; tags: { name: string }[] };
    const evmPaths = Object.keys(whole.paths).filter((p) => p.startsWith('/indexer/tx/v1/evm-'));
    expect(evmPaths).to.have.length(8);
    const evm = await (await makeTestApp('evm')).api.get('/swagger/doc.json');
    expect(evm.status).to.equal(200);
    expect(evm.headers['content-type']).to.match(/^application\/json/);
    expect(evm.body).to.deep.equal(whole);
    for (const vm of ['move', 'wasm'] as const) {
      const t = await makeTestApp(vm);
      const res = await t.api.get('/swagger/doc.json');
      expect(res.status).to.equal(200);
      const doc = res.body as typeof whole;
      expect(Object.keys(doc.paths)).to.deep.equal(Object.keys(whole.paths).filter((p) => !evmPaths.includes(p)));
      expect(doc.tags.map((x) => x.name)).to.not.include('evm');
      // and the validator still has them: the EVM groups answer the JSON 404, as before
      for (const p of ['/indexer/tx/v1/evm-txs', '/indexer/tx/v1/evm-internal-txs/by_height/1?pagination.limit=abc']) {
        const r = await t.api.get(p);
        expect(r.status, p).to.equal(404);
        expect(r.body.message).to.contain('evm routes are not available on this chain');
      }
    }
  });

  it('serves the Swagger UI at /swagger and at /swagger/index.html (where rollytics mounts it)', async () => {
    const t = await makeTestApp('wasm');
    const a = await t.api.get('/swagger');
    const b = await t.api.get('/swagger/index.html');
    expect(a.status).to.equal(200);
    expect(b.status).to.equal(200);
    expect(b.headers['content-type']).to.match(/^text\/html/);
    expect(b.text).to.equal(a.text);
    expect(b.text).to.contain('/swagger/doc.json');
    expect((await t.api.post('/swagger/index.html')).status).to.equal(405);
  });

  it('answers application/json with a compact body and no trailing newline', async () => {
    const t = await makeTestApp('move', { validateResponses: false });
    const res = await t.api.get('/indexer/block/v1/blocks?pagination.limit=2');
    expect(res.headers['content-type']).to.match(/^application\/json/);
    expect(res.text).to.equal(JSON.stringify(JSON.parse(res.text)));
  });
});
