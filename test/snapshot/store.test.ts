import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { runFollow } from '../../src/commands/follow';
import type { FollowOptions } from '../../src/settings/follow';
import { Puller } from '../../src/pull/puller';
import { SnapshotError } from '../../src/snapshot/file-check';
import { DEMO } from '../helpers/serve';
import {
  acquireWriterLock, cleanStaleTemps, lockPathOf, openStore, parseTempName, StoreError, tempPathBeside, WriterLockedError,
} from '../../src/snapshot/store';

/** A pid that is certainly not running: a child that has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

describe('snapshot store (src/snapshot/store.ts)', () => {
  let dir: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'store-')); });

  describe('the write lock', () => {
    it('refuses a second writer at once, naming the pid that holds the lock', () => {
      const file = join(dir, 'chain.sqlite');
      const lock = acquireWriterLock(file);
      try {
        expect(() => acquireWriterLock(file)).to.throw(WriterLockedError, new RegExp(`process ${process.pid}\\b`));
        expect(readFileSync(lockPathOf(file), 'utf8').trim()).to.equal(String(process.pid));
      } finally {
        lock.release();
      }
      expect(existsSync(lockPathOf(file))).to.equal(false);
      acquireWriterLock(file).release(); // free again
      expect(readdirSync(dir)).to.deep.equal([]); // nothing left beside the file
    });

    it('refuses while another live process holds it, and takes over the lock of a dead one', async () => {
      const file = join(dir, 'chain.sqlite');
      const other = spawn('sleep', ['30'], { stdio: 'ignore' });
      try {
        writeFileSync(lockPathOf(file), `${other.pid}\n`);
        expect(() => acquireWriterLock(file)).to.throw(WriterLockedError, `being written by process ${other.pid}`);
      } finally {
        other.kill();
      }
      await new Promise((r) => other.once('exit', r));
      // the holder is gone: its lock is stale and taken over
      const lock = acquireWriterLock(file);
      expect(readFileSync(lockPathOf(file), 'utf8').trim()).to.equal(String(process.pid));
      lock.release();
      writeFileSync(lockPathOf(file), `${deadPid()}\n`);
      acquireWriterLock(file).release();
      expect(readdirSync(dir)).to.deep.equal([]);
    });

    it('a second `follow` on a file is refused before it touches the file, naming the writer', async () => {
      const file = join(dir, 'chain.sqlite');
      const lock = acquireWriterLock(file);
      try {
        const o: FollowOptions = {
          db: file, fromApi: 'http://127.0.0.1:1/', interval: 1000, batchBlocks: 1, metricsHost: '127.0.0.1', maxStall: 60_000, maxBackoff: 1000, quiet: true,
          richlistInterval: 0, richlistSwapRows: 1000, richlistChunkRows: 1000, collectionsAuditInterval: 0, logFormat: 'text', concurrency: 1, timeout: 1000, statusVersion: 'dev', statusCommit: 'unknown',
        };
        let err: Error | undefined;
        await runFollow(o).catch((e: Error) => { err = e; });
        expect(err).to.be.instanceOf(WriterLockedError);
        expect(err?.message).to.contain(file).and.contain(`process ${process.pid}`);
        expect(existsSync(file)).to.equal(false); // no first import was started
      } finally {
        lock.release();
      }
    });
  });

  describe('temporary files', () => {
    it('are named by one function and read back by its inverse, -wal / -shm / -journal included', () => {
      const target = join(dir, 'chain.sqlite');
      const t = tempPathBeside(target);
      expect(t.startsWith(join(dir, '.chain.sqlite.tmp-'))).to.equal(true);
      for (const suffix of ['', '-wal', '-shm', '-journal']) expect(parseTempName(basename(t) + suffix, target)).to.equal(process.pid);
      for (const other of ['chain.sqlite', '.chain.sqlite.tmp-12-xyz', '.other.sqlite.tmp-12-ab', `${basename(t)}-x`, '.chain.sqlite.tmp-12-ab.bak']) {
        expect(parseTempName(other, target), other).to.equal(undefined);
      }
    });

    it('crash clean-up removes the temps of dead processes, keeps live ones and other files', () => {
      const target = join(dir, 'chain.sqlite');
      const mine = tempPathBeside(target);
      const dead = deadPid();
      const theirs = join(dir, `.chain.sqlite.tmp-${dead}-0badc0de`);
      for (const f of [mine, theirs, `${theirs}-wal`, target, join(dir, '.other.sqlite.tmp-1-00')]) writeFileSync(f, 'x');
      expect(cleanStaleTemps(target).sort()).to.deep.equal([basename(theirs), `${basename(theirs)}-wal`]);
      expect(existsSync(mine)).to.equal(true);
      expect(cleanStaleTemps(target, true)).to.deep.equal([basename(mine)]);
      expect(readdirSync(dir).sort()).to.deep.equal(['.other.sqlite.tmp-1-00', 'chain.sqlite']);
    });
  });

  describe('opening', () => {
    it('names the file in every open error', () => {
      const junk = join(dir, 'random.sqlite');
      writeFileSync(junk, 'this is not a database\n'.repeat(50));
      for (const mode of ['read', 'liveRead'] as const) {
        expect(() => openStore(junk, mode), mode).to.throw(StoreError, `${junk}: file is not a database`);
      }
      // written in place only if it is a snapshot: refused before SQLite opens it, in serve's words
      expect(() => openStore(junk, 'inPlace')).to.throw(SnapshotError, `not a SQLite database: ${junk}`);
      expect(() => openStore(join(dir, 'missing.sqlite'), 'read')).to.throw(StoreError, join(dir, 'missing.sqlite'));
    });

    it('follow --db on a file that is not a database names the file', async () => {
      const junk = join(dir, 'random.sqlite');
      writeFileSync(junk, 'this is not a database\n'.repeat(50));
      const o: FollowOptions = {
        db: junk, fromApi: 'http://127.0.0.1:1/', interval: 1000, batchBlocks: 1, metricsHost: '127.0.0.1', maxStall: 60_000, maxBackoff: 1000, quiet: true,
        richlistInterval: 0, richlistSwapRows: 1000, richlistChunkRows: 1000, collectionsAuditInterval: 0, logFormat: 'text', concurrency: 1, timeout: 1000, statusVersion: 'dev', statusCommit: 'unknown',
      };
      let err: Error | undefined;
      await runFollow(o).catch((e: Error) => { err = e; });
      expect(err?.message).to.equal(`not a SQLite database: ${junk}`);
      expect(existsSync(lockPathOf(junk))).to.equal(false); // the lock went with the failed run
    });

    it('creates the folder of a new file it writes', () => {
      const file = join(dir, 'a', 'b', 'new.sqlite');
      const db = openStore(file, 'bulk');
      db.exec('CREATE TABLE t (x)');
      db.close();
      expect(existsSync(file)).to.equal(true);
      expect(() => openStore(join(dir, 'c', 'x.sqlite'), 'inPlace')).to.throw(SnapshotError, `${join(dir, 'c', 'x.sqlite')}: no such snapshot file`);
      expect(existsSync(join(dir, 'c'))).to.equal(false);
    });

    it('serve --pull: the folder of a --db that does not exist yet is created for the download', () => {
      const db = join(dir, 'pulled', 'local.sqlite');
      new Puller({ manifestUrl: 'http://127.0.0.1:1/manifest.json', db, intervalMs: 1000, localHeight: () => undefined, install: async () => true });
      expect(existsSync(join(dir, 'pulled'))).to.equal(true);
    });

    it('declares each mode\'s pragmas once: bulk loads without a journal, inPlace writes WAL', () => {
      const file = join(dir, 'x.sqlite');
      const bulk = openStore(file, 'bulk');
      expect(bulk.pragma('journal_mode', { simple: true })).to.equal('off');
      bulk.exec('CREATE TABLE t (x)');
      bulk.close();
      const snapshot = join(dir, 'snapshot.sqlite');
      copyFileSync(DEMO('move'), snapshot);
      const live = openStore(snapshot, 'inPlace');
      expect(live.pragma('journal_mode', { simple: true })).to.equal('wal');
      expect(live.pragma('busy_timeout', { simple: true })).to.equal(5000);
      live.close();
      const read = openStore(file, 'read');
      expect(() => read.exec('CREATE TABLE u (y)')).to.throw();
      read.close();
    });
  });
});
