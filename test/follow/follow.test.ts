import { expect } from 'chai';
import { copyFileSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runGenerate } from '../../src/commands/generate';
import { runImport } from '../../src/import/run';
import { tableDigests } from '../../src/snapshot/digest';
import { freePort } from '../support/net';
import { DEMO, startServe } from '../helpers/serve';
import { demoCuts, differences, eventually, growingSource, startFollow, statusHeight } from '../helpers/follow';

describe('follow: a replica that stays current', function () {
  this.timeout(240_000);
  let tmp: string;
  before(() => { tmp = mkdtempSync(join(tmpdir(), 'indexer-api-follow-')); });

  it('imports a missing --db, then appends each new height of a growing API source while serve reads the same file, ending table-for-table equal to a fresh import', async () => {
    const { full, at } = await demoCuts();
    const src = await growingSource(at.get(150) as string);
    const db = join(tmp, 'live.sqlite');
    const follow = startFollow(['--db', db, '--from-api', src.url, '--interval', '100ms', '--batch-blocks', '40']);
    let serve;
    try {
      await follow.until('the first import', /following api .* from height 150/);
      serve = await startServe(['--db', db, '--commit-poll-ms', '50', '--log-level', 'warn']);
      expect(await statusHeight(serve.url)).to.equal(150);
      // A client checking, all along, that a list and its total come from the same batch.
      let stop = false;
      let checked = 0;
      const url = serve.url;
      const consistency = (async () => {
        while (!stop) {
          const r = await fetch(`${url}/indexer/block/v1/blocks?pagination.limit=1`);
          const b = (await r.json()) as { blocks: { height: string }[]; pagination: { total: string } };
          expect(b.blocks[0].height, 'newest block vs total of the same answer').to.equal(b.pagination.total);
          checked++;
        }
      })();
      let etag = (await fetch(`${url}/indexer/block/v1/blocks`)).headers.get('etag');
      for (const next of [at.get(250) as string, at.get(320) as string, full]) {
        src.show(next);
        const want = (await statusHeight(src.url));
        await eventually(`serve at height ${want}`, 60_000, async () => (await statusHeight(url)) === want || undefined);
        const page = await fetch(`${url}/indexer/block/v1/blocks`);
        const top = ((await page.json()) as { blocks: { height: string }[] }).blocks[0].height;
        expect(top).to.equal(String(want));
        const tag = page.headers.get('etag');
        expect(tag, 'ETag changes with the data').to.not.equal(etag);
        etag = tag;
        // Unchanged data, unchanged ETag (no new batch while the source stands still)
        expect((await fetch(`${url}/indexer/block/v1/blocks`)).headers.get('etag')).to.equal(etag);
      }
      stop = true;
      await consistency;
      expect(checked).to.be.greaterThan(10);
      const ready = await fetch(`${url}/metrics`);
      expect(await ready.text()).to.match(/indexer_api_newest_block_age_seconds \d/);
      expect(await follow.stop('SIGTERM')).to.deep.equal({ code: 0, signal: null });
      expect(follow.stderr).to.match(/stopped at height 400/);
      expect(differences(db, full)).to.deep.equal([]);
    } finally {
      await serve?.stop();
      await follow.stop('SIGKILL');
      await src.close();
    }
  });

  it('stops with one line and leaves the snapshot as it was when the source is below our height', async () => {
    const { at } = await demoCuts();
    const db = join(tmp, 'ahead.sqlite');
    copyFileSync(at.get(320) as string, db);
    const src = await growingSource(at.get(250) as string);
    try {
      const before = tableDigests(db);
      const follow = startFollow(['--db', db, '--from-api', src.url, '--interval', '100ms']);
      const exit = await follow.exited;
      expect(exit.code).to.equal(1);
      const errors = follow.lines.filter((l) => /went backwards/.test(l));
      expect(errors, follow.stderr).to.have.length(1);
      expect(errors[0]).to.contain('at height 250, below this snapshot\'s 320');
      expect(tableDigests(db)).to.deep.equal(before);
    } finally {
      await src.close();
    }
  });

  it('stops with one line when the source has another block at our height (a different chain history)', async () => {
    const { at } = await demoCuts();
    const dump = join(tmp, 'other-dump');
    await runGenerate({ vm: 'wasm', out: dump, preset: 'demo', seed: 2, gzip: false, force: true, quiet: true });
    const other = join(tmp, 'other.sqlite');
    await runImport({ fromDump: dump, out: other, force: true, quiet: true, json: false });
    const db = join(tmp, 'mine.sqlite');
    copyFileSync(at.get(150) as string, db);
    const src = await growingSource(other);
    try {
      const before = tableDigests(db);
      const follow = startFollow(['--db', db, '--from-api', src.url]);
      expect((await follow.exited).code).to.equal(1);
      const errors = follow.lines.filter((l) => /went backwards/.test(l));
      expect(errors, follow.stderr).to.have.length(1);
      expect(errors[0]).to.match(/has hash [0-9A-F]+ at height 150, this snapshot .* has [0-9A-F]+/);
      expect(tableDigests(db)).to.deep.equal(before);
    } finally {
      await src.close();
    }
  });

  it('names both chain ids when the source is another chain', async () => {
    const { at } = await demoCuts();
    const db = join(tmp, 'wasm-chain.sqlite');
    copyFileSync(at.get(150) as string, db);
    const src = await growingSource(DEMO('move'));
    try {
      const before = tableDigests(db);
      const follow = startFollow(['--db', db, '--from-api', src.url]);
      expect((await follow.exited).code).to.equal(1);
      const errors = follow.lines.filter((l) => /not following/.test(l));
      expect(errors, follow.stderr).to.have.length(1);
      expect(errors[0]).to.contain(`is chain "minimove-demo-1", this snapshot (${db}) is chain "miniwasm-demo-1"; not following another chain`);
      expect(tableDigests(db)).to.deep.equal(before);
    } finally {
      await src.close();
    }
  });

  it('retries an unreachable source with one log line per failure, never touching the snapshot, and exits 0 on SIGTERM', async () => {
    const { at } = await demoCuts();
    const db = join(tmp, 'waiting.sqlite');
    copyFileSync(at.get(150) as string, db);
    const before = tableDigests(db);
    const port = await freePort();
    const follow = startFollow(['--db', db, '--from-api', `http://127.0.0.1:${port}`, '--interval', '100ms', '--max-backoff', '400ms']);
    await follow.until('three failures', /failure 3;/);
    const failures = follow.lines.filter((l) => /failure \d+;/.test(l));
    expect(failures.length).to.be.at.least(3);
    // the reason in words, one attempt (follow retries the whole step), at level warn (test/follow/failing-source.test.ts)
    expect(failures[0]).to.match(/127\.0\.0\.1:\d+\/status: connection refused .*snapshot is unchanged/);
    expect(await follow.stop('SIGTERM')).to.deep.equal({ code: 0, signal: null });
    expect(tableDigests(db)).to.deep.equal(before);
    expect(existsSync(db)).to.equal(true);
  });

  it('serve --max-lag-s: /ready answers 503 on a replica whose newest block is too old, 200 without the option', async () => {
    const { at } = await demoCuts();
    const stale = await startServe(['--db', at.get(150) as string, '--max-lag-s', '60']);
    const fresh = await startServe(['--db', at.get(150) as string]);
    try {
      const r = await fetch(`${stale.url}/ready`);
      expect(r.status).to.equal(503);
      expect(((await r.json()) as { message: string }).message).to.match(/newest block \(height 150\) is \d+\.\d s old, over --max-lag-s 60/);
      expect((await fetch(`${fresh.url}/ready`)).status).to.equal(200);
    } finally {
      await stale.stop();
      await fresh.stop();
    }
  });
});
