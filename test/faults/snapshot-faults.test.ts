import { expect } from 'chai';
import { copyFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { verifySnapshotFile } from '../../src/snapshot/verify';
import { CLI, DEMO, eventually, get, metric, ROOT, serveTmp, smallSnapshots, startServe, cleanEnv } from '../helpers/serve';
import { BAD_KINDS, corruptPages, load, makeBad, publishCopy } from '../helpers/faults';
import { spawnSync } from 'node:child_process';

/** Paths that touch most of a small snapshot: blocks and their txs, by height. */
function everyHeight(height: number): string[] {
  const paths: string[] = [];
  for (let h = 1; h <= height; h++) paths.push(`/indexer/block/v1/blocks/${h}`, `/indexer/tx/v1/txs/by_height/${h}`);
  return paths;
}

describe('faults: damaged and incompatible snapshot files', function () {
  this.timeout(300_000);
  const work = (name: string): string => join(serveTmp(), `faults-${process.pid}-${name}`);

  describe('a file with corrupt pages in the middle, served with --no-verify', () => {
    it('answers 503 JSON (never 500) where a request meets the damage, /ready 503, one log line, a metric; a good swap clears it', async () => {
      const db = work('corrupt-start.sqlite');
      copyFileSync(DEMO('wasm'), db);
      corruptPages(db, 20, 0.5);
      const s = await startServe(['--db', db, '--no-verify', '--log-level', 'warn', '--cache-entries', '0']);
      try {
        expect((await get(`${s.url}/ready`)).status).to.equal(200);
        const statuses = new Map<number, number>();
        for (const path of everyHeight(400)) {
          const r = await get(s.url + path);
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
          if (r.status === 503) expect(JSON.parse(r.body)).to.deep.include({ code: 14 });
        }
        expect([...statuses.keys()].sort(), JSON.stringify([...statuses])).to.deep.equal([200, 503]);
        console.log(`      ${statuses.get(200)} requests answered 200, ${statuses.get(503)} met the damage and got 503, 0 got 500`);
        const ready = await get(`${s.url}/ready`);
        expect(ready.status).to.equal(503);
        expect(JSON.parse(ready.body).message).to.match(/damaged/);
        const text = (await get(`${s.url}/metrics`)).body;
        expect(metric(text, 'indexer_api_storage_errors_total', 'code="SQLITE_CORRUPT"')).to.equal(statuses.get(503));
        const lines = s.lines.filter((l) => l.level === 'error');
        expect(lines).to.have.length(1);
        expect(lines[0]).to.include({ file: db, code: 'SQLITE_CORRUPT' });

        const [good] = await smallSnapshots();
        publishCopy(good.file, db);
        await eventually('the good swap', async () => (await get(`${s.url}/ready`)).status === 200 || undefined);
        expect(JSON.parse((await get(`${s.url}/ready`)).body).height).to.equal(good.height);
        for (const path of everyHeight(good.height)) expect((await get(s.url + path)).status, path).to.equal(200);
      } finally {
        await s.stop();
        rmSync(db, { force: true });
      }
    });
  });

  describe('a damaged file under a cluster (--workers 2): the replica as a whole leaves rotation', () => {
    it('after one worker meets the damage, /ready answers 503 from every worker', async () => {
      const db = work('corrupt-cluster.sqlite');
      copyFileSync(DEMO('wasm'), db);
      corruptPages(db, 20, 0.5);
      const s = await startServe(['--db', db, '--no-verify', '--workers', '2', '--log-level', 'warn', '--cache-entries', '0']);
      try {
        let damaged = false;
        for (const path of everyHeight(400)) {
          if ((await get(s.url + path)).status === 503) { damaged = true; break; }
        }
        expect(damaged, 'a request met the damage').to.equal(true);
        // new connections are spread over both workers (round robin): each must say 503
        await eventually('every worker out of rotation', async () => {
          const statuses = await Promise.all(Array.from({ length: 10 }, async () => (await get(`${s.url}/ready`)).status));
          return statuses.every((st) => st === 503) || undefined;
        });
        const pids = new Set(s.lines.filter((l) => /damaged/.test(String(l.msg))).map((l) => l.pid));
        expect(pids.size, JSON.stringify(s.lines)).to.equal(2);
      } finally {
        await s.stop();
        rmSync(db, { force: true });
      }
    });
  });

  describe('refused at start with one line', () => {
    for (const kind of BAD_KINDS) {
      it(`${kind}: exit 1, one stderr line naming the file`, () => {
        const db = work(`start-${kind.replace(/\W+/g, '-')}.sqlite`);
        makeBad(kind, DEMO('wasm'), db);
        const r = spawnSync(process.execPath, [CLI, 'serve', '--workers', '1', '--port', '0', '--db', db], { cwd: ROOT, encoding: 'utf8', env: cleanEnv(), timeout: 60_000 });
        expect(r.status, r.stderr).to.equal(1);
        const lines = r.stderr.trim().split('\n');
        expect(lines, r.stderr).to.have.length(1);
        expect(lines[0]).to.match(/^indexer-api: .*/).and.include(db);
        if (kind === 'meta schema_version 99') expect(lines[0]).to.include('schema_version is "99"');
        if (kind === 'corrupt pages') expect(lines[0]).to.include('quick check');
        rmSync(db, { force: true });
      });
    }
  });

  describe('verifySnapshotFile (the check anyone can call on a received file)', () => {
    it('resolves for a good snapshot and rejects every bad kind with one line naming the file', async () => {
      await verifySnapshotFile(DEMO('move'));
      for (const kind of BAD_KINDS) {
        const f = work(`verify-${kind.replace(/\W+/g, '-')}.sqlite`);
        makeBad(kind, DEMO('wasm'), f);
        const err = await verifySnapshotFile(f).then(() => undefined, (e: Error) => e);
        expect(err, kind).to.be.instanceOf(Error);
        expect(err?.message, kind).to.include(f).and.not.include('\n');
        rmSync(f, { force: true });
      }
    });
  });

  describe('20 bad swaps of each kind under load', () => {
    it('refuses every one (one error line each), keeps serving the old file: 0 failed requests', async () => {
      const [first, second] = await smallSnapshots();
      const db = work('swaps.sqlite');
      publishCopy(first.file, db);
      const s = await startServe(['--db', db, '--log-level', 'warn', '--watch-poll-ms', '200']);
      const traffic = load(s.url, everyHeight(first.height).slice(0, 40).concat(['/status', '/indexer/tx/v1/txs?pagination.limit=10']));
      const bad = work('bad.sqlite');
      let refusals = 0;
      try {
        for (const kind of BAD_KINDS) {
          for (let i = 0; i < 20; i++) {
            makeBad(kind, second.file, bad);
            const from = s.lines.length;
            publishCopy(bad, db);
            const l = await s.line(`refusal of ${kind} #${i}`, (x) => x.msg === 'new snapshot refused; still serving the old one', from);
            expect(String(l.error), kind).to.include(db).and.not.include('\n');
            refusals++;
          }
        }
        const r = await traffic.stop();
        expect(r.failed.slice(0, 5), `${r.failed.length} failed of ${r.ok + r.failed.length}`).to.deep.equal([]);
        expect(r.ok).to.be.greaterThan(100);
        console.log(`      ${refusals} bad swaps refused under load; ${r.ok} requests answered 200, ${r.failed.length} failed`);
        expect(refusals).to.equal(BAD_KINDS.length * 20);
        const text = (await get(`${s.url}/metrics`)).body;
        expect(metric(text, 'indexer_api_snapshot_swap_failures_total')).to.equal(refusals);
        expect(metric(text, 'indexer_api_snapshot_swaps_total')).to.equal(0);
        // still ready on the old file, and /ready names the file refused last and why
        const ready = await get(`${s.url}/ready`);
        expect(ready.status).to.equal(200);
        const notServed = (JSON.parse(ready.body) as { files_not_served: { file: string; error: string }[] }).files_not_served;
        expect(notServed).to.have.length(1);
        expect(notServed[0].file).to.equal(db);
        expect(notServed[0].error).to.include('quick check');
        // and a good file still swaps in afterwards, which clears it
        publishCopy(second.file, db);
        await eventually('the good swap', async () => JSON.parse((await get(`${s.url}/ready`)).body).height === second.height || undefined);
        expect(JSON.parse((await get(`${s.url}/ready`)).body)).to.not.have.property('files_not_served');
      } finally {
        await traffic.stop();
        await s.stop();
      }
    });
  });
});
