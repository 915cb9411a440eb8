import { expect } from 'chai';
import Database from 'better-sqlite3';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runImport } from '../../src/import/run';
import { rawMembers } from '../../src/lib/raw-json';
import { tableDiff } from '../../src/snapshot/digest';
import { openSnapshot, SnapshotError } from '../../src/snapshot/open';
import { FIRST_PACKED_WIRE_FORMAT, WIRE_FORMAT_META_KEY, WIRE_FORMAT_VERSION } from '../../src/wire/format';
import { isPackedRow, packRow, readPackedRow } from '../../src/wire/packed';
import { expectSameAnswers } from '../helpers/same-answers';
import { demoDump } from '../helpers/same-answers';

const ROOT = resolve(__dirname, '..', '..', '..'); // compiled into build/test/import/

/** A fixture cut by the release before wire format 2 (rows stored as text), kept in the repository. */
const WIRE1_FIXTURE = join(ROOT, 'test', 'fixtures', 'wire1-wasm.sqlite');
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

/**
 * Rewrites every stored object of `file` with olderRendering and records `version` in meta: as
 * the text itself for version 1, packed otherwise (src/wire/packed.ts).
 */
function age(file: string, version: number | null): void {
  const db = new Database(file);
  const packed = version === null || version >= FIRST_PACKED_WIRE_FORMAT;
  try {
    db.function('older_rendering', { deterministic: true }, (json: unknown) => {
      const text = olderRendering(readPackedRow(json as Buffer));
      return packed ? packRow(text) : text;
    });
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
      expect(() => openSnapshot(out)).to.throw(SnapshotError, /no such snapshot file/);
    });
  });

  describe('serve', () => {
    const says = new RegExp(`wire format ${WIRE_FORMAT_VERSION + 1}, newer than this indexer-api renders \\(${WIRE_FORMAT_VERSION}\\): use the indexer-api that built it`);
    it('refuses a snapshot of a newer wire format with one line that says what to do', () => {
      const file = join(dir, 'serve-newer.sqlite');
      copyFileSync(fresh, file);
      setWireFormat(file, WIRE_FORMAT_VERSION + 1);
      expect(() => openSnapshot(file)).to.throw(SnapshotError, says);
      const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'indexer-api'), 'serve', '--db', file, '--get', '/status'], { encoding: 'utf8', timeout: 30_000 });
      expect(r.status, r.stderr).to.not.equal(0);
      expect(r.stdout).to.equal('');
      const lines = r.stderr.trim().split('\n');
      expect(lines, r.stderr).to.have.length(1);
      expect(lines[0]).to.contain(file).and.match(says);
    });

    it('serves a file of wire format 1 kept from the previous release, saying once how to compress it', async function () {
      this.timeout(60_000);
      const copy = join(dir, 'wire1.sqlite');
      copyFileSync(WIRE1_FIXTURE, copy);
      const db = new Database(copy, { readonly: true });
      expect(db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get(WIRE_FORMAT_META_KEY)).to.equal('1');
      expect(typeof db.prepare('SELECT json FROM txs LIMIT 1').pluck().get()).to.equal('string');
      db.close();
      const child = spawn(process.execPath, [join(ROOT, 'bin', 'indexer-api'), 'serve', '--db', copy, '--port', '0', '--workers', '2'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      let stdout = '';
      child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
      child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
      try {
        const url = await new Promise<string>((done, fail) => {
          child.stdout.once('data', (d: Buffer) => done(d.toString().trim().split('\n')[0].replace(/^listening /, '')));
          child.once('exit', (code) => fail(new Error(`serve exited ${code}: ${stderr}`)));
        });
        const res = await fetch(`${url}/indexer/tx/v1/txs?pagination.limit=2`, { headers: { 'accept-encoding': 'gzip' } });
        expect(res.status).to.equal(200);
        // rows stored as text: identity, whatever the client accepts
        expect(res.headers.get('content-encoding')).to.equal(null);
        expect(((await res.json()) as { txs: unknown[] }).txs).to.have.length(2);
      } finally {
        const exited = new Promise((done) => child.once('exit', done));
        child.kill('SIGTERM');
        await exited;
      }
      // the log (JSON lines on stdout) says it once, not once per worker
      const warned = stdout.split('\n').filter((l) => l.includes('wire format 1'));
      expect(warned, stdout + stderr).to.have.length(1);
      expect(warned[0]).to.contain(`import --base ${copy}`);
    });

    it('import --base renders it as the current format (packed): every answer the same as the wire-1 file', async function () {
      this.timeout(180_000);
      const out = join(dir, 'wire1-rendered.sqlite');
      await runImport({ base: WIRE1_FIXTURE, fromDump: empty, out, force: false, quiet: true, json: false });
      const db = new Database(out, { readonly: true });
      expect(db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get(WIRE_FORMAT_META_KEY)).to.equal(String(WIRE_FORMAT_VERSION));
      for (const t of ['blocks', 'txs', 'collections', 'nfts']) {
        const rows = db.prepare(`SELECT json FROM ${t}`).pluck().all() as Buffer[];
        expect(rows.length, t).to.be.greaterThan(0);
        expect(rows.every((r) => Buffer.isBuffer(r) && isPackedRow(r)), t).to.equal(true);
      }
      db.close();
      await expectSameAnswers(WIRE1_FIXTURE, out, 50);
    });
  });

  describe('follow', () => {
    it('refuses a file of an older wire format (it would append packed rows to text rows), naming the fix', () => {
      const copy = join(dir, 'follow-wire1.sqlite');
      copyFileSync(WIRE1_FIXTURE, copy);
      const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'indexer-api'), 'follow', '--db', copy, '--from-api', 'http://127.0.0.1:9'],
        { encoding: 'utf8', timeout: 30_000 });
      expect(r.status, r.stderr).to.not.equal(0);
      expect(r.stderr).to.match(/wire format 1, this indexer-api renders 2 \(render it again: indexer-api import --base /);
    });
  });
});
