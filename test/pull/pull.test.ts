import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { closeSync, copyFileSync, mkdtempSync, openSync, readFileSync, renameSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { WIRE_FORMAT_META_KEY, WIRE_FORMAT_VERSION } from '../../src/wire/format';
import type { Manifest } from '../../src/publish/manifest';
import { publishSnapshot } from '../../src/publish/publish';
import { Puller } from '../../src/pull/puller';
import { Nginx, NGINX, startNginx } from '../support/nginx';
import { freePort } from '../support/net';
import { DEMO, eventually, getJson, get, ServeProcess, startServe } from '../helpers/serve';
import { chainVersions, pullTmp, Version } from '../helpers/pull';

const shaOf = (file: string): string => createHash('sha256').update(readFileSync(file)).digest('hex');

/** Overwrites 64 bytes in the middle page of a SQLite file: it still opens, quick_check fails. */
function corruptMiddlePage(file: string): void {
  const fd = openSync(file, 'r+');
  try {
    const pages = statSync(file).size / 4096;
    writeSync(fd, Buffer.alloc(64, 0xff), 0, 64, Math.floor(pages / 2) * 4096);
  } finally {
    closeSync(fd);
  }
}

/** Publishes into a staging directory, then moves the data file and the manifest into `to` (as publish would). */
async function stage(v: Version, compress: 'auto' | 'none' = 'auto'): Promise<{ dir: string; file: string; manifest: string }> {
  const dir = mkdtempSync(join(pullTmp(), 'stage-'));
  const { manifest } = await publishSnapshot({ db: v.file, to: dir, keep: 3, compress });
  return { dir, file: manifest.file, manifest: join(dir, 'manifest.json') };
}

function place(from: string, to: string): void {
  copyFileSync(from, `${to}.tmp`);
  renameSync(`${to}.tmp`, to);
}

(NGINX ? describe : describe.skip)('serve --pull from a publish directory on nginx', () => {
  let origin: Nginx;
  let dir: string;
  let versions: Version[];
  const replicas: ServeProcess[] = [];

  before(async () => {
    versions = await chainVersions();
    dir = mkdtempSync(join(pullTmp(), 'origin-'));
    origin = await startNginx(dir, '127.0.0.1', await freePort());
  });
  after(async () => {
    await Promise.all(replicas.map((r) => r.stop('SIGKILL')));
    await origin?.stop();
  });

  it('is not ready until the first publish, then serves it, then swaps in each newer publish', async () => {
    const db = join(mkdtempSync(join(pullTmp(), 'replica-')), 'local.sqlite');
    const r = await startServe(['--pull', `${origin.url}/manifest.json`, '--pull-interval', '300ms', '--db', db]);
    replicas.push(r);
    expect((await get(`${r.url}/ready`)).status).to.equal(503);
    expect((await get(`${r.url}/indexer/block/v1/blocks`)).status).to.equal(503);
    await publishSnapshot({ db: versions[0].file, to: dir, keep: 3, compress: 'auto', allowOlder: true }); // each test starts the shared origin over
    await eventually('ready at the first height', async () => (await get(`${r.url}/ready`)).status === 200);
    expect((await getJson(`${r.url}/status`)).height).to.equal(versions[0].height);
    const { manifest } = await publishSnapshot({ db: versions[1].file, to: dir, keep: 3, compress: 'auto' });
    await eventually('the second height', async () => (await getJson(`${r.url}/status`)).height === versions[1].height || undefined);
    expect(shaOf(db)).to.equal(manifest.sha256);
    await r.line('the second pull', (l) => l.msg === 'pulled snapshot' && l.height === versions[1].height);
    const pulled = r.lines.filter((l) => l.msg === 'pulled snapshot').map((l) => l.height);
    expect(pulled).to.deep.equal([versions[0].height, versions[1].height]);
    await r.stop();
  });

  it('with --workers 2 the primary pulls before forking, and the workers swap in each newer file', async () => {
    await publishSnapshot({ db: versions[0].file, to: dir, keep: 3, compress: 'auto', allowOlder: true }); // each test starts the shared origin over
    const db = join(mkdtempSync(join(pullTmp(), 'replica-')), 'local.sqlite');
    const r = await startServe(['--pull', `${origin.url}/manifest.json`, '--pull-interval', '300ms', '--db', db, '--workers', '2', '--watch-poll-ms', '200']);
    replicas.push(r);
    expect((await getJson(`${r.url}/status`)).height).to.equal(versions[0].height);
    await publishSnapshot({ db: versions[1].file, to: dir, keep: 3, compress: 'auto' });
    // Both workers: fresh connections land on either; ask enough times to see each.
    await eventually('every worker at the second height', async () => {
      const hs = await Promise.all(Array.from({ length: 8 }, async () => (await getJson(`${r.url}/status`)).height));
      return hs.every((h) => h === versions[1].height) || undefined;
    });
    await r.stop();
  });

  it('a replica whose local file no longer opens pulls it again, though its record says it is current', async () => {
    const { manifest } = await publishSnapshot({ db: versions[1].file, to: dir, keep: 3, compress: 'auto' });
    const db = join(mkdtempSync(join(pullTmp(), 'replica-')), 'local.sqlite');
    let r = await startServe(['--pull', `${origin.url}/manifest.json`, '--pull-interval', '300ms', '--db', db]);
    replicas.push(r);
    await eventually('ready', async () => (await get(`${r.url}/ready`)).status === 200 || undefined);
    await r.stop();
    writeFileSync(db, 'not a database any more');
    r = await startServe(['--pull', `${origin.url}/manifest.json`, '--pull-interval', '300ms', '--db', db]);
    replicas.push(r);
    await eventually('ready again', async () => (await get(`${r.url}/ready`)).status === 200 || undefined);
    expect(shaOf(db)).to.equal(manifest.sha256);
    await r.stop();
  });

  it('a manifest of another chain is refused: one error line, /ready lists it, the current file keeps serving; its own chain again is pulled', async () => {
    const { manifest: first } = await publishSnapshot({ db: versions[0].file, to: dir, keep: 3, compress: 'auto', newChain: true });
    const db = join(mkdtempSync(join(pullTmp(), 'replica-')), 'local.sqlite');
    const r = await startServe(['--pull', `${origin.url}/manifest.json`, '--pull-interval', '300ms', '--db', db]);
    replicas.push(r);
    await eventually('ready', async () => (await get(`${r.url}/ready`)).status === 200 || undefined);
    const before = shaOf(db);
    const { manifest: other } = await publishSnapshot({ db: DEMO('wasm'), to: dir, keep: 3, compress: 'auto', newChain: true });
    const refused = await r.line('the refusal', (l) => l.msg === 'manifest refused: it names another chain; still serving the current file');
    expect(refused).to.include({ level: 'error', chain_id: 'miniwasm-demo-1', height: other.height });
    expect(String(refused.error)).to.equal(`${origin.url}/manifest.json names chain "miniwasm-demo-1" (height ${other.height}), but this replica serves chain "${first.chain_id}": `
      + 'not pulled, the current file keeps serving (a replica never changes chains unless told: to serve "miniwasm-demo-1", restart serve with --expect-chain-id miniwasm-demo-1)');
    const ready = await get(`${r.url}/ready`);
    expect(ready.status).to.equal(200);
    expect(JSON.parse(ready.body).files_not_served).to.deep.equal([{ file: `${origin.url}/${other.file}`, error: refused.error }]);
    // polled again and again: logged once, never downloaded, the file as it was
    await new Promise((d) => setTimeout(d, 1_000));
    expect(r.lines.filter((l) => l.msg === 'manifest refused: it names another chain; still serving the current file')).to.have.length(1);
    expect(origin.access().filter((a) => a.request.includes(other.file))).to.deep.equal([]);
    expect(shaOf(db)).to.equal(before);
    expect(await getJson(`${r.url}/status`)).to.include({ chain_id: first.chain_id, height: versions[0].height });
    // restarted meanwhile: the manifest's higher height does not make it drop its own file
    await r.stop();
    const again = await startServe(['--pull', `${origin.url}/manifest.json`, '--pull-interval', '300ms', '--db', db]);
    replicas.push(again);
    expect((await get(`${again.url}/ready`)).status).to.equal(200);
    await again.line('the refusal again', (l) => l.msg === 'manifest refused: it names another chain; still serving the current file');
    expect(await getJson(`${again.url}/status`)).to.include({ chain_id: first.chain_id, height: versions[0].height });
    // its own chain again (the directory started over once more): accepted, pulled, nothing listed
    await publishSnapshot({ db: versions[1].file, to: dir, keep: 3, compress: 'auto', newChain: true });
    await eventually('the newer file of its chain', async () => (await getJson(`${again.url}/status`)).height === versions[1].height || undefined);
    expect(JSON.parse((await get(`${again.url}/ready`)).body)).to.not.have.property('files_not_served');
    await again.stop();
  });

  it('--workers 2: the primary refuses a manifest of another chain, and /ready of every worker lists it', async () => {
    const { manifest: first } = await publishSnapshot({ db: versions[0].file, to: dir, keep: 3, compress: 'auto', newChain: true });
    const db = join(mkdtempSync(join(pullTmp(), 'replica-')), 'local.sqlite');
    const r = await startServe(['--pull', `${origin.url}/manifest.json`, '--pull-interval', '300ms', '--db', db, '--workers', '2']);
    replicas.push(r);
    const { manifest: other } = await publishSnapshot({ db: DEMO('evm'), to: dir, keep: 3, compress: 'auto', newChain: true });
    await r.line('the refusal', (l) => l.msg === 'manifest refused: it names another chain; still serving the current file');
    await eventually('every worker lists it', async () => {
      const bodies = await Promise.all(Array.from({ length: 8 }, async () => JSON.parse((await get(`${r.url}/ready`)).body) as { files_not_served?: { file: string }[] }));
      return bodies.every((b) => b.files_not_served?.[0]?.file === `${origin.url}/${other.file}`) || undefined;
    });
    expect(await getJson(`${r.url}/status`)).to.include({ chain_id: first.chain_id });
    await r.stop();
  });

  it('--expect-chain-id: a replica with nothing yet pulls only its chain — another is refused, /ready 503 says why, nothing is downloaded', async () => {
    const { manifest: other } = await publishSnapshot({ db: DEMO('wasm'), to: dir, keep: 3, compress: 'auto', newChain: true });
    const db = join(mkdtempSync(join(pullTmp(), 'replica-')), 'local.sqlite');
    const r = await startServe(['--pull', `${origin.url}/manifest.json`, '--pull-interval', '300ms', '--db', db, '--expect-chain-id', 'minimove-demo-1']);
    replicas.push(r);
    await r.line('the refusal', (l) => l.msg === 'manifest refused: it names another chain; still serving the current file');
    const ready = await get(`${r.url}/ready`);
    expect(ready.status).to.equal(503);
    const body = JSON.parse(ready.body) as { message: string; files_not_served: { file: string; error: string }[] };
    expect(body.message).to.equal('no snapshot is loaded');
    expect(body.files_not_served[0].error).to.contain('but this replica serves chain "minimove-demo-1" (--expect-chain-id)');
    expect(origin.access().filter((a) => a.request.includes(other.file))).to.deep.equal([]);
    await publishSnapshot({ db: DEMO('move'), to: dir, keep: 3, compress: 'auto', newChain: true });
    await eventually('its chain pulled', async () => (await get(`${r.url}/ready`)).status === 200 || undefined);
    expect(await getJson(`${r.url}/status`)).to.include({ chain_id: 'minimove-demo-1' });
    await r.stop();
  });

  it('a download cut short resumes with a Range request for the rest only', async () => {
    const s = await stage(versions[2]);
    place(join(s.dir, s.file), join(dir, s.file));
    place(s.manifest, join(dir, 'manifest.json'));
    const db = join(mkdtempSync(join(pullTmp(), 'replica-')), 'local.sqlite');
    const whole = readFileSync(join(dir, s.file));
    const half = Math.floor(whole.length / 2);
    writeFileSync(`${db}.part-${s.file}`, whole.subarray(0, half));
    let serving: number | undefined;
    const p = new Puller({ manifestUrl: `${origin.url}/manifest.json`, db, intervalMs: 1_000, localHeight: () => serving, install: (m) => { serving = m.height; return true; } });
    const installed = new Promise<{ transferred: number; resumedFrom: number }>((done) => p.once('installed', (_m, st) => done(st)));
    expect(await p.syncOnce()).to.equal('installed');
    expect(await installed).to.include({ transferred: whole.length - half, resumedFrom: half });
    const hits = origin.access().filter((a) => a.request.includes(s.file) && a.range !== '');
    expect(hits).to.deep.equal([{ status: 206, bytes: whole.length - half, range: `bytes=${half}-`, request: `GET /${s.file} HTTP/1.1` }]);
    expect(serving).to.equal(versions[2].height);
    expect(await p.syncOnce()).to.equal('current');
    p.close();
  });

  it('a corrupted download is refused and retried: the old file keeps serving until the good one verifies', async () => {
    await publishSnapshot({ db: versions[0].file, to: dir, keep: 3, compress: 'auto', allowOlder: true }); // each test starts the shared origin over
    const db = join(mkdtempSync(join(pullTmp(), 'replica-')), 'local.sqlite');
    const r = await startServe(['--pull', `${origin.url}/manifest.json`, '--pull-interval', '300ms', '--db', db]);
    replicas.push(r);
    await eventually('ready', async () => (await get(`${r.url}/ready`)).status === 200);
    const before = shaOf(db);
    const s = await stage(versions[3]);
    const bad = Buffer.from(readFileSync(join(s.dir, s.file)));
    bad[Math.floor(bad.length / 2)] ^= 0xff;
    writeFileSync(join(dir, s.file), bad);
    place(s.manifest, join(dir, 'manifest.json'));
    const failed = await r.line('a failed pull', (l) => l.msg === 'pull failed; still serving the current file');
    expect(String(failed.error)).to.match(/sha256 [0-9a-f]{64} ≠ manifest/);
    expect((await getJson(`${r.url}/status`)).height).to.equal(versions[0].height);
    expect(shaOf(db)).to.equal(before);
    place(join(s.dir, s.file), join(dir, s.file));
    await eventually('the good file', async () => (await getJson(`${r.url}/status`)).height === versions[3].height || undefined);
    await r.line('the swap', (l) => l.msg === 'snapshot swapped' && l.height === versions[3].height);
    expect(r.lines.filter((l) => l.msg === 'snapshot swapped').map((l) => l.height)).to.deep.equal([versions[0].height, versions[3].height]);
    await r.stop();
  });

  it('a file of a newer wire format (published by a newer release) is refused with one line naming the version; the old file keeps serving', async () => {
    await publishSnapshot({ db: versions[0].file, to: dir, keep: 3, compress: 'auto', allowOlder: true }); // each test starts the shared origin over
    const db = join(mkdtempSync(join(pullTmp(), 'replica-')), 'local.sqlite');
    const r = await startServe(['--pull', `${origin.url}/manifest.json`, '--pull-interval', '300ms', '--db', db]);
    replicas.push(r);
    await eventually('ready', async () => (await get(`${r.url}/ready`)).status === 200);
    const newer = join(mkdtempSync(join(pullTmp(), 'newer-')), 'newer.sqlite');
    copyFileSync(versions[3].file, newer);
    const w = new Database(newer);
    w.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)').run(WIRE_FORMAT_META_KEY, String(WIRE_FORMAT_VERSION + 1));
    w.close();
    await publishSnapshot({ db: newer, to: dir, keep: 3, compress: 'auto' }).catch((e: Error) => {
      // publish itself reads the file: it refuses it too, so publish by hand what a newer release would
      expect(e.message).to.contain(`wire format ${WIRE_FORMAT_VERSION + 1}`);
    });
    const s = await stage(versions[3]);
    const m = JSON.parse(readFileSync(s.manifest, 'utf8')) as Manifest;
    const gz = gzipSync(readFileSync(newer));
    const file = `${m.height}-${shaOf(newer).slice(0, 16)}.sqlite.gz`;
    writeFileSync(join(dir, file), gz);
    m.file = file;
    m.encoding = 'gzip';
    m.sha256 = shaOf(newer);
    m.size = statSync(newer).size;
    m.file_sha256 = createHash('sha256').update(gz).digest('hex');
    m.file_size = gz.length;
    writeFileSync(join(s.dir, 'manifest.json'), JSON.stringify(m));
    place(join(s.dir, 'manifest.json'), join(dir, 'manifest.json'));
    const refused = await r.line('the refusal', (l) => /wire format/.test(String(l.error ?? '')));
    expect(String(refused.error)).to.contain(`wire format ${WIRE_FORMAT_VERSION + 1}, newer than this indexer-api renders (${WIRE_FORMAT_VERSION})`);
    await new Promise((d) => setTimeout(d, 1_000));
    expect((await getJson(`${r.url}/status`)).height).to.equal(versions[0].height);
    expect((await get(`${r.url}/ready`)).status).to.equal(200);
    await r.stop();
  });

  it('a file whose sha256 matches but fails quick_check is never installed', async () => {
    // A publisher that shipped a damaged file with its right hash: sha256 passes, quick_check not.
    const s = await stage(versions[3], 'none');
    corruptMiddlePage(join(s.dir, s.file));
    const m = JSON.parse(readFileSync(s.manifest, 'utf8')) as Manifest;
    m.sha256 = m.file_sha256 = shaOf(join(s.dir, s.file));
    writeFileSync(s.manifest, JSON.stringify(m));
    place(join(s.dir, s.file), join(dir, s.file));
    place(s.manifest, join(dir, 'manifest.json'));
    const db = join(mkdtempSync(join(pullTmp(), 'replica-')), 'local.sqlite');
    let installs = 0;
    const p = new Puller({ manifestUrl: `${origin.url}/manifest.json`, db, intervalMs: 1_000, localHeight: () => undefined, install: () => { installs++; return true; } });
    let err: Error | undefined;
    try { await p.syncOnce(); } catch (e) { err = e as Error; }
    p.close();
    expect(err?.message, err?.message).to.match(/^check failed: .*(?:invalid page number|database disk image is malformed)/);
    expect(installs).to.equal(0);
    let exists = true;
    try { statSync(db); } catch { exists = false; }
    expect(exists).to.equal(false);
  });
});
