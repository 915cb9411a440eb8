import { expect } from 'chai';
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runImport } from '../../src/commands/import';
import { rawMembers } from '../../src/lib/raw-json';
import { tableDiff } from '../../src/snapshot/digest';
import { openSnapshot, SnapshotError } from '../../src/snapshot/open';
import { WIRE_FORMAT_META_KEY, WIRE_FORMAT_VERSION } from '../../src/wire/format';
import { demoDump } from './helpers/serve';

const ROOT = resolve(__dirname, '..', '..', '..'); // compiled into build/test/import/
const STORED = ['blocks', 'txs', 'collections', 'nfts', 'richlist', 'evm_txs', 'evm_internal_txs'];

/**
 * What an older serializer might have stored: the same members in another order, and block
 * heights as JSON numbers instead of strings. The raw `tx` / `events` fragments stay as they are.
 */
function olderRendering(json: string): string {
  const members = [...rawMembers(json)].reverse()
    .map(([k, v]) => JSON.stringify(k) + ':' + (k === 'height' && v.startsWith('"') ? String(JSON.parse(v)) : v));
  return '{' + members.join(',') + '}';
}

/** Rewrites every stored object of `file` with olderRendering and records `version` in meta. */
function age(file: string, version: number | null): void {
  const db = new Database(file);
  try {
    db.function('older_rendering', { deterministic: true }, (json: unknown) => olderRendering(json as string));
    db.transaction(() => {
      for (const t of STORED) db.prepare(`UPDATE ${t} SET json = older_rendering(json)`).run();
      if (version !== null) db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)').run(WIRE_FORMAT_META_KEY, String(version));
    })();
  } finally {
    db.close();
  }
}

function setWireFormat(file: string, version: number): void {
  const db = new Database(file);
  db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)').run(WIRE_FORMAT_META_KEY, String(version));
  db.close();
}

const storedDiff = (a: string, b: string): string[] => tableDiff(a, b).filter((d) => STORED.includes(d.split(':')[0]));

describe('the stored wire format and its version', () => {
  let dir: string;
  let fresh: string;
  let empty: string;

  before(async function () {
    this.timeout(180_000);
    dir = mkdtempSync(join(tmpdir(), 'wire-format-'));
    empty = join(dir, 'no-new-heights');
    mkdirSync(empty);
    fresh = join(dir, 'fresh.sqlite');
    await runImport({ fromDump: await demoDump('evm'), out: fresh, force: false, quiet: true, json: false });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a new snapshot records the wire format it was rendered with', () => {
    const db = new Database(fresh, { readonly: true });
    expect(db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get(WIRE_FORMAT_META_KEY)).to.equal(String(WIRE_FORMAT_VERSION));
    db.close();
  });

  describe('import --base', () => {
    it('renders every stored object of a base of an older wire format again: the same tables as a fresh import', async function () {
      this.timeout(120_000);
      const old = join(dir, 'older.sqlite');
      copyFileSync(fresh, old);
      age(old, WIRE_FORMAT_VERSION - 1);
      expect(storedDiff(fresh, old)).to.have.length(STORED.length);
      const out = join(dir, 'rerendered.sqlite');
      await runImport({ base: old, fromDump: empty, out, force: false, quiet: true, json: false });
      expect(storedDiff(fresh, out)).to.deep.equal([]);
      expect(openSnapshot(out).meta.chainId).to.be.a('string');
    });

    it('leaves the stored objects of a base of the current wire format as they are', async function () {
      this.timeout(120_000);
      const current = join(dir, 'current.sqlite');
      copyFileSync(fresh, current);
      age(current, null);
      const out = join(dir, 'kept.sqlite');
      await runImport({ base: current, fromDump: empty, out, force: false, quiet: true, json: false });
      expect(storedDiff(current, out)).to.deep.equal([]);
    });

    it('refuses a base of a newer wire format, naming it, and writes nothing', async () => {
      const newer = join(dir, 'newer-base.sqlite');
      copyFileSync(fresh, newer);
      setWireFormat(newer, WIRE_FORMAT_VERSION + 1);
      const out = join(dir, 'never.sqlite');
      let error: unknown;
      try {
        await runImport({ base: newer, fromDump: empty, out, force: false, quiet: true, json: false });
      } catch (e) {
        error = e;
      }
      expect((error as Error).message).to.contain(newer).and.contain(`wire format ${WIRE_FORMAT_VERSION + 1}, newer`);
      expect(() => openSnapshot(out)).to.throw(SnapshotError, /not found/);
    });
  });

  describe('serve', () => {
    for (const [label, delta, says] of [
      ['an older', -1, /wire format 0, this indexer-api renders 1 \(render it again: indexer-api import --base .* --from-dump DIR --out NEW\.sqlite/],
      ['a newer', +1, /wire format 2, newer than this indexer-api renders \(1\): use the indexer-api that built it/],
    ] as const) {
      it(`refuses a snapshot of ${label} wire format with one line that says what to do`, () => {
        const file = join(dir, `serve${delta}.sqlite`);
        copyFileSync(fresh, file);
        setWireFormat(file, WIRE_FORMAT_VERSION + delta);
        expect(() => openSnapshot(file)).to.throw(SnapshotError, says);
        const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'indexer-api'), 'serve', '--db', file, '--get', '/status'], { encoding: 'utf8', timeout: 30_000 });
        expect(r.status, r.stderr).to.not.equal(0);
        expect(r.stdout).to.equal('');
        const lines = r.stderr.trim().split('\n');
        expect(lines, r.stderr).to.have.length(1);
        expect(lines[0]).to.contain(file).and.match(says);
      });
    }
  });
});
