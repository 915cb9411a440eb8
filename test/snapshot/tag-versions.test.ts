/**
 * The account lookups of src/snapshot/tag-versions.ts on a file served outside WAL mode: the
 * lookups of one event-loop turn share one read transaction, committed when the turn's I/O is
 * done — so a writer of the file waits at most that turn — and read what autocommit reads.
 */
import { expect } from 'chai';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openSnapshot } from '../../src/snapshot/open';
import { DEMO } from '../helpers/serve';

const nextTurn = (): Promise<void> => new Promise((done) => setImmediate(done));

describe('tag versions: account lookups on a file outside WAL mode', () => {
  let tmp: string;
  let file: string;
  beforeEach(() => {
    tmp = mkdtempSync(join(tmpdir(), 'indexer-api-tag-versions-'));
    file = join(tmp, 'chain.sqlite');
    copyFileSync(DEMO('wasm'), file);
  });
  afterEach(() => rmSync(tmp, { recursive: true, force: true }));

  it('holds one read transaction for the lookups of a turn and ends it after the turn: a writer is refused within it, served after', async () => {
    const s = openSnapshot(file);
    const w = new Database(file, { timeout: 0 });
    try {
      expect(s.db.pragma('journal_mode', { simple: true })).to.equal('delete');
      const addrs = s.db.prepare('SELECT lower(hex(addr)) FROM accounts WHERE tx_count > 0 ORDER BY id LIMIT 3').pluck().all() as string[];
      const before = addrs.map((a) => s.versions.of(`a:${a}`));
      expect(s.db.inTransaction, 'a read transaction for the turn').to.equal(true);
      // within the turn the file's shared lock is held: a write cannot take the file
      expect(() => w.exec("BEGIN IMMEDIATE; UPDATE accounts SET tx_count = tx_count + 1 WHERE id = (SELECT min(id) FROM accounts WHERE tx_count > 0); COMMIT")).to.throw(/locked|busy/i);
      if (w.inTransaction) w.exec('ROLLBACK');
      await nextTurn();
      expect(s.db.inTransaction, 'ended with the turn').to.equal(false);
      w.exec("BEGIN IMMEDIATE; UPDATE accounts SET tx_count = tx_count + 1 WHERE id = (SELECT min(id) FROM accounts WHERE tx_count > 0); COMMIT");
      // the next turn's lookups read the write (as autocommit reads would)
      const after = addrs.map((a) => s.versions.of(`a:${a}`));
      expect(after[0]).to.not.equal(before[0]);
      expect(after.slice(1)).to.deep.equal(before.slice(1));
      await nextTurn();
      expect(s.db.inTransaction).to.equal(false);
    } finally {
      w.close();
      s.close();
    }
  });

  it('a WAL file keeps its state\'s own read transaction (nothing begun or ended per turn)', async () => {
    const c = new Database(file);
    c.pragma('journal_mode = WAL');
    c.close();
    const s = openSnapshot(file);
    try {
      expect(s.db.inTransaction).to.equal(true);
      const a = s.db.prepare('SELECT lower(hex(addr)) FROM accounts WHERE tx_count > 0 LIMIT 1').pluck().get() as string;
      const v = s.versions.of(`a:${a}`);
      await nextTurn();
      expect(s.db.inTransaction, 'the state\'s transaction stays').to.equal(true);
      expect(s.versions.of(`a:${a}`)).to.equal(v);
    } finally {
      s.close();
    }
  });
});
