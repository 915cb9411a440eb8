import { expect } from 'chai';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { createRequestListener } from '../../src/serve/routing';
import { runImport } from '../../src/import/run';
import { loadOpenApi } from '../../src/serve/openapi';
import { openSnapshot } from '../../src/snapshot/open';
import { makeTestApp, testChain, VMS } from '../helpers/app';
import { appOptions } from '../helpers/app-options';

describe('GET /status', () => {
  for (const vm of VMS) {
    it(`returns the chain id, the indexer build and the heights of the ${vm} snapshot`, async () => {
      const t = await makeTestApp(vm);
      const m = t.dump.meta;
      const expected: Record<string, unknown> = {
        version: m.version ?? 'dev',
        commit_hash: m.commit_hash ?? 'unknown',
        chain_id: m.chain_id,
        height: Number(m.height ?? t.dump.blocks[t.dump.blocks.length - 1].height),
      };
      if (Number(m.internal_tx_height ?? 0) > 0) expected.internal_tx_height = Number(m.internal_tx_height);
      if (Number(m.rich_list_height ?? 0) > 0) expected.rich_list_height = Number(m.rich_list_height);
      const res = await t.api.get('/status');
      expect(res.status).to.equal(200);
      expect(res.headers['content-type']).to.match(/^application\/json/);
      expect(res.body).to.deep.equal(expected);
      // key order and JSON numbers, as rollytics' struct prints them
      expect(Object.keys(res.body)).to.deep.equal(Object.keys(expected));
      expect(res.text).to.match(/"height":[0-9]+[,}]/);
    });
  }

  it('omits rich_list_height and internal_tx_height when they are 0 (Move)', async () => {
    const t = await makeTestApp('move');
    expect(Number(t.dump.meta.rich_list_height ?? 0)).to.equal(0);
    const res = await t.api.get('/status');
    expect(res.body).to.not.have.any.keys('rich_list_height', 'internal_tx_height');
  });

  it("passes rollytics' cleanup-progress fields through after the core fields, in rollytics' order, omitting zeros", async () => {
    const chain = await testChain('evm');
    const work = mkdtempSync(join(tmpdir(), 'indexer-api-status-ext-'));
    try {
      const dir = join(work, 'dump');
      cpSync(chain.dumpDir, dir, { recursive: true });
      const metaFile = join(dir, 'meta.ndjson');
      const meta = JSON.parse(readFileSync(metaFile, 'utf8').split('\n')[0]) as Record<string, unknown>;
      // given in another order than rollytics emits them, one as a decimal string, one 0
      writeFileSync(metaFile, JSON.stringify({
        ...meta, tx_account_cleanup_inserted: -1, tx_account_cleanup_deleted: 0, evm_ret_cleanup_height: '4100', tx_account_cleanup_sequence: 77,
      }) + '\n');
      const file = join(work, 'ext.sqlite');
      await runImport({ fromDump: dir, out: file, force: false, quiet: true, json: false });
      const snapshot = openSnapshot(file);
      try {
        const app = createRequestListener({ snapshots: { current: () => snapshot }, openapi: loadOpenApi(), options: appOptions({ corsOrigin: '*', validateResponses: true }) });
        const res = await request(app).get('/status');
        expect(res.status).to.equal(200);
        const base = (await makeTestApp('evm')).api;
        const core = (await base.get('/status')).text.slice(0, -1);
        expect(res.text).to.equal(core + ',"evm_ret_cleanup_height":4100,"tx_account_cleanup_sequence":77,"tx_account_cleanup_inserted":-1}');
      } finally {
        snapshot.close();
      }
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  it('reports rich_list_height as a number on the EVM demo', async () => {
    const t = await makeTestApp('evm');
    const res = await t.api.get('/status');
    expect(res.body.rich_list_height).to.equal(Number(t.dump.meta.rich_list_height));
    expect(res.body.rich_list_height).to.be.greaterThan(0);
  });
});

describe('GET /indexer/block/v1/avg_blocktime', () => {
  for (const vm of VMS) {
    it(`returns the mean seconds between the last 100 blocks of the ${vm} chain as a JSON number`, async () => {
      const t = await makeTestApp(vm);
      const last = t.dump.blocks.slice(-100);
      const seconds = Number(last[last.length - 1].timeUs - last[0].timeUs) / 1e6 / (last.length - 1);
      const res = await t.api.get('/indexer/block/v1/avg_blocktime');
      expect(res.status).to.equal(200);
      expect(Object.keys(res.body)).to.deep.equal(['avg_block_time']);
      expect(res.body.avg_block_time).to.be.a('number');
      expect(res.body.avg_block_time).to.be.closeTo(seconds, 1e-9);
      expect(res.text).to.match(/^\{"avg_block_time":[0-9.e+-]+\}$/);
    });
  }
});
