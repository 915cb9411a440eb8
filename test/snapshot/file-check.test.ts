/**
 * The checks before SQLite opens a snapshot (src/snapshot/file-check.ts): a file shorter than its
 * header's page count is truncated — except a live WAL file (its -wal beside it), whose header a
 * checkpoint writes before the pages that extend the file (seen by bench/batch-reload.ts: a fresh
 * open of a followed file refused as "truncated" mid-checkpoint).
 */
import { expect } from 'chai';
import { copyFileSync, mkdtempSync, openSync, closeSync, rmSync, truncateSync, writeFileSync, writeSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkSnapshotFile, SnapshotError } from '../../src/snapshot/file-check';
import { DEMO } from '../helpers/serve';

/** A copy of the demo file, its header marked WAL (bytes 18–19 = 2) and one page cut off its end. */
function aheadOfItsSize(dir: string, name: string): string {
  const f = join(dir, name);
  copyFileSync(DEMO('move'), f);
  const fd = openSync(f, 'r+');
  writeSync(fd, Buffer.from([2, 2]), 0, 2, 18);
  closeSync(fd);
  truncateSync(f, statSync(f).size - 4096);
  return f;
}

describe('snapshot file check (src/snapshot/file-check.ts)', () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), 'file-check-')); });
  after(() => { rmSync(dir, { recursive: true, force: true }); });

  it('refuses a file shorter than its header says, naming both sizes', () => {
    const f = aheadOfItsSize(dir, 'cut.sqlite');
    expect(() => checkSnapshotFile(f)).to.throw(SnapshotError, /^snapshot is truncated \(\d+ bytes, header says \d+\): /);
  });

  it('lets a live WAL file (its -wal beside it) whose header is ahead of its size through: a checkpoint in progress', () => {
    const f = aheadOfItsSize(dir, 'live.sqlite');
    writeFileSync(`${f}-wal`, '');
    expect(() => checkSnapshotFile(f)).to.not.throw();
  });
});
