/**
 * Real Initia txs (test/fixtures/real/README.md: L1 Move, a Wasm rollup, an EVM rollup, from
 * public repositories), imported from their dump and served through every tx route. Accounts,
 * signers and message types are re-derived independently (test/helpers/dump.ts, by rollytics'
 * rules) and each list must hold exactly the txs those rules give; every tx is served with the
 * bytes rollytics serves (its REST tx and events in jsonb key order). Where a message names its
 * sender, the signer derived from the public key must be that sender: real keys, real addresses.
 */
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runImport } from '../../src/import/run';
import { bech32Of, canonical } from '../helpers/address';
import { DumpModel, loadDump, TxRow } from '../helpers/dump';
import { REAL_VMS, realDir, realDumpFiles, realResponses, rollyticsTx } from './real-corpus';
import { serveSnapshot, Served } from '../helpers/same-answers';

describe('real Initia txs, imported and served', function () {
  this.timeout(120_000);
  const work = mkdtempSync(join(tmpdir(), 'indexer-api-real-'));
  after(() => rmSync(work, { recursive: true, force: true }));

  for (const vm of REAL_VMS) {
    describe(vm, () => {
      const dumpDir = join(realDir(vm), 'dump');
      let served: Served;
      let d: DumpModel;
      const get = async (path: string): Promise<{ status: number; text: string }> => {
        const res = await fetch(`${served.url}${path}`);
        return { status: res.status, text: await res.text() };
      };
      const list = async (path: string): Promise<string[]> => {
        const r = await get(path);
        expect(r.status, `${path}: ${r.text}`).to.equal(200);
        const body = JSON.parse(r.text) as { txs: { txhash: string }[]; pagination: { next_key: string | null; total: string } };
        expect(body.pagination.next_key, path).to.equal(null);
        expect(Number(body.pagination.total), path).to.equal(body.txs.length);
        return body.txs.map((t) => t.txhash);
      };
      /** hashes of the rows, newest first (every list's default order) */
      const hashes = (rows: TxRow[]): string[] => [...rows].sort((a, b) => b.sequence - a.sequence).map((t) => t.hash.toUpperCase());

      before(async () => {
        const out = join(work, `${vm}.sqlite`);
        await runImport({ fromDump: dumpDir, out, force: true, quiet: true, json: false });
        served = await serveSnapshot(out);
        d = loadDump(dumpDir);
      });
      after(async () => { await served.close(); });

      it('the committed dump is the conversion of the committed sources', () => {
        const want = realDumpFiles(vm);
        for (const name of ['meta', 'blocks', 'txs'] as const) {
          expect(readFileSync(join(dumpDir, `${name}.ndjson`), 'utf8'), `${name}.ndjson`).to.equal(want[name]);
        }
        expect(d.txs.length).to.equal(realResponses(vm).length);
      });

      it('serves every tx with the bytes rollytics serves, and the content of its source', async () => {
        for (const { tx_response: src } of realResponses(vm)) {
          const r = await get(`/indexer/tx/v1/txs/${src.txhash}`);
          expect(r.status, src.txhash).to.equal(200);
          expect(r.text, src.txhash).to.equal(JSON.stringify({ tx: rollyticsTx(src) }));
          const got = (JSON.parse(r.text) as { tx: Record<string, unknown> }).tx;
          const { '@type': any, ...restTx } = src.tx;
          expect(any, 'the source is the LCD form (an Any)').to.equal('/cosmos.tx.v1beta1.Tx');
          expect(got.tx).to.deep.equal(restTx);
          expect(got.events).to.deep.equal(src.events);
          for (const k of ['txhash', 'height', 'code', 'codespace', 'data', 'raw_log', 'info', 'gas_wanted', 'gas_used', 'timestamp', 'logs'] as const) {
            expect(got[k], `${src.txhash} ${k}`).to.deep.equal(src[k]);
          }
          // and inside a list: the same object
          const page = await get(`/indexer/tx/v1/txs/by_height/${src.height}`);
          expect(page.text).to.include(JSON.stringify(rollyticsTx(src)));
        }
      });

      it('derives each signer from a real public key as the address that sent the tx', () => {
        let checked = 0;
        for (const t of d.txs) {
          const messages = ((t.obj.tx as { body: { messages: Record<string, unknown>[] } }).body.messages);
          const named = messages.map((m) => m.from_address ?? m.sender ?? m.granter).find((a) => typeof a === 'string') as string | undefined;
          if (named === undefined) continue;
          expect(t.signer, t.hash).to.equal(canonical(named, d.prefix)?.toString('hex'));
          checked++;
        }
        expect(checked, 'txs whose message names the sender').to.be.greaterThan(0);
      });

      it('lists txs, by height, by account (is_signer too) and by message type exactly as rollytics\' rules give', async () => {
        expect(await list('/indexer/tx/v1/txs?pagination.limit=1000')).to.deep.equal(hashes(d.txs));
        for (const h of new Set(d.txs.map((t) => t.height))) {
          expect(await list(`/indexer/tx/v1/txs/by_height/${h}`), `height ${h}`).to.deep.equal(hashes(d.txs.filter((t) => t.height === h)));
        }
        const accounts = new Set(d.txs.flatMap((t) => [...t.accounts]));
        expect(accounts.size, 'accounts derived').to.be.greaterThan(d.txs.length);
        for (const a of accounts) {
          const b32 = bech32Of(Buffer.from(a, 'hex'), d.prefix);
          expect(await list(`/indexer/tx/v1/txs/by_account/${b32}?pagination.limit=1000`), `account ${b32}`).to.deep.equal(hashes(d.txs.filter((t) => t.accounts.has(a))));
          expect(await list(`/indexer/tx/v1/txs/by_account/0x${a}?is_signer=true&pagination.limit=1000`), `signer ${b32}`).to.deep.equal(hashes(d.txs.filter((t) => t.signer === a)));
        }
        for (const m of new Set(d.txs.flatMap((t) => [...t.msgTypes]))) {
          expect(await list(`/indexer/tx/v1/txs?msgs=${encodeURIComponent(m)}`), m).to.deep.equal(hashes(d.txs.filter((t) => t.msgTypes.has(m))));
        }
      });

      it('answers the other routes from the same snapshot', async () => {
        const blocks = JSON.parse((await get('/indexer/block/v1/blocks?pagination.limit=1000')).text) as { blocks: { height: string; tx_count: string }[] };
        expect(blocks.blocks.map((b) => Number(b.height))).to.deep.equal([...new Set(d.txs.map((t) => t.height))].sort((a, b) => b - a));
        for (const path of ['/status', '/indexer/block/v1/avg_blocktime', '/indexer/nft/v1/collections', vm === 'evm' ? '/indexer/richlist/v1/0x1' : '/indexer/richlist/v1/uinit']) {
          expect((await get(path)).status, path).to.equal(200);
        }
        expect((await get('/indexer/tx/v1/evm-txs')).status).to.equal(vm === 'evm' ? 200 : 404);
      });
    });
  }
});
