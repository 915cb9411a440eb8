import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runImport } from '../../src/import/run';
import { generateDump } from '../../src/generate/index';
import { openDatabase } from '../../src/sqlite';
import { openSnapshot } from '../../src/snapshot/open';
import { RANK_STEP } from '../../src/snapshot/richlist-ranks';
import { DEMO } from '../helpers/serve';
import { demoCuts, differences, growingSource, sleep, startFollow } from '../helpers/follow';

/** kill -9 points (FAULT_POINTS; small for `make test`, 50 in the fault suite) */
const POINTS = Number(process.env.FAULT_POINTS ?? 4);

function heightOf(file: string): number {
  const s = openSnapshot(file);
  try { return s.meta.height; } finally { s.close(); }
}

/**
 * What a reader of `file` sees of the rich list: a digest of its rows (denom, account, amount),
 * whether richlist_denoms counts them right and the rank marks are those of these rows (every
 * RANK_STEP-th holder from the top: src/snapshot/richlist-ranks.ts), and whether a build beside
 * was left in the file.
 */
function richListOf(file: string): { digest: string; countsAgree: boolean; marksAgree: boolean; leftover: boolean } {
  const db = openDatabase(file, { readonly: true, fileMustExist: true });
  try {
    const h = createHash('sha256');
    for (const r of db.prepare('SELECT denom, hex(account), amount_key FROM richlist ORDER BY denom, account').raw().iterate() as IterableIterator<string[]>) {
      h.update(r.join(' ') + '\n');
    }
    const off = db.prepare(`SELECT count(*) FROM (SELECT denom, count(*) AS n FROM richlist GROUP BY denom) r
      FULL JOIN richlist_denoms d USING (denom) WHERE r.n IS NOT d.holder_count`).pluck().get() as number;
    const leftover = db.prepare("SELECT count(*) FROM sqlite_master WHERE name IN ('richlist_next', 'richlist_old')").pluck().get() as number;
    const marks = (sql: string): string => JSON.stringify(db.prepare(sql).raw().all());
    const marksAgree = marks('SELECT denom, rank, amount_key, hex(account) FROM richlist_ranks ORDER BY denom, rank') === marks(`
      SELECT denom, rn - 1, amount_key, hex(account) FROM (SELECT denom, amount_key, account,
        row_number() OVER (PARTITION BY denom ORDER BY amount_key DESC, account DESC) AS rn FROM richlist)
      WHERE (rn - 1) % ${RANK_STEP} = 0 ORDER BY denom, rn`);
    return { digest: h.digest('hex').slice(0, 16), countsAgree: off === 0, marksAgree, leftover: leftover > 0 };
  } finally {
    db.close();
  }
}

/**
 * `b`: a copy of `a` whose rich list is `from`'s (another state of the source at the same
 * height: every refresh that alternates between them has rows to write).
 */
function withRichListOf(a: string, from: string, b: string): void {
  copyFileSync(a, b);
  const db = openDatabase(b);
  try {
    db.prepare('ATTACH DATABASE ? AS f').run(from);
    db.exec(`DELETE FROM richlist; INSERT INTO richlist SELECT * FROM f.richlist;
      DELETE FROM richlist_denoms; INSERT INTO richlist_denoms SELECT * FROM f.richlist_denoms;
      DELETE FROM richlist_ranks; INSERT INTO richlist_ranks SELECT * FROM f.richlist_ranks;
      UPDATE meta SET value = '${Date.now()}' WHERE key = 'snapshot_id';`);
    db.exec('DETACH DATABASE f');
  } finally {
    db.close();
  }
}

