import { SCHEMA_VERSION } from '../../src/snapshot/schema';
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runGenerate } from '../../src/commands/generate';
import { runImport } from '../../src/import/run';
import { MAX_OFFSET } from '../../src/snapshot/list-query';
import { RANK_STEP } from '../../src/snapshot/richlist-ranks';
import { openDatabase } from '../../src/sqlite';
import { Served, serveSnapshot } from '../helpers/same-answers';

/**
 * A rich list pages by offset at any depth (Celatone pages a denom's holders by offset, 10 a
 * page): every offset — around each rank mark, past 10,000, at the end and past it, both orders,
 * as pagination.offset and as rollytics' offset key — answers the rows a keyset walk finds there.
 * A version-2 file (no marks) still serves offsets up to 10,000 and says what serves deeper ones;
 * `import --base` brings it to the current version. Real files, a real server on 127.0.0.1.
 */
describe('rich list: pages at any offset (rank marks, schema v3)', function () {
  this.timeout(300_000);
  const work = mkdtempSync(join(tmpdir(), 'indexer-api-ranks-'));
  /** generate --holders: holders per denom asked for (a few fall together: the list's own count is `total`) */
  const ASKED = 12_345;
  const DENOM = 'uinit';
  let total = 0;
  let file = '';
  let s: Served;
  const all: { account: string; amount: string }[] = [];
  const served: Served[] = [];

  interface Body { holders: { account: string; amount: string }[]; pagination: { next_key: string | null; total: string; previous_key: string | null } }
  async function page(srv: Served, q: string): Promise<{ status: number; body: Body & { message?: string } }> {
    const r = await fetch(`${srv.url}/indexer/richlist/v1/${DENOM}?${q}`);
    return { status: r.status, body: JSON.parse(await r.text()) as Body & { message?: string } };
  }

  before(async () => {
    const dump = join(work, 'dump');
    await runGenerate({ vm: 'wasm', out: dump, preset: 'demo', seed: 7, holders: ASKED, gzip: false, force: true, quiet: true });
    file = join(work, 'chain.sqlite');
    await runImport({ fromDump: dump, out: file, force: false, quiet: true, json: false });
    s = await serveSnapshot(file);
    served.push(s);
    // the whole list, largest first, by keys (the cursor path, tested on every list)
    let key: string | null = null;
    do {
      const p = await page(s, `pagination.limit=1000${key === null ? '' : `&pagination.key=${encodeURIComponent(key)}`}`);
      all.push(...p.body.holders);
      key = p.body.pagination.next_key;
      total = Number(p.body.pagination.total);
    } while (key !== null);
  });
  after(async () => {
    for (const x of served) await x.close();
    rmSync(work, { recursive: true, force: true });
  });

  it('has the list it pages: more holders than MAX_OFFSET, and marks every RANK_STEP holders', () => {
    expect(all).to.have.length(total);
    expect(total).to.be.greaterThan(MAX_OFFSET).and.at.most(ASKED);
    const db = openDatabase(file, { readonly: true, fileMustExist: true });
    try {
      expect(db.pragma('user_version', { simple: true })).to.equal(SCHEMA_VERSION);
      const marks = db.prepare('SELECT rank FROM richlist_ranks WHERE denom = ? ORDER BY rank').pluck().all(DENOM) as number[];
      expect(marks).to.deep.equal(Array.from({ length: Math.ceil(total / RANK_STEP) }, (_, i) => i * RANK_STEP));
    } finally { db.close(); }
  });

  const offsets = (): number[] => {
    const around = [1, RANK_STEP - 1, RANK_STEP, RANK_STEP + 1, 2 * RANK_STEP - 1, 5 * RANK_STEP + 17, MAX_OFFSET - 1, MAX_OFFSET, MAX_OFFSET + 1,
      total - RANK_STEP - 1, total - RANK_STEP, total - 11, total - 10, total - 1, total, total + 7, 2 ** 53 - 1];
    return [...new Set([0, ...around, ...around.map((n) => Math.floor(total / RANK_STEP) * RANK_STEP + (n % RANK_STEP))])].filter((n) => n >= 0).sort((a, b) => a - b);
  };

  for (const reverse of [true, false]) {
    it(`every offset answers the rows a key walk finds there (reverse=${reverse}; limits 1, 10, 100)`, async () => {
      const list = reverse ? all : [...all].reverse();
      for (const n of offsets()) {
        for (const limit of [1, 10, 100]) {
          const p = await page(s, `pagination.offset=${n}&pagination.limit=${limit}&pagination.reverse=${reverse}`);
          expect(p.status, `offset ${n} limit ${limit}: ${JSON.stringify(p.body).slice(0, 200)}`).to.equal(200);
          expect(p.body.holders, `offset ${n} limit ${limit}`).to.deep.equal(list.slice(n, n + limit));
          expect(p.body.pagination.total).to.equal(String(total));
          expect(p.body.pagination.next_key === null, `offset ${n} limit ${limit}: next_key`).to.equal(n + limit >= total);
        }
      }
    });
  }

  it('rollytics\' offset key (base64 of "12000") is the same page; its next_key goes on from there', async () => {
    const key = Buffer.from('12000').toString('base64');
    const p = await page(s, `pagination.key=${key}&pagination.limit=10`);
    expect(p.status).to.equal(200);
    expect(p.body.holders).to.deep.equal(all.slice(12_000, 12_010));
    expect(p.body.pagination.previous_key).to.equal(Buffer.from('11990').toString('base64'));
    const next = await page(s, `pagination.key=${encodeURIComponent(p.body.pagination.next_key as string)}&pagination.limit=10`);
    expect(next.body.holders).to.deep.equal(all.slice(12_010, 12_020));
  });

  it('a version-2 file (no marks) serves offsets up to 10,000 and refuses deeper ones saying why; import --base brings it to the current version (marks and tag digests)', async () => {
    const old = join(work, 'v2.sqlite');
    const db = openDatabase(file, { readonly: true, fileMustExist: true });
    db.prepare('VACUUM INTO ?').run(old);
    db.close();
    const w = openDatabase(old, { fileMustExist: true });
    w.exec("DROP TABLE richlist_ranks; DROP TABLE tag_digests; UPDATE meta SET value = '2' WHERE key = 'schema_version'; PRAGMA user_version = 2;");
    w.close();
    const v2 = await serveSnapshot(old);
    served.push(v2);
    expect(v2.snapshot.meta.schemaVersion).to.equal(2);
    const shallow = await page(v2, `pagination.offset=${MAX_OFFSET}&pagination.limit=10`);
    expect(shallow.body.holders).to.deep.equal(all.slice(MAX_OFFSET, MAX_OFFSET + 10));
    const deep = await page(v2, `pagination.offset=${MAX_OFFSET + 1}&pagination.limit=10`);
    expect(deep.status).to.equal(400);
    expect(deep.body.message).to.equal(`invalid value for pagination.offset: ${MAX_OFFSET + 1} (offsets above ${MAX_OFFSET} are not served on this rich list: `
      + 'its snapshot predates rank marks (schema version 2; `follow` or `import --base` brings it to the current version); page with pagination.key, sending back each page\'s next_key)');

    const empty = join(work, 'no-new-heights');
    mkdirSync(empty);
    const upgraded = join(work, 'v3.sqlite');
    await runImport({ base: old, fromDump: empty, out: upgraded, force: false, quiet: true, json: false });
    const v3 = await serveSnapshot(upgraded);
    served.push(v3);
    expect(v3.snapshot.meta.schemaVersion).to.equal(SCHEMA_VERSION);
    const p = await page(v3, `pagination.offset=${total - 5}&pagination.limit=10`);
    expect(p.body.holders).to.deep.equal(all.slice(total - 5));
  });
});
