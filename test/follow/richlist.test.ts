import { SCHEMA_VERSION } from '../../src/snapshot/schema';
import { expect } from 'chai';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runImport } from '../../src/import/run';
import { generateDump } from '../../src/generate/index';
import { amountFromKey } from '../../src/lib/amount';
import { openDatabase } from '../../src/sqlite';
import { openSnapshot } from '../../src/snapshot/open';
import { RichListRefresher, WriteLock } from '../../src/follow/richlist-refresh';
import type { RichListReader } from '../../src/sources/contracts';
import { StopFlag } from '../../src/follow/follower';
import { RANK_STEP } from '../../src/snapshot/richlist-ranks';
import { DEMO } from '../helpers/serve';
import { differences, growingSource, startFollow } from '../helpers/follow';

function meta(file: string, key: string): string | undefined {
  const db = openDatabase(file, { readonly: true, fileMustExist: true });
  try { return db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get(key) as string | undefined; } finally { db.close(); }
}

function denoms(file: string): string[] {
  const db = openDatabase(file, { readonly: true, fileMustExist: true });
  try { return db.prepare('SELECT denom FROM richlist_denoms ORDER BY denom').pluck().all() as string[]; } finally { db.close(); }
}

/** The EVM demo chain as it was at `heights` (the generator's prefixes: rich list of that height), imported. */
async function evmCuts(tmp: string, heights: number[]): Promise<[number, string][]> {
  const out: [number, string][] = [];
  for (const h of heights) {
    const dump = join(tmp, `dump-${h}`);
    await generateDump({ vm: 'evm', out: dump, preset: 'demo', untilHeight: h, force: true });
    const file = join(tmp, `at-${h}.sqlite`);
    await runImport({ fromDump: dump, out: file, force: true, quiet: true, json: false });
    out.push([h, file]);
  }
  return out;
}

