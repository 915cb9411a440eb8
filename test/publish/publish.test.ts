import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { closeSync, copyFileSync, mkdtempSync, openSync, readdirSync, readFileSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { parseManifest } from '../../src/publish/manifest';
import { publishSnapshot } from '../../src/publish/publish';
import { openSnapshot } from '../../src/snapshot/open';
import { spawnSync } from 'node:child_process';
import { CLI, cleanEnv, DEMO, ROOT } from '../helpers/serve';
import { chainVersions, pullTmp } from '../helpers/pull';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

describe('indexer-api publish', () => {
  it('writes a gzip, content-addressed copy that opens as the same snapshot, and a manifest naming it', async () => {
    const [v] = await chainVersions();
    const to = mkdtempSync(join(pullTmp(), 'pub-'));
    const r = await publishSnapshot({ db: v.file, to, keep: 3, compress: 'auto' });
    const m = parseManifest(readFileSync(join(to, 'manifest.json'), 'utf8'), 'manifest.json');
    expect(m).to.deep.equal(r.manifest);
    expect(m.height).to.equal(v.height);
    expect(m.file).to.equal(`${v.height}-${m.sha256.slice(0, 16)}.sqlite.gz`);
    expect(m.encoding).to.equal('gzip');
    const stored = readFileSync(join(to, m.file));
    expect(stored.length).to.equal(m.file_size);
    expect(sha(stored)).to.equal(m.file_sha256);
    const plain = gunzipSync(stored);
    expect(plain.length).to.equal(m.size);
    expect(sha(plain)).to.equal(m.sha256);
    const copy = join(to, 'copy.sqlite');
    writeFileSync(copy, plain);
    const s = openSnapshot(copy, { verify: true });
    expect(s.meta.height).to.equal(v.height);
    expect(m.snapshot_id).to.equal(s.meta.snapshotId);
    expect(m.chain_id).to.equal(s.meta.chainId);
    s.close();
    expect(readdirSync(to).filter((n) => n.startsWith('.publish-'))).to.deep.equal([]);
  });

  it('publishing the same content again reuses the file; --keep 2 deletes the oldest data files, never the current one', async () => {
    const vs = await chainVersions();
    const to = mkdtempSync(join(pullTmp(), 'pub-'));
    const first = await publishSnapshot({ db: vs[0].file, to, keep: 2, compress: 'auto' });
    const again = await publishSnapshot({ db: vs[0].file, to, keep: 2, compress: 'auto' });
    expect(again.reused).to.equal(true);
    expect(again.manifest.file).to.equal(first.manifest.file);
    const second = await publishSnapshot({ db: vs[1].file, to, keep: 2, compress: 'auto' });
    expect(second.removed).to.deep.equal([]);
    const third = await publishSnapshot({ db: vs[2].file, to, keep: 2, compress: 'auto' });
    expect(third.removed).to.deep.equal([first.manifest.file]);
    expect(readdirSync(to).sort()).to.deep.equal([second.manifest.file, third.manifest.file, 'manifest.json'].sort());
  });

  it('--compress none stores the SQLite file as is', async () => {
    const [v] = await chainVersions();
    const to = mkdtempSync(join(pullTmp(), 'pub-'));
    const { manifest: m } = await publishSnapshot({ db: v.file, to, keep: 3, compress: 'none' });
    expect(m.encoding).to.equal('identity');
    expect(m.file).to.match(/^\d+-[0-9a-f]{16}\.sqlite$/);
    expect(m.file_sha256).to.equal(m.sha256);
    expect(sha(readFileSync(join(to, m.file)))).to.equal(m.sha256);
  });

  it('refuses a file that is not a snapshot, naming it, and writes nothing', async () => {
    const bad = join(pullTmp(), 'not-a-snapshot.sqlite');
    writeFileSync(bad, 'hello');
    const to = mkdtempSync(join(pullTmp(), 'pub-'));
    let err: Error | undefined;
    try { await publishSnapshot({ db: bad, to, keep: 3, compress: 'auto' }); } catch (e) { err = e as Error; }
    expect(err?.message).to.equal(`not a SQLite database: ${bad}`);
    expect(readdirSync(to)).to.deep.equal([]);
  });

  it('refuses a damaged snapshot (the copy reads every page), naming it', async () => {
    const [v] = await chainVersions();
    const broken = join(pullTmp(), 'damaged.sqlite');
    copyFileSync(v.file, broken);
    const fd = openSync(broken, 'r+');
    writeSync(fd, Buffer.alloc(64, 0xff), 0, 64, Math.floor(statSync(broken).size / 4096 / 2) * 4096);
    closeSync(fd);
    const to = mkdtempSync(join(pullTmp(), 'pub-'));
    let err: Error | undefined;
    try { await publishSnapshot({ db: broken, to, keep: 3, compress: 'auto' }); } catch (e) { err = e as Error; }
    expect(err?.message).to.match(new RegExp(`^cannot copy ${broken} \\(nothing published\\): database disk image is malformed`));
    expect(readdirSync(to)).to.deep.equal([]);
  });

  it('refuses a directory whose manifest names another chain (exit 1, one line, the directory as it was); --new-chain starts it over', async () => {
    const [v] = await chainVersions();
    const to = mkdtempSync(join(pullTmp(), 'pub-'));
    const first = await publishSnapshot({ db: v.file, to, keep: 3, compress: 'auto' });
    const before = readdirSync(to).sort().map((n) => [n, sha(readFileSync(join(to, n)))]);
    const other = DEMO('wasm');
    const cli = (args: string[]): { status: number | null; stdout: string; stderr: string } => spawnSync(process.execPath, [CLI, 'publish', '--quiet', ...args], { cwd: ROOT, encoding: 'utf8', env: cleanEnv() });
    const r = cli(['--db', other, '--to', to]);
    expect(r.status, r.stderr).to.equal(1);
    expect(r.stderr).to.equal(`indexer-api: ${join(to, 'manifest.json')} names chain "${first.manifest.chain_id}" (height ${first.manifest.height}), ${other} is chain "miniwasm-demo-1": `
      + `not publishing another chain into a directory whose replicas serve "${first.manifest.chain_id}"; to start ${to} over with chain "miniwasm-demo-1", pass --new-chain `
      + '(its replicas then refuse it until restarted with --expect-chain-id miniwasm-demo-1)\n');
    expect(readdirSync(to).sort().map((n) => [n, sha(readFileSync(join(to, n)))])).to.deep.equal(before);
    const started = cli(['--db', other, '--to', to, '--new-chain']);
    expect(started.status, started.stderr).to.equal(0);
    expect(parseManifest(readFileSync(join(to, 'manifest.json'), 'utf8'), 'manifest.json').chain_id).to.equal('miniwasm-demo-1');
    // the same chain again needs no flag
    expect(cli(['--db', other, '--to', to]).status).to.equal(0);
  });

  it('refuses to move the manifest back to a lower height of its chain (exit 1, one line naming both heights, the directory as it was); --allow-older rolls it back', async () => {
    const [low, high] = await chainVersions();
    expect(low.height).to.be.below(high.height);
    const to = mkdtempSync(join(pullTmp(), 'pub-'));
    await publishSnapshot({ db: high.file, to, keep: 3, compress: 'auto' });
    const before = readdirSync(to).sort().map((n) => [n, sha(readFileSync(join(to, n)))]);
    const cli = (args: string[]): { status: number | null; stdout: string; stderr: string } => spawnSync(process.execPath, [CLI, 'publish', '--quiet', ...args], { cwd: ROOT, encoding: 'utf8', env: cleanEnv() });
    const r = cli(['--db', low.file, '--to', to]);
    expect(r.status, r.stderr).to.equal(1);
    expect(r.stdout).to.equal('');
    expect(r.stderr).to.equal(`indexer-api: ${join(to, 'manifest.json')} names height ${high.height} of chain "minimove-demo-1", ${low.file} is at height ${low.height}: `
      + `not moving the manifest back (replicas at ${high.height} would skip it, a new replica would start at ${low.height}); to roll ${to} back to height ${low.height}, pass --allow-older\n`);
    expect(readdirSync(to).sort().map((n) => [n, sha(readFileSync(join(to, n)))])).to.deep.equal(before);
    // the same height again (the same file, or a re-import of it) is no step back
    expect(cli(['--db', high.file, '--to', to]).status).to.equal(0);
    const rolled = cli(['--db', low.file, '--to', to, '--allow-older']);
    expect(rolled.status, rolled.stderr).to.equal(0);
    expect(rolled.stdout).to.match(new RegExp(`^indexer-api: published height ${low.height} as `));
    expect(parseManifest(readFileSync(join(to, 'manifest.json'), 'utf8'), 'manifest.json').height).to.equal(low.height);
  });

  it('refuses to publish over a manifest.json that is not a manifest, unless --new-chain', async () => {
    const [v] = await chainVersions();
    const to = mkdtempSync(join(pullTmp(), 'pub-'));
    writeFileSync(join(to, 'manifest.json'), '{"format": 9}');
    let err: Error | undefined;
    try { await publishSnapshot({ db: v.file, to, keep: 3, compress: 'auto' }); } catch (e) { err = e as Error; }
    expect(err?.message).to.match(/^manifest .*manifest\.json: format must be 1, got 9: not publishing over it; to start .* over with chain ".*", pass --new-chain/);
    expect(readFileSync(join(to, 'manifest.json'), 'utf8')).to.equal('{"format": 9}');
    const r = await publishSnapshot({ db: v.file, to, keep: 3, compress: 'auto', newChain: true });
    expect(r.manifest.height).to.equal(v.height);
  });
});
