import { expect } from 'chai';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { CollectionsAudit } from '../../src/follow/collections-audit';
import { readCollectionStates } from '../../src/sources/api/nft-state';
import { HttpClient } from '../../src/sources/http';
import { resolveHttp } from '../../src/sources/options';
import { startServe } from '../helpers/serve';

const DEMO = (vm: string): string => join(__dirname, '..', '..', '..', 'fixtures', 'demo', `${vm}.sqlite`);

/**
 * The collections audit (docs/follow.md "Cost") reads an API's whole collection list by next_key
 * and compares counts and names with ours: an unchanged copy shows no difference, and each kind
 * of difference is found and handed to the next batch.
 */
describe('follow: the collections audit against a real server (#22)', function () {
  this.timeout(60_000);
  for (const vm of ['move', 'wasm', 'evm'] as const) {
    it(`${vm}: finds exactly the collections whose count or name differ, or that one side lacks`, async () => {
      const dir = mkdtempSync(join(tmpdir(), `indexer-api-audit-${vm}-`));
      const serve = await startServe(['--db', DEMO(vm)]);
      try {
        const ours = join(dir, 'ours.sqlite');
        copyFileSync(DEMO(vm), ours);
        const db = new Database(ours);
        const prefix = db.prepare("SELECT value FROM meta WHERE key = 'bech32_prefix'").pluck().get() as string;
        const addrs = (db.prepare('SELECT lower(hex(addr)) FROM collections ORDER BY addr').pluck().all() as string[]);
        expect(addrs.length, 'collections in the demo').to.be.at.least(3);
        const http = new HttpClient(serve.url, resolveHttp({ concurrency: 1, retries: 0 }));
        const rechecked: string[] = [];
        const audit = new CollectionsAudit({
          db: ours, intervalMs: 1000, maxBackoffMs: 1000, log: () => undefined, caughtUp: () => true,
          recheck: (hexes) => rechecked.push(...hexes),
          // pages of 2: the walk by next_key is exercised on the demo's few collections
          lister: { describe: `api ${serve.url}`, read: () => readCollectionStates(http, serve.url, prefix, 2) },
        });
        expect(await audit.auditOnce(), 'an unchanged copy').to.deep.equal([]);

        const [counted, renamed, dropped] = addrs;
        db.prepare('UPDATE collections SET nft_count = nft_count + 1 WHERE addr = ?').run(Buffer.from(counted, 'hex'));
        db.prepare("UPDATE collections SET name = name || ' (old)' WHERE addr = ?").run(Buffer.from(renamed, 'hex'));
        db.prepare('DELETE FROM collections WHERE addr = ?').run(Buffer.from(dropped, 'hex'));
        const extra = 'ee'.repeat(addrs[0].length / 2);
        db.prepare(`INSERT INTO collections (addr, height, name, origin_name, norm_name, norm_origin_name, creator_id, nft_count, timestamp, json)
          SELECT ?, height, 'gone', '', 'gone', '', creator_id, 0, timestamp, json FROM collections LIMIT 1`).run(Buffer.from(extra, 'hex'));
        db.close();
        const off = await audit.auditOnce();
        expect([...off].sort()).to.deep.equal([counted, renamed, dropped, extra].sort());
        expect([...rechecked].sort()).to.deep.equal([...off].sort());
        expect(audit.state).to.include({ audits: 2, mismatches: 4 });
      } finally {
        await serve.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
