/**
 * Nothing writes to a file that is not an indexer-api snapshot (issue #37): `follow --db` on a
 * plain SQLite file, an empty one, a truncated one, … is refused with the line `serve` prints
 * for the same file, before any write — no switch to WAL, no index, no byte changed, no file
 * made beside it. The store refuses to open such a file for writing in place whoever asks.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../src/snapshot/store';
import { CLI, cleanEnv, DEMO, ROOT } from '../helpers/serve';
import { BadKind, makeBad } from '../helpers/faults';

/** Every kind that is not a snapshot of this build (a snapshot with damaged pages is one: its quick check is serve's). */
const NOT_SNAPSHOTS: BadKind[] = ['empty', 'truncated', 'random', 'foreign SQLite', 'future user_version', 'meta schema_version 99'];

function run(command: string[]): { status: number | null; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...command], { cwd: ROOT, encoding: 'utf8', env: cleanEnv(), timeout: 60_000 });
  return { status: r.status, stderr: r.stderr };
}

describe('faults: nothing writes to a file that is not an indexer-api snapshot', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), 'indexer-api-write-guards-')); });
  after(() => { rmSync(dir, { recursive: true, force: true }); });

  for (const kind of NOT_SNAPSHOTS) {
    it(`follow --db FILE (${kind}): serve's line, exit 1, the file byte for byte as it was, nothing beside it`, () => {
      const file = join(dir, `${kind.replace(/\W+/g, '-')}.sqlite`);
      makeBad(kind, DEMO('wasm'), file);
      const before = readFileSync(file);
      const served = run(['serve', '--workers', '1', '--port', '0', '--db', file]);
      expect(served.status, served.stderr).to.equal(1);
      const serveLine = served.stderr.trim().replace(/^indexer-api: /, '');
      // nothing listens on port 1: the refusal must come before the source is asked anything
      const followed = run(['follow', '--db', file, '--from-api', 'http://127.0.0.1:1', '--interval', '100ms']);
      expect(followed.status, followed.stderr).to.equal(1);
      expect(followed.stderr.trim().split('\n'), followed.stderr).to.deep.equal([`indexer-api follow: ${serveLine}`]);
      expect(readFileSync(file).equals(before), 'the file is unchanged').to.equal(true);
      expect(readdirSync(dir).filter((n) => n.startsWith(file.split('/').pop() as string)).sort()).to.deep.equal([file.split('/').pop()]);
      rmSync(file);
    });
  }

  it('the store opens none whose header says so to write in place (SnapshotError in serve\'s words), and changes no byte', () => {
    // the meta's schema_version is read by openSnapshotFile, which follow asks first (above)
    for (const kind of NOT_SNAPSHOTS.filter((k) => k !== 'meta schema_version 99')) {
      const file = join(dir, `store-${kind.replace(/\W+/g, '-')}.sqlite`);
      makeBad(kind, DEMO('wasm'), file);
      const before = readFileSync(file);
      let err: Error | undefined;
      try { openStore(file, 'inPlace').close(); } catch (e) { err = e as Error; }
      expect(err?.constructor.name, kind).to.equal('SnapshotError');
      expect(err?.message, kind).to.include(file);
      expect(readFileSync(file).equals(before), kind).to.equal(true);
      expect(readdirSync(dir).filter((n) => n.startsWith(`store-${kind.replace(/\W+/g, '-')}`)), kind).to.have.length(1);
      rmSync(file, { force: true });
    }
  });
});
