/**
 * The warm-up of a served file (src/snapshot/warm.ts): the account index's and rows' pages read
 * before a file is served — at a holder's open and before a new file is swapped in — bounded by
 * its budget, reading and changing nothing a request sees.
 */
import { expect } from 'chai';
import { copyFileSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SnapshotHolder } from '../../src/snapshot/holder';
import { openSnapshot } from '../../src/snapshot/open';
import { warmVersions, warmVersionsAsync } from '../../src/snapshot/warm';
import { DEMO } from '../helpers/serve';

describe('snapshot warm-up (src/snapshot/warm.ts)', () => {
  it('reads the whole account index and rows of a demo chain within its budget', async () => {
    const db = new Database(DEMO('wasm'), { readonly: true });
    try {
      const w = warmVersions(db);
      expect(w.complete).to.equal(true);
      expect(w.ms).to.be.above(0);
      expect((await warmVersionsAsync(db)).complete).to.equal(true);
    } finally {
      db.close();
    }
  });

  it('stops at its budget: a chain too big for it is read in part (the lookups read the rest)', async () => {
    const db = new Database(DEMO('wasm'), { readonly: true });
    try {
      // one step runs before the budget is looked at; the demo's index and rows take more than one
      expect(warmVersions(db, 0).complete).to.equal(false);
      expect((await warmVersionsAsync(db, 0)).complete).to.equal(false);
    } finally {
      db.close();
    }
  });

  it('an empty accounts table is a complete warm-up', () => {
    const db = new Database(':memory:');
    try {
      db.exec('CREATE TABLE accounts (id INTEGER PRIMARY KEY, addr BLOB NOT NULL, tx_count INTEGER NOT NULL DEFAULT 0); CREATE UNIQUE INDEX accounts_by_addr ON accounts (addr)');
      expect(warmVersions(db).complete).to.equal(true);
    } finally {
      db.close();
    }
  });

  it('a holder warms the file it opens and each new file before it is swapped in, and the versions are what a fresh open reads', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'indexer-api-warm-'));
    const file = join(tmp, 'chain.sqlite');
    copyFileSync(DEMO('wasm'), file);
    const holder = SnapshotHolder.open(file);
    try {
      const first = holder.warmed;
      expect(first?.complete).to.equal(true);
      // a copy renamed over the path: another inode, warmed before the swap
      copyFileSync(DEMO('wasm'), join(tmp, 'next.sqlite'));
      renameSync(join(tmp, 'next.sqlite'), file);
      expect(await holder.reload('test')).to.equal(true);
      expect(holder.warmed).to.not.equal(first);
      expect(holder.warmed?.complete).to.equal(true);
      const served = holder.current();
      const fresh = openSnapshot(DEMO('wasm'));
      try {
        const addrs = (fresh.db.prepare('SELECT lower(hex(addr)) FROM accounts ORDER BY id LIMIT 50').pluck().all() as string[]);
        expect(addrs.length).to.be.above(0);
        for (const a of addrs) expect(served?.versions.of(`a:${a}`)).to.equal(fresh.versions.of(`a:${a}`));
      } finally {
        fresh.close();
      }
    } finally {
      holder.close();
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
