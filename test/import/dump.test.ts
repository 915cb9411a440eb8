import { expect } from 'chai';
import Database from 'better-sqlite3';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runImport } from '../../src/import/run';
import type { VmType } from '../../src/lib/vm';
import { tableDigests } from '../../src/snapshot/digest';
import { demoDump } from '../helpers/same-answers';

/**
 * `import --from-dump` details that the route tests cannot see: parsing on worker threads gives
 * the same snapshot as parsing on the main thread, and the optional `signer` / `msg_types`
 * fields of txs.ndjson (docs/dump-format.md) override what would be derived from the tx.
 */
describe('import --from-dump', function () {
  this.timeout(300_000);
  const work = mkdtempSync(join(tmpdir(), 'indexer-api-import-dump-'));
  after(() => rmSync(work, { recursive: true, force: true }));

  async function importDump(dir: string, out: string, parseThreads: number): Promise<void> {
    await runImport({ fromDump: dir, out, force: true, quiet: true, json: false, parseThreads });
  }

  for (const vm of ['move', 'wasm', 'evm'] as VmType[]) {
    it(`${vm} demo: parse worker threads and the main thread write identical tables`, async () => {
      const dir = await demoDump(vm);
      const inline = join(work, `${vm}-inline.sqlite`);
      const threaded = join(work, `${vm}-threaded.sqlite`);
      await importDump(dir, inline, 0);
      await importDump(dir, threaded, 3);
      const a = tableDigests(inline);
      const b = tableDigests(threaded);
      expect(a.get('txs')).to.match(/^3000 rows /);
      expect([...b.entries()]).to.deep.equal([...a.entries()]);
    });
  }

  describe('txs.ndjson signer and msg_types given by the source', () => {
    let dir = '';
    let unsigned = 0;
    let retyped = 0;

    before(async () => {
      dir = join(work, 'given');
      cpSync(await demoDump('wasm'), dir, { recursive: true });
      const file = join(dir, 'txs.ndjson');
      const lines = readFileSync(file, 'utf8').split('\n');
      // The 101st tx with a public key loses its signer; the next tx gets message types its body lacks.
      let signed = 0;
      for (let i = 0; i < lines.length; i++) {
        if (!lines[i]) continue;
        const rec = JSON.parse(lines[i]) as Record<string, unknown> & { sequence: number; tx: { tx: unknown } };
        if (unsigned === 0 && JSON.stringify(rec.tx.tx).includes('"public_key"') && ++signed === 101) {
          unsigned = rec.sequence;
          rec.signer = null;
          lines[i] = JSON.stringify(rec);
        } else if (unsigned !== 0 && retyped === 0) {
          retyped = rec.sequence;
          rec.msg_types = ['/test.v1.MsgGiven', 'test.v1.MsgGiven', 'other.v1.MsgAlso'];
          lines[i] = JSON.stringify(rec);
        }
      }
      expect(unsigned).to.be.greaterThan(0);
      expect(retyped).to.be.greaterThan(0);
      writeFileSync(file, lines.join('\n'));
    });

    for (const threads of [0, 2]) {
      it(`are stored as given (parse threads: ${threads}): null signer → no signer row; types without '/' and duplicates`, async () => {
        const out = join(work, `given-${threads}.sqlite`);
        await importDump(dir, out, threads);
        const db = new Database(out, { readonly: true });
        try {
          const n = db.prepare('SELECT count(*) AS n FROM tx_accounts WHERE sequence = ? AND signer = 1').get(unsigned) as { n: number };
          expect(n.n, 'signer: null must not be derived from the public key').to.equal(0);
          const types = db.prepare('SELECT m.name FROM tx_msg_types t JOIN msg_types m ON m.id = t.msg_type_id WHERE t.sequence = ? ORDER BY m.name')
            .pluck().all(retyped);
          expect(types).to.deep.equal(['other.v1.MsgAlso', 'test.v1.MsgGiven']);
          const counts = db.prepare("SELECT tx_count FROM msg_types WHERE name = 'test.v1.MsgGiven'").pluck().get();
          expect(counts).to.equal(1);
        } finally {
          db.close();
        }
      });
    }
  });
});
