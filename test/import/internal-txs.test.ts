import { expect } from 'chai';
import { cpSync, mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runImport } from '../../src/import/run';
import { lines, write } from './helpers/dump-files';
import { demoDump, Served, serveSnapshot } from '../helpers/same-answers';

/**
 * An EVM source whose internal-tx indexing is off (rollytics' internal-tx extension disabled)
 * answers 404 on the whole evm-internal-txs group; its replica — a snapshot of its dump, and a
 * crawl of that snapshot's API — answers 404 there too, and its doc.json does not list the group
 * (docs/api-contract.md#evm-internal-tx). Real files, real servers on 127.0.0.1.
 */
describe('import: an EVM source without internal-tx indexing', function () {
  this.timeout(300_000);
  const work = mkdtempSync(join(tmpdir(), 'indexer-api-itx-'));
  const served: Served[] = [];
  after(async () => {
    for (const s of served) await s.close();
    rmSync(work, { recursive: true, force: true });
  });

  async function get(s: Served, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
    const r = await fetch(s.url + path);
    return { status: r.status, body: JSON.parse(await r.text()) as Record<string, unknown> };
  }

  /** What a replica of such a source answers: 404 on every evm-internal-txs path, evm-txs as usual, no internal paths in doc.json. */
  async function expectAsTheSource(s: Served): Promise<void> {
    const hash = ((await get(s, '/indexer/tx/v1/evm-txs?pagination.limit=1')).body.txs as { transactionHash: string }[])[0].transactionHash;
    for (const path of ['/indexer/tx/v1/evm-internal-txs', '/indexer/tx/v1/evm-internal-txs/by_height/1',
      '/indexer/tx/v1/evm-internal-txs/by_account/0x1', `/indexer/tx/v1/evm-internal-txs/${hash}`, '/indexer/tx/v1/EVM-INTERNAL-TXS?pagination.limit=x']) {
      const r = await get(s, path);
      expect(r.status, path).to.equal(404);
      expect(r.body.message, path).to.contain('evm routes are not available on this chain');
    }
    expect((await get(s, `/indexer/tx/v1/evm-txs/${hash}`)).status).to.equal(200);
    const status = (await get(s, '/status')).body;
    expect(status).to.not.have.property('internal_tx_height');
    const doc = (await get(s, '/swagger/doc.json')).body as { paths: Record<string, unknown> };
    const paths = Object.keys(doc.paths);
    expect(paths.filter((p) => p.startsWith('/indexer/tx/v1/evm-internal-txs'))).to.deep.equal([]);
    expect(paths.filter((p) => p.startsWith('/indexer/tx/v1/evm-txs'))).to.have.length(4);
  }

  it('a dump saying evm_internal_txs: false is served with 404s there; a crawl of it records the same and answers the same', async () => {
    const dir = join(work, 'dump');
    cpSync(await demoDump('evm'), dir, { recursive: true });
    const meta = JSON.parse(lines(dir, 'meta')[0]) as Record<string, unknown>;
    delete meta.internal_tx_height;
    write(dir, 'meta', [JSON.stringify({ ...meta, evm_internal_txs: false })]);
    unlinkSync(join(dir, 'evm_internal_txs.ndjson'));
    const source = join(work, 'source.sqlite');
    await runImport({ fromDump: dir, out: source, force: false, quiet: true, json: false });
    const s = await serveSnapshot(source);
    served.push(s);
    expect(s.snapshot.meta.evmInternalTxs).to.equal(false);
    await expectAsTheSource(s);

    // a replica crawled from that API: it finds the group answering 404 and records it
    const replica = join(work, 'replica.sqlite');
    await runImport({ fromApi: s.url, out: replica, force: false, quiet: true, json: false, concurrency: 4 });
    const r = await serveSnapshot(replica);
    served.push(r);
    expect(r.snapshot.meta.evmInternalTxs).to.equal(false);
    await expectAsTheSource(r);
  });

  it('a crawl of a source that indexes them records that it does (the demo EVM chain)', async () => {
    const source = join(work, 'demo.sqlite');
    await runImport({ fromDump: await demoDump('evm'), out: source, force: false, quiet: true, json: false });
    const s = await serveSnapshot(source);
    served.push(s);
    const replica = join(work, 'demo-replica.sqlite');
    await runImport({ fromApi: s.url, out: replica, force: false, quiet: true, json: false, concurrency: 4, toHeight: 50 });
    const r = await serveSnapshot(replica);
    served.push(r);
    expect(r.snapshot.meta.evmInternalTxs).to.equal(true);
    expect((await get(r, '/indexer/tx/v1/evm-internal-txs?pagination.limit=1')).status).to.equal(200);
  });

  it('evm_internal_txs is refused on a Move or Wasm dump, naming the field', async () => {
    const dir = join(work, 'wasm-dump');
    cpSync(await demoDump('wasm'), dir, { recursive: true });
    const meta = JSON.parse(lines(dir, 'meta')[0]) as Record<string, unknown>;
    write(dir, 'meta', [JSON.stringify({ ...meta, evm_internal_txs: false })]);
    let err: Error | undefined;
    try { await runImport({ fromDump: dir, out: join(work, 'wasm.sqlite'), force: false, quiet: true, json: false }); } catch (e) { err = e as Error; }
    expect(err?.message).to.match(/meta\.ndjson:1: evm_internal_txs: is for EVM chains \(this is a wasm chain\)/);
  });
});
