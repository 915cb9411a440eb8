/**
 * A follow batch's new state of the same file is begun on a spare connection whose statements
 * are prepared (src/snapshot/open.ts renewSnapshot, src/snapshot/holder.ts): every answer equals
 * a fresh open's, the held previous state keeps answering its own commit, the by_name index is
 * carried only when no change record names a collection change, another file opens fresh.
 */
import { expect } from 'chai';
import { copyFileSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { openDatabase } from '../../src/sqlite';
import { COLLECTIONS } from '../../src/snapshot/tags';
import { SnapshotHolder } from '../../src/snapshot/holder';
import { openSnapshot, type Snapshot } from '../../src/snapshot/open';
import type { Page, PageRequest } from '../../src/snapshot/pagination';
import { commitBlock } from './helpers';
import { DEMO } from '../helpers/serve';

const page = (limit: number, offset = 0, reverse = true): PageRequest => ({ limit, offset, reverse, countTotal: true });

/** a page as the client gets it: its items' bytes and its pagination (with the total) */
const shown = (p: Page): unknown => ({ items: p.items.map((b) => b.toString('base64')), pagination: p.pagination });

/** What a request would read of a state (the parts a new state must re-read). */
function answers(s: Snapshot): unknown {
  return {
    status: s.status,
    height: s.meta.height,
    changeSeq: s.changeSeq,
    blocks: shown(s.q.block.list(page(3))),
    // an offset on a dense order is arithmetic on its bounds: read again per state
    dense: shown(s.q.block.list(page(2, 50))),
    denseAscending: shown(s.q.block.list(page(2, 50, false))),
    avg: s.q.block.avgBlockTime(),
    txs: shown(s.q.tx.list({}, page(2, 7))),
    byName: shown(s.q.nft.collectionsByName('', page(5))),
    evm: s.q.evm && shown(s.q.evm.txs(page(2, 3))),
    evmInternal: s.q.evm && shown(s.q.evm.internalTxs(page(2, 3))),
  };
}

describe('snapshot: a new state of the same file on a spare connection (renewSnapshot)', function () {
  this.timeout(60_000);
  let dir: string;
  let file: string;
  let w: Database.Database;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'renew-'));
    file = join(dir, 'live.sqlite');
    copyFileSync(DEMO('evm'), file);
    w = openDatabase(file);
    w.pragma('journal_mode = WAL');
  });
  afterEach(() => {
    w.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reuses the previous state\'s connection from the second batch on; every answer equals a fresh open\'s', async () => {
    const holder = SnapshotHolder.open(file);
    const opened: Snapshot[] = [holder.current() as Snapshot];
    try {
      for (let i = 0; i < 4; i++) {
        commitBlock(w);
        expect(await holder.reload('new batch')).to.equal(true);
        const s = holder.current() as Snapshot;
        expect(opened, 'a new Snapshot object per state').not.to.include(s);
        opened.push(s);
        const fresh = openSnapshot(file);
        try {
          expect(answers(s)).to.deep.equal(answers(fresh));
          expect(s.fileKey).to.equal(fresh.fileKey);
          expect(s.lineage).to.equal(fresh.lineage);
          expect(s.changeSeq).to.be.greaterThan(0);
          expect(s.changes.since(opened[i].changeSeq, s.changeSeq)?.length).to.equal(1);
        } finally {
          fresh.close();
        }
      }
      // the first batch opens (no spare yet), each later one takes the spare: two connections in turn
      expect(holder.renewed).to.equal(3);
      expect(opened[3].db).to.equal(opened[1].db);
      expect(opened[4].db).to.equal(opened[2].db);
      expect(opened[4].db).not.to.equal(opened[3].db);
    } finally {
      holder.close();
    }
    expect(opened.every((s) => !s.db.open), 'every connection closed with the holder').to.equal(true);
  });

  it('a state held by a request in flight answers from its own commit across batches; its connection is reused only once released', async () => {
    const holder = SnapshotHolder.open(file);
    try {
      commitBlock(w);
      await holder.reload('new batch');
      const held = holder.acquire() as Snapshot;
      const before = answers(held);
      commitBlock(w);
      await holder.reload('new batch'); // takes the spare (the first state's connection)
      commitBlock(w);
      await holder.reload('new batch'); // the held one is no spare: another connection is opened
      expect(answers(held), 'the held state reads its own commit').to.deep.equal(before);
      expect(held.db.open).to.equal(true);
      expect(holder.current()?.db).not.to.equal(held.db);
      expect(holder.current()?.meta.height).to.equal(held.meta.height + 2);
      expect(holder.renewed).to.equal(1);
      holder.release(held);
      // released while a spare is kept already: closed
      expect(held.db.open).to.equal(false);
      commitBlock(w);
      await holder.reload('new batch');
      expect(holder.renewed).to.equal(2);
      const fresh = openSnapshot(file);
      try { expect(answers(holder.current() as Snapshot)).to.deep.equal(answers(fresh)); } finally { fresh.close(); }
    } finally {
      holder.close();
    }
  });

  it('carries the by_name index unless a change record names a collection change', async () => {
    const holder = SnapshotHolder.open(file);
    try {
      commitBlock(w);
      await holder.reload('new batch');
      commitBlock(w);
      await holder.reload('new batch');
      holder.current()?.q.nft.collectionsByName('', page(1));
      const built = holder.current()?.q.nft.namesIndex();
      expect(built).not.to.equal(undefined);
      commitBlock(w);
      await holder.reload('new batch');
      expect(holder.renewed).to.be.greaterThan(0);
      expect(holder.current()?.q.nft.namesIndex(), 'carried: no collection changed').to.equal(built);
      commitBlock(w, [COLLECTIONS]);
      await holder.reload('new batch');
      expect(holder.current()?.q.nft.namesIndex(), 'a collection changed: built again at its next use').to.equal(undefined);
      holder.current()?.q.nft.collectionsByName('', page(1));
      expect(holder.current()?.q.nft.namesIndex()).not.to.equal(built);
    } finally {
      holder.close();
    }
  });

  it('another file renamed over the path opens fresh and closes the spare', async () => {
    const holder = SnapshotHolder.open(file);
    try {
      commitBlock(w);
      await holder.reload('new batch');
      const first = holder.current() as Snapshot;
      commitBlock(w);
      await holder.reload('new batch');
      const renewed = holder.renewed;
      const spareDb = first.db; // the first batch's state is now the spare
      expect(spareDb.open).to.equal(true);
      const other = join(dir, 'other.sqlite');
      copyFileSync(DEMO('evm'), other);
      // the followed file's WAL belongs to it (docs/follow.md "Operating notes")
      for (const f of [`${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
      renameSync(other, file);
      expect(await holder.reload('file replaced')).to.equal(true);
      expect(holder.renewed).to.equal(renewed);
      expect(holder.current()?.fileKey).not.to.equal(first.fileKey);
      expect(spareDb.open, 'the old file\'s spare is closed').to.equal(false);
    } finally {
      holder.close();
    }
  });
});
