import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { closeSync, copyFileSync, mkdtempSync, openSync, readdirSync, readFileSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { parseManifest } from '../../src/publish/manifest';
import { publishSnapshot } from '../../src/publish/publish';
import { openSnapshot } from '../../src/snapshot/open';
import { chainVersions, pullTmp } from './helpers';

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
});