describe('follow: the rich list, refreshed apart from the block batches', function () {
  this.timeout(300_000);

  it('from an API with --denoms: batches leave rich_list_height alone, each refresh writes the changed holders only with the height it read, ending equal to a fresh import', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'indexer-api-follow-richlist-'));
    const cuts = await evmCuts(tmp, [360, 380]);
    cuts.push([400, DEMO('evm')]);
    const contracts = denoms(DEMO('evm'));
    const src = await growingSource(cuts[0][1]);
    const db = join(tmp, 'live.sqlite');
    await runImport({ fromApi: src.url, out: db, force: true, quiet: true, json: false, denoms: contracts });
    expect(meta(db, 'rich_list_height')).to.equal('360');
    // A long interval: one refresh at the start of each run, none during the batches.
    const run = (): ReturnType<typeof startFollow> => startFollow(['--db', db, '--from-api', src.url, '--denoms', contracts.join(','), '--interval', '50ms',
      '--batch-blocks', '5', '--richlist-interval', '10m']);
    let follow = run();
    try {
      await follow.until('the first refresh', /rich list at height 360: \d+ holders .*: 0 came, 0 went; nothing to write/);
      src.show(cuts[1][1]);
      await follow.until('height 380', /heights \d+\.\.380 /);
      // The batches did not read the rich list: it still says 360 until a refresh reads 380.
      expect(meta(db, 'rich_list_height'), 'rich_list_height after the batches').to.equal('360');
      expect(await follow.stop('SIGTERM')).to.deep.equal({ code: 0, signal: null });
      follow = run();
      const refreshed = await follow.until('a refresh at 380', /rich list at height 380: \d+ holders .*: (\d+) came, (\d+) went; written in place/);
      expect(Number(refreshed[1]), 'came').to.be.greaterThan(0);
      expect(Number(refreshed[2]), 'went').to.be.greaterThan(0);
      expect(meta(db, 'rich_list_height')).to.equal('380');
      src.show(cuts[2][1]);
      await follow.until('height 400', /heights \d+\.\.400 /);
      expect(await follow.stop('SIGTERM')).to.deep.equal({ code: 0, signal: null });
      follow = run();
      await follow.until('a refresh at 400', /rich list at height 400: /);
      expect(await follow.stop('SIGTERM')).to.deep.equal({ code: 0, signal: null });
      const fresh = join(tmp, 'fresh.sqlite');
      await runImport({ fromApi: src.url, out: fresh, force: true, quiet: true, json: false, denoms: contracts });
      // NFT links of NFTs burned after the start: a crawl cannot see them (test/follow/api-nft.test.ts)
      expect(differences(db, fresh).filter((d) => !/^(nft_tx(s|_counts): |tag_digests c:)/.test(d))).to.deep.equal([]);
      const s = openSnapshot(db);
      try { expect(s.meta.richListHeight).to.equal(400); } finally { s.close(); }
    } finally {
      await follow.stop('SIGKILL');
      await src.close();
    }
  });

  it('without --denoms: the batches never move rich_list_height (the rich list was not read)', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'indexer-api-follow-richlist-none-'));
    const cuts = await evmCuts(tmp, [380]);
    const src = await growingSource(cuts[0][1]);
    const db = join(tmp, 'live.sqlite');
    await runImport({ fromApi: src.url, out: db, force: true, quiet: true, json: false, denoms: denoms(DEMO('evm')) });
    const follow = startFollow(['--db', db, '--from-api', src.url, '--interval', '50ms', '--batch-blocks', '10']);
    try {
      await follow.until('start', /following /);
      src.show(DEMO('evm'));
      await follow.until('height 400', /heights \d+\.\.400 /);
      expect(await follow.stop('SIGTERM')).to.deep.equal({ code: 0, signal: null });
      expect(follow.stderr).not.to.match(/rich list at height/);
      expect(meta(db, 'rich_list_height')).to.equal('380');
    } finally {
      await follow.stop('SIGKILL');
      await src.close();
    }
  });

  it('a version-2 file (no rank marks) followed becomes the current version with its first batch: marks of every denom, tag digests, user_version and meta in one transaction', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'indexer-api-follow-ranks-'));
    const cuts = await evmCuts(tmp, [390]);
    const src = await growingSource(cuts[0][1]);
    const db = join(tmp, 'live.sqlite');
    await runImport({ fromApi: src.url, out: db, force: true, quiet: true, json: false, denoms: denoms(DEMO('evm')) });
    const v2 = openDatabase(db, { fileMustExist: true });
    v2.exec("DROP TABLE richlist_ranks; DROP TABLE tag_digests; UPDATE meta SET value = '2' WHERE key = 'schema_version'; PRAGMA user_version = 2;");
    v2.close();
    const follow = startFollow(['--db', db, '--from-api', src.url, '--interval', '50ms', '--batch-blocks', '10']);
    try {
      await follow.until('start', /following /);
      src.show(DEMO('evm'));
      await follow.until('height 400', /heights \d+\.\.400 /);
      expect(await follow.stop('SIGTERM')).to.deep.equal({ code: 0, signal: null });
    } finally {
      await follow.stop('SIGKILL');
      await src.close();
    }
    const d = openDatabase(db, { readonly: true, fileMustExist: true });
    try {
      expect(d.pragma('user_version', { simple: true })).to.equal(SCHEMA_VERSION);
      expect(d.prepare("SELECT value FROM meta WHERE key = 'schema_version'").pluck().get()).to.equal(String(SCHEMA_VERSION));
      expect(d.prepare('SELECT count(*) FROM tag_digests').pluck().get(), 'tag digests').to.be.greaterThan(0);
      const marks = (sql: string): string => JSON.stringify(d.prepare(sql).raw().all());
      expect(marks('SELECT denom, rank, amount_key, hex(account) FROM richlist_ranks ORDER BY denom, rank')).to.equal(marks(`
        SELECT denom, rn - 1, amount_key, hex(account) FROM (SELECT denom, amount_key, account,
          row_number() OVER (PARTITION BY denom ORDER BY amount_key DESC, account DESC) AS rn FROM richlist)
        WHERE (rn - 1) % ${RANK_STEP} = 0 ORDER BY denom, rn`));
      expect(d.prepare('SELECT count(DISTINCT denom) FROM richlist_ranks').pluck().get()).to.equal(denoms(DEMO('evm')).length);
    } finally { d.close(); }
  });

  it('a change bigger than --swap rows is built beside in chunks and swapped in at once: a reader sees the old rich list or the new one, never a mix', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'indexer-api-follow-richlist-swap-'));
    // the EVM demo chain's file, its rich list replaced by the refresh
    const cuts = await evmCuts(tmp, [400]);
    const file = cuts[0][1];
    { const w = openDatabase(file); w.pragma('journal_mode = WAL'); w.close(); }
    const before = new Map<string, string>();
    {
      const d = openDatabase(file, { readonly: true });
      for (const r of d.prepare('SELECT denom, hex(account) AS a, amount_key FROM richlist').all() as { denom: string; a: string; amount_key: string }[]) before.set(`${r.denom} ${r.a}`, r.amount_key);
      d.close();
    }
    // the source: every holder's amount + 1, one holder gone, one new
    const rows = [...before].map(([k, key]) => {
      const [denom, a] = k.split(' ');
      return { denom, account: `0x${a.toLowerCase()}`, amount: String(BigInt(key.slice(1)) + 1n) };
    });
    const gone = rows.pop() as { denom: string; account: string };
    rows.push({ denom: rows[0].denom, account: `0x${'ab'.repeat(20)}`, amount: '7' });
    const reader: RichListReader = {
      describe: 'test',
      async read(sink) {
        sink.reset();
        for (const r of rows) sink.put(r.denom, r.account, r.amount, 'test');
        return { height: 401 };
      },
    };
    const reads: string[] = [];
    const watcher = openDatabase(file, { readonly: true });
    const counts = watcher.prepare("SELECT (SELECT count(*) FROM richlist) || ' ' || (SELECT value FROM meta WHERE key = 'rich_list_height') || ' ' || (SELECT sum(holder_count) FROM richlist_denoms)").pluck();
    const r = new RichListRefresher({ db: file, reader, intervalMs: 1000, vmType: 'evm', prefix: 'init', lock: new WriteLock(), log: () => undefined,
      maxBackoffMs: 1000, swapRows: 10, chunkRows: 100, onChunk: () => reads.push(counts.get() as string) });
    expect(await r.refresh(new StopFlag())).to.equal(true);
    const after = counts.get() as string;
    watcher.close();
    // Between chunks readers saw the old rich list whole (its count, its height), after the swap the new one.
    expect(reads.length).to.be.greaterThan(2);
    for (const x of reads) expect(x).to.equal(`${before.size} 400 ${before.size}`);
    expect(after).to.equal(`${before.size} 401 ${before.size}`);
    const d = openDatabase(file, { readonly: true });
    try {
      expect(d.prepare("SELECT name FROM sqlite_master WHERE name LIKE 'richlist_%' ORDER BY name").pluck().all()).to.deep.equal(['richlist_denoms', 'richlist_ranks']);
      // the swap wrote the new list's rank marks in its transaction (src/snapshot/richlist-ranks.ts)
      const marks = (sql: string): string => JSON.stringify(d.prepare(sql).raw().all());
      expect(marks(`SELECT denom, rank, amount_key, hex(account) FROM richlist_ranks ORDER BY denom, rank`)).to.equal(marks(`
        SELECT denom, rn - 1, amount_key, hex(account) FROM (SELECT denom, amount_key, account,
          row_number() OVER (PARTITION BY denom ORDER BY amount_key DESC, account DESC) AS rn FROM richlist)
        WHERE (rn - 1) % ${RANK_STEP} = 0 ORDER BY denom, rn`));
      expect(d.prepare('SELECT count(*) FROM richlist_ranks').pluck().get()).to.be.greaterThan(0);
      // wire format 2 stores no holder JSON: the amount is the row's amount_key (src/lib/amount.ts)
      const key = d.prepare('SELECT amount_key FROM richlist WHERE denom = ? AND account = ?').pluck();
      const amount = (denom: string, account: Buffer): string | undefined => {
        const k = key.get(denom, account) as string | undefined;
        return k === undefined ? undefined : amountFromKey(k);
      };
      expect(amount(rows[0].denom, Buffer.from('ab'.repeat(20), 'hex'))).to.equal('7');
      expect(amount(gone.denom, Buffer.from(gone.account.slice(2), 'hex'))).to.equal(undefined);
      expect(amount(rows[1].denom, Buffer.from(rows[1].account.slice(2), 'hex'))).to.equal(rows[1].amount);
    } finally { d.close(); }
  });
});
