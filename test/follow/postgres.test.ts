import { expect } from 'chai';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { runImport } from '../../src/import/run';
import { PgServer, postgresOrSkip } from '../support/postgres';
import { hideHistoryAbove, loadRollyticsDb, ROLLYTICS_HISTORY } from '../helpers/rollytics-pg';
import { demoDump } from '../helpers/same-answers';
import { startServe } from '../helpers/serve';
import { differences, eventually, startFollow, statusHeight } from '../helpers/follow';

const HISTORY = ROLLYTICS_HISTORY;

describe('follow --from-postgres (real PostgreSQL)', function () {
  this.timeout(300_000);
  let pg: PgServer | undefined;
  before(async function () { pg = await postgresOrSkip(this); });
  after(async () => { await pg?.stop(); });

  it('imports what the database holds, then appends the heights the indexer writes later, ending equal to a fresh import', async () => {
    const dir = await demoDump('wasm');
    const dsn = await pg!.createDatabase('rollytics_follow');
    await loadRollyticsDb(dsn, dir);
    const work = mkdtempSync(join(tmpdir(), 'indexer-api-follow-pg-'));
    const validators = join(dir, 'validators.ndjson');
    // The reference: the whole database imported at once.
    const fresh = join(work, 'fresh.sqlite');
    await runImport({ fromPostgres: dsn, vmType: 'wasm', validators, out: fresh, force: false, quiet: true, json: false });
    // The indexer "has not written" heights above 250 yet: their rows wait in hidden_* tables.
    const c = new Client({ connectionString: dsn });
    await c.connect();
    const reveal = async (upTo: number): Promise<void> => {
      await c.query('BEGIN');
      for (const [t] of [...HISTORY].reverse()) {
        await c.query(`INSERT INTO ${t} SELECT * FROM hidden_${t} h WHERE ${t === 'block' || t === 'tx' ? 'h.height' : '(SELECT height FROM hidden_tx x WHERE x.sequence = h.sequence)'} <= $1
          ON CONFLICT DO NOTHING`, [upTo]);
      }
      await c.query('COMMIT');
    };
    const db = join(work, 'live.sqlite');
    let follow;
    let serve;
    try {
      await c.query('BEGIN');
      await hideHistoryAbove(c, 250);
      await c.query('COMMIT');
      follow = startFollow(['--db', db, '--from-postgres', dsn, '--vm-type', 'wasm', '--validators', validators, '--interval', '100ms', '--batch-blocks', '50']);
      await follow.until('the first import', /following postgres .* from height 250/);
      expect(existsSync(db)).to.equal(true);
      serve = await startServe(['--db', db, '--commit-poll-ms', '50', '--log-level', 'warn']);
      expect(await statusHeight(serve.url)).to.equal(250);
      for (const h of [320, 400]) {
        await reveal(h);
        const url = serve.url;
        await eventually(`serve at height ${h}`, 60_000, async () => (await statusHeight(url)) === h || undefined);
      }
      expect(await follow.stop('SIGINT')).to.deep.equal({ code: 0, signal: null });
      expect(differences(db, fresh)).to.deep.equal([]);
    } finally {
      await serve?.stop();
      await follow?.stop('SIGKILL');
      await c.end();
    }
  });

  it('a batch reads no table whole: PostgreSQL\'s own counters of rows read stay far below each table\'s size (seq scans disabled)', async () => {
    const dir = await demoDump('wasm');
    const dsn = await pg!.createDatabase('rollytics_follow_scans');
    await loadRollyticsDb(dsn, dir);
    const work = mkdtempSync(join(tmpdir(), 'indexer-api-follow-pg-scans-'));
    const validators = join(dir, 'validators.ndjson');
    const c = new Client({ connectionString: dsn });
    await c.connect();
    let follow: ReturnType<typeof startFollow> | undefined;
    // The state tables and the NFT ↔ tx links, which a batch used to read whole (or the source to scan:
    // tx_nfts has no index on sequence); the history tables are read by the batch's heights and sequences.
    const TABLES = ['tx_nfts', 'nft', 'nft_collection', 'nft_dict', 'rich_list'];
    // rows a table gave out: by sequential scans, and index entries read by index scans (a scan of a
    // whole index with a filter — what PostgreSQL does without a usable index once seq scans are off — counts)
    const scans = async (): Promise<Record<string, { read: number; rows: number }>> => {
      await c.query('SELECT pg_stat_clear_snapshot()');
      const r = await c.query<{ relname: string; n: string; rows: string }>(`SELECT t.relname, (coalesce(t.seq_tup_read, 0)
          + coalesce((SELECT sum(i.idx_tup_read) FROM pg_stat_user_indexes i WHERE i.relid = t.relid), 0))::text AS n, t.n_live_tup::text AS rows
        FROM pg_stat_user_tables t WHERE t.relname = ANY($1)`, [TABLES]);
      return Object.fromEntries(r.rows.map((x) => [x.relname, { read: Number(x.n), rows: Number(x.rows) }]));
    };
    try {
      await c.query('BEGIN');
      await hideHistoryAbove(c, 390);
      await c.query('COMMIT');
      follow = startFollow(['--db', join(work, 'live.sqlite'), '--from-postgres', dsn, '--vm-type', 'wasm', '--validators', validators,
        '--interval', '100ms', '--richlist-interval', '0', '--collections-audit-interval', '0']);
      await follow.until('the first import', /following postgres .* from height 390/);
      // The planner takes a sequential scan on these small tables whenever it is cheaper; with it
      // disabled (new connections: each batch opens one), a scan is left only where no index serves.
      await c.query(`ALTER DATABASE rollytics_follow_scans SET enable_seqscan = off`);
      await new Promise((r) => setTimeout(r, 300));
      const before = await scans();
      await c.query('BEGIN');
      for (const [t] of [...HISTORY].reverse()) {
        await c.query(`INSERT INTO ${t} SELECT * FROM hidden_${t} h WHERE ${t === 'block' || t === 'tx' ? 'h.height' : '(SELECT height FROM hidden_tx x WHERE x.sequence = h.sequence)'} <= 392
          ON CONFLICT DO NOTHING`);
      }
      await c.query('COMMIT');
      const txs = Number((await follow.until('heights up to 392', /heights \d+\.\.392 \(\d+ blocks, (\d+) txs\).*NFT state: \d+ changed tokens/))[1]);
      expect(await follow.stop('SIGINT')).to.deep.equal({ code: 0, signal: null });
      // a backend reports its counters when it ends (the batch's connection has ended)
      await new Promise((r) => setTimeout(r, 1500));
      const after = await scans();
      // Keyed reads give out the few rows the batch's txs touch; a whole read every row of the table
      // (tx_nfts read by sequence, before: 893 of 881).
      const whole = TABLES.map((t) => ({ t, read: after[t].read - before[t].read, rows: after[t].rows }))
        .filter((x) => x.read > Math.max(60, x.rows / 5)).map((x) => `${x.t}: ${x.read} of ${x.rows} rows read for ${txs} txs`);
      expect(whole).to.deep.equal([]);
    } finally {
      await follow?.stop('SIGKILL');
      await c.query('ALTER DATABASE rollytics_follow_scans RESET enable_seqscan').catch(() => undefined);
      await c.end();
    }
  });

  it('applies minted, transferred and changed NFTs from the changed rows alone, re-reads only the collection of a burn, the whole nft table after a rename, a burn no tx names after the collections audit, and ends equal to a fresh import', async () => {
    const dir = await demoDump('wasm');
    const dsn = await pg!.createDatabase('rollytics_follow_nfts');
    await loadRollyticsDb(dsn, dir);
    const work = mkdtempSync(join(tmpdir(), 'indexer-api-follow-pg-nfts-'));
    const validators = join(dir, 'validators.ndjson');
    const c = new Client({ connectionString: dsn });
    await c.connect();
    const db = join(work, 'live.sqlite');
    let follow: ReturnType<typeof startFollow> | undefined;
    const reveal = async (upTo: number, nftChanges: string): Promise<void> => {
      await c.query('BEGIN');
      for (const [t] of [...HISTORY].reverse()) {
        await c.query(`INSERT INTO ${t} SELECT * FROM hidden_${t} h WHERE ${t === 'block' || t === 'tx' ? 'h.height' : '(SELECT height FROM hidden_tx x WHERE x.sequence = h.sequence)'} <= $1
          ON CONFLICT DO NOTHING`, [upTo]);
      }
      await c.query(nftChanges);
      await c.query('COMMIT');
    };
    const fresh = async (name: string): Promise<string> => {
      const f = join(work, name);
      await runImport({ fromPostgres: dsn, vmType: 'wasm', validators, out: f, force: false, quiet: true, json: false });
      return f;
    };
    // the n-th NFT (in key order) of the database, and the block time of a height
    const nth = (n: number): string => `(SELECT collection_addr, token_id FROM nft ORDER BY collection_addr, token_id OFFSET ${n} LIMIT 1)`;
    const at = (h: number): string => `(SELECT "timestamp" FROM block WHERE height = ${h})`;
    try {
      await c.query('BEGIN');
      await hideHistoryAbove(c, 250);
      await c.query('COMMIT');
      follow = startFollow(['--db', db, '--from-postgres', dsn, '--vm-type', 'wasm', '--validators', validators, '--interval', '100ms', '--batch-blocks', '50',
        '--collections-audit-interval', '300ms']);
      await follow.until('the first import', /following postgres .* from height 250/);

      // Heights 251..320 (two batches) transfer one NFT, change another's uri, mint one into an
      // existing collection and create a collection with one NFT: no burn, so changed rows suffice.
      await reveal(320, `
        UPDATE nft SET owner_id = (SELECT min(id) FROM account_dict WHERE id <> nft.owner_id), height = 300, "timestamp" = ${at(300)}
          WHERE (collection_addr, token_id) = ${nth(0)};
        UPDATE nft SET uri = uri || '#v2', height = 310, "timestamp" = ${at(310)} WHERE (collection_addr, token_id) = ${nth(1)};
        INSERT INTO nft (collection_addr, token_id, addr, height, "timestamp", owner_id, uri)
          SELECT collection_addr, token_id || '-minted', addr, 315, ${at(315)}, owner_id, 'ipfs://minted' FROM nft WHERE (collection_addr, token_id) = ${nth(2)};
        UPDATE nft_collection SET nft_count = nft_count + 1 WHERE addr = (SELECT collection_addr FROM ${nth(2)} x);
        INSERT INTO nft_collection (addr, height, "timestamp", name, origin_name, creator_id, nft_count)
          SELECT decode(repeat('ab', octet_length(addr)), 'hex'), 318, ${at(318)}, 'Followed Later', '', creator_id, 1 FROM nft_collection ORDER BY addr LIMIT 1;
        INSERT INTO nft (collection_addr, token_id, addr, height, "timestamp", owner_id, uri)
          SELECT decode(repeat('ab', octet_length(collection_addr)), 'hex'), 'one', NULL, 318, ${at(318)}, owner_id, 'ipfs://one' FROM nft ORDER BY collection_addr LIMIT 1;`);
      await follow.until('heights up to 320', /heights \d+\.\.320 /);
      expect(follow.lines.filter((l) => /read whole/.test(l))).to.deep.equal([]);
      expect(differences(db, await fresh('fresh-320.sqlite'))).to.deep.equal([]);

      // Heights 321..360 burn an NFT and mint another into the same collection (its count is
      // unchanged): the changed rows cannot show the burn, that collection's NFTs are read whole.
      await reveal(360, `
        DELETE FROM nft WHERE (collection_addr, token_id) = (SELECT collection_addr, token_id FROM nft
          WHERE collection_addr = (SELECT collection_addr FROM ${nth(5)} x) ORDER BY token_id DESC LIMIT 1);
        INSERT INTO nft (collection_addr, token_id, addr, height, "timestamp", owner_id, uri)
          SELECT collection_addr, token_id || '-reminted', addr, 330, ${at(330)}, owner_id, 'ipfs://again' FROM nft WHERE (collection_addr, token_id) = ${nth(5)};`);
      const burned = await c.query('SELECT count(*)::int AS n FROM nft GROUP BY collection_addr HAVING collection_addr = (SELECT collection_addr FROM nft WHERE token_id LIKE $1)', ['%-reminted']);
      expect(burned.rows).to.have.length(1); // the burn and the mint hit the same collection
      await follow.until('heights up to 360', /heights \d+\.\.360 /);
      const burnLines = follow.lines.filter((l) => /heights \d+\.\.(3[2-5]\d|360) /.test(l));
      expect(burnLines.filter((l) => /NFT state read whole/.test(l)), burnLines.join('\n')).to.deep.equal([]);
      expect(burnLines.join('\n')).to.match(/NFT state: \d+ changed tokens of \d+ collections read \(1 collection with a burn read whole\)/);
      expect(differences(db, await fresh('fresh-360.sqlite'))).to.deep.equal([]);

      // Heights 361..380 rename a collection: the NFTs' JSON carries its name, every NFT is read.
      await reveal(380, `UPDATE nft_collection SET name = name || ' (renamed)' WHERE addr = (SELECT collection_addr FROM ${nth(7)} x);`);
      await follow.until('heights up to 380', /heights \d+\.\.380 /);
      expect(follow.lines.filter((l) => /read whole/.test(l)).join('\n')).to.match(/NFT state read whole: collection 0x[0-9a-f]+ was renamed/);

      // A burn no tx of heights 381..383 names (a module in a block hook could do that): the
      // batches read only the collections their txs name, so the collections audit (every 300 ms
      // here) finds it, and the next batch reads that collection again, whole (its count is off).
      // (The nft table holds the source's final state, so the collection must have no NFT changed after 380 either.)
      const quiet = (await c.query<{ a: string }>(`SELECT encode(c.addr, 'hex') AS a FROM nft_collection c WHERE c.nft_count >= 1
          AND NOT EXISTS (SELECT 1 FROM nft n WHERE n.collection_addr = c.addr AND n.height > 380) AND c.addr NOT IN (
          SELECT a.account FROM hidden_tx t JOIN hidden_tx_accounts ta ON ta.sequence = t.sequence JOIN account_dict a ON a.id = ta.account_id
          WHERE t.height BETWEEN 381 AND 383) ORDER BY c.addr LIMIT 1`)).rows[0]?.a;
      expect(quiet, 'a collection no tx of 381..383 names').to.be.a('string');
      await reveal(383, `
        DELETE FROM nft WHERE (collection_addr, token_id) = (SELECT collection_addr, token_id FROM nft WHERE collection_addr = decode('${quiet}', 'hex') ORDER BY token_id LIMIT 1);
        UPDATE nft_collection SET nft_count = nft_count - 1 WHERE addr = decode('${quiet}', 'hex');`);
      await follow.until('the audit', new RegExp(`collections audit: 1 of \\d+ collections differ from postgres .*\\(0x${quiet}: \\d+ NFTs, ours \\d+\\)`));
      await follow.until('heights up to 383', /heights \d+\.\.383 /);
      await reveal(400, 'SELECT 1');
      await follow.until('the recheck', /heights \d+\.\.(38[3-9]|39\d|400) .*\(1 rechecked after the collections audit\) \(1 collection with a burn read whole\)/);
      await follow.until('heights up to 400', /heights \d+\.\.400 /);
      expect(await follow.stop('SIGINT')).to.deep.equal({ code: 0, signal: null });
      expect(differences(db, await fresh('fresh-400.sqlite'))).to.deep.equal([]);
    } finally {
      await follow?.stop('SIGKILL');
      await c.end();
    }
  });
});