describe('follow under kill -9', function () {
  this.timeout(120_000 + POINTS * 20_000);

  it(`killed at ${POINTS} random moments, each restart resumes from the last committed batch with no gap and no duplicate, ending equal to a fresh import`, async () => {
    const { full, at } = await demoCuts();
    const tmp = mkdtempSync(join(tmpdir(), 'indexer-api-follow-kill-'));
    const db = join(tmp, 'chain.sqlite');
    copyFileSync(at.get(150) as string, db);
    const src = await growingSource(full);
    try {
      let last = heightOf(db);
      let kills = 0;
      for (let i = 0; i < POINTS && last < 400; i++) {
        const f = startFollow(['--db', db, '--from-api', src.url, '--interval', '50ms', '--batch-blocks', String(5 + (i % 4) * 5)]);
        await f.until('start', /following /);
        await sleep(Math.floor(Math.random() * 1500));
        f.proc.kill('SIGKILL');
        const exit = await f.exited;
        if (exit.signal === 'SIGKILL') kills++;
        // Whatever the moment, the file opens and holds a whole number of batches, never less than before.
        const h = heightOf(db);
        expect(h, `after kill ${i + 1}`).to.be.at.least(last);
        last = h;
      }
      expect(kills).to.be.at.least(Math.min(POINTS, 1));
      const f = startFollow(['--db', db, '--from-api', src.url, '--interval', '50ms']);
      await f.until('caught up', /0 behind|from height 400 /);
      expect(await f.stop('SIGTERM')).to.deep.equal({ code: 0, signal: null });
      expect(differences(db, full)).to.deep.equal([]);
    } finally {
      await src.close();
    }
  });

  for (const [path, args] of [
    ['written in place (one transaction)', []],
    // tiny chunks: the build beside takes many transactions, a kill lands between them
    ['built beside in chunks and swapped in', ['--richlist-swap-rows', '10', '--richlist-chunk-rows', '20']],
  ] as [string, string[]][]) {
    it(`killed in the middle of a rich-list refresh ${path}: readers see one whole rich list, the next start resumes, ending equal to a fresh import`, async () => {
      const tmp = mkdtempSync(join(tmpdir(), 'indexer-api-follow-kill-richlist-'));
      // the EVM demo chain at 360 (the generator's prefix: the rich list of that height), then whole
      const dump = join(tmp, 'dump-360');
      await generateDump({ vm: 'evm', out: dump, preset: 'demo', untilHeight: 360, force: true });
      const at360 = join(tmp, 'at-360.sqlite');
      await runImport({ fromDump: dump, out: at360, force: true, quiet: true, json: false });
      const a = DEMO('evm');
      const b = join(tmp, 'b.sqlite');
      withRichListOf(a, at360, b);
      const states = new Set([richListOf(a).digest, richListOf(b).digest]);
      expect(states.size).to.equal(2);
      const denomsDb = openDatabase(a, { readonly: true });
      const contracts = denomsDb.prepare('SELECT denom FROM richlist_denoms ORDER BY denom').pluck().all() as string[];
      denomsDb.close();
      const src = await growingSource(at360);
      const db = join(tmp, 'live.sqlite');
      await runImport({ fromApi: src.url, out: db, force: true, quiet: true, json: false, denoms: contracts });
      states.add(richListOf(db).digest);
      const run = (): ReturnType<typeof startFollow> => startFollow(['--db', db, '--from-api', src.url, '--denoms', contracts.join(','),
        '--interval', '50ms', '--batch-blocks', '5', '--richlist-interval', '10m', ...args]);
      try {
        // how long a refresh takes here: the kills land within it
        src.show(a);
        let f = run();
        const first = await f.until('the first refresh', /rich list at height 400: .*: (\d+) came, (\d+) went; (.*) \((\d+) ms in all\)/);
        expect(Number(first[1]) + Number(first[2])).to.be.greaterThan(10);
        expect(first[3]).to.match(args.length ? /^built beside / : /^written in place /);
        const refreshMs = Number(first[4]);
        expect(await f.stop('SIGTERM')).to.deep.equal({ code: 0, signal: null });
        let midRefresh = 0;
        let leftBeside = 0;
        // alternate the source's rich list, so that every start has rows to write; a build
        // beside must be seen killed between its chunks at least once
        for (let i = 0; i < 3 * POINTS && (i < POINTS || (args.length > 0 && leftBeside === 0)); i++) {
          src.show(i % 2 === 0 ? b : a);
          f = run();
          await f.until('start', /following /);
          await sleep(Math.floor(Math.random() * refreshMs));
          f.proc.kill('SIGKILL');
          await f.exited;
          if (!/rich list at height/.test(f.stderr)) midRefresh++;
          const seen = richListOf(db);
          expect(states.has(seen.digest), `kill ${i + 1}: the rich list is one of the source's states, not a mix`).to.equal(true);
          expect(seen.countsAgree, `kill ${i + 1}: richlist_denoms counts the rows`).to.equal(true);
          expect(seen.marksAgree, `kill ${i + 1}: the rank marks are the rows'`).to.equal(true);
          if (seen.leftover) leftBeside++;
          expect(heightOf(db), `kill ${i + 1}`).to.be.within(360, 400);
        }
        expect(midRefresh, 'kills before the refresh finished').to.be.greaterThan(0);
        if (args.length) expect(leftBeside, 'kills between the chunks of a build beside').to.be.greaterThan(0);
        src.show(a);
        f = run();
        await f.until('the refresh', /rich list at height 400: /);
        await f.until('caught up', /heights \d+\.\.400 |from height 400 /);
        expect(await f.stop('SIGTERM')).to.deep.equal({ code: 0, signal: null });
        expect(richListOf(db)).to.deep.equal({ ...richListOf(a), leftover: false });
        const fresh = join(tmp, 'fresh.sqlite');
        await runImport({ fromApi: src.url, out: fresh, force: true, quiet: true, json: false, denoms: contracts });
        // NFT links of NFTs burned after 360: a crawl cannot see them (test/follow/api-nft.test.ts)
        expect(differences(db, fresh).filter((d) => !/^(nft_tx(s|_counts): |tag_digests c:)/.test(d))).to.deep.equal([]);
      } finally {
        await src.close();
      }
    });
  }
});
