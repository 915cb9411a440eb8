/**
 * A file checked once is not read again while it is unchanged (issue #42, src/snapshot/verdict.ts):
 * checkPages records a pass and takes it for the same unchanged file; anything that may have
 * changed the bytes — a write, a copy renamed over the path, a file replaced in place — is
 * checked in full; a record that is damaged, half-written or names other markers is ignored; a
 * damaged file is never recorded.
 */
import { expect } from 'chai';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkPages } from '../../src/snapshot/verify';
import { fileMarkers, findVerdict } from '../../src/snapshot/verdict';
import { DEMO } from '../helpers/serve';
import { corruptPages } from '../helpers/faults';

describe('recorded checks: a file checked once is not read again while unchanged (src/snapshot/verdict.ts)', function () {
  this.timeout(60_000);
  let dir: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'indexer-api-verdict-')); });
  afterEach(() => { rmSync(dir, { recursive: true, force: true }); });

  const fresh = (name = 'w.sqlite'): string => {
    const f = join(dir, name);
    copyFileSync(DEMO('wasm'), f);
    return f;
  };
  const recordOf = (): string => {
    const d = join(dir, '.indexer-api-checked');
    const names = readdirSync(d).filter((n) => n.endsWith('.json'));
    expect(names, 'one record').to.have.length(1);
    return join(d, names[0]);
  };

  it('records a pass beside the file and takes it for the same unchanged file (after a rename too: same inode)', async () => {
    const f = fresh();
    const first = await checkPages(f);
    expect(first.carried).to.equal(undefined);
    expect(JSON.parse(readFileSync(recordOf(), 'utf8')).verdict).to.include({ check: 'quick_check', file: f });
    const second = await checkPages(f);
    expect(second.carried, 'taken').to.not.equal(undefined);
    expect(second.carried?.checked_at).to.be.a('string');
    // a download checked beside --db and renamed over it keeps its inode: still the checked file
    const moved = join(dir, 'db.sqlite');
    renameSync(f, moved);
    expect((await checkPages(moved)).carried, 'renamed').to.not.equal(undefined);
  });

  it('checks in full what may have changed: a write, a modification time moved, a copy renamed over the path, a log with frames', async () => {
    const f = fresh();
    await checkPages(f);
    // what any write does: the modification time moves
    const st = statSync(f);
    utimesSync(f, st.atime, new Date(st.mtimeMs + 1000));
    expect((await checkPages(f)).carried, 'modification time moved').to.equal(undefined);
    expect((await checkPages(f)).carried, 'recorded again').to.not.equal(undefined);
    // another inode with the same bytes, size and modification time
    const copy = join(dir, 'copy.tmp');
    copyFileSync(f, copy);
    utimesSync(copy, statSync(f).atime, statSync(f).mtime);
    renameSync(copy, f);
    expect((await checkPages(f)).carried, 'a copy renamed over it').to.equal(undefined);
    // a write-ahead log with frames beside it: what the file reads as has moved
    writeFileSync(`${f}-wal`, Buffer.alloc(4096, 1));
    expect(findVerdict(f), 'a log with frames').to.equal(undefined);
    rmSync(`${f}-wal`);
    expect(findVerdict(f), 'the log gone').to.not.equal(undefined);
  });

  it('ignores a damaged, half-written or foreign record and checks in full (then records anew)', async () => {
    const f = fresh();
    await checkPages(f);
    const record = recordOf();
    const good = readFileSync(record, 'utf8');
    const parsed = JSON.parse(good) as { verdict: { ms: number; markers: { size: string } }; sha256: string };
    const variants: [string, string][] = [
      ['half-written', good.slice(0, Math.floor(good.length / 2))],
      ['empty', ''],
      ['not JSON', 'garbage\n'],
      ['edited without its hash', JSON.stringify({ ...parsed, verdict: { ...parsed.verdict, ms: 1 } })],
      ['other markers, hash recomputed by hand is still checked against the file', JSON.stringify({ ...parsed, verdict: { ...parsed.verdict, markers: { ...parsed.verdict.markers, size: '1' } } })],
    ];
    for (const [what, text] of variants) {
      writeFileSync(record, text);
      expect(findVerdict(f), what).to.equal(undefined);
      expect((await checkPages(f)).carried, what).to.equal(undefined);
      expect(findVerdict(f), `${what}: recorded anew`).to.not.equal(undefined);
    }
    // a writer killed before its rename leaves a temporary file: never read as a record
    writeFileSync(`${record}.123.abc.tmp`, good.slice(0, 10));
    expect(findVerdict(f)).to.not.equal(undefined);
  });

  it('never records a damaged file', async () => {
    const f = fresh();
    corruptPages(f);
    let failed = false;
    try { await checkPages(f); } catch { failed = true; }
    expect(failed, 'the check fails').to.equal(true);
    expect(findVerdict(f)).to.equal(undefined);
    expect(fileMarkers(f)).to.not.equal(undefined);
  });
});
