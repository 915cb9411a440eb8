import { expect } from 'chai';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { runImport } from '../../src/import/run';
import { PgServer, postgresOrSkip } from '../support/postgres';
import { lines, write } from './helpers/dump-files';
import { loadRollyticsDb } from '../helpers/rollytics-pg';
import { demoDump, Served, serveSnapshot } from '../helpers/same-answers';

/**
 * What real rollytics databases hold and a replica must carry through every import source
 * (docs/api-contract.md#status, docs/api-contract.md#accounts-rollytics-cannot-name):
 * /status cleanup-progress fields, an NFT whose owner is "" and an internal tx whose from is "0x".
 */
const EXTENSIONS = { evm_ret_cleanup_height: 120, tx_account_cleanup_sequence: 900, tx_account_cleanup_deleted: 0, tx_account_cleanup_inserted: -1 };
const SERVED_STATUS_TAIL = ['evm_ret_cleanup_height', 'tx_account_cleanup_sequence', 'tx_account_cleanup_inserted'];

interface Token { collection_addr: string; token_id: string; owner: string }
interface Nft { owner: string; nft: { token_id: string } }
interface Call { hash: string; index: number; from: string; to: string }

async function get<T>(s: Served, path: string): Promise<{ status: number; body: T; text: string }> {
  const r = await fetch(s.url + path);
  const text = await r.text();
  return { status: r.status, body: JSON.parse(text) as T, text };
}

describe('import: rollytics data the replica used to reject', function () {
  this.timeout(300_000);
  const work = mkdtempSync(join(tmpdir(), 'indexer-api-compat-'));
  let demo = '';
  let token: Token;
  let call: Call;
  const served: Served[] = [];

  before(async () => {
    demo = await demoDump('evm');
    token = JSON.parse(lines(demo, 'tokens')[0]) as Token;
    call = JSON.parse(lines(demo, 'evm_internal_txs')[0]) as Call;
  });
  after(async () => {
    for (const s of served) await s.close();
    rmSync(work, { recursive: true, force: true });
  });

  /** The served snapshot shows the extension fields, the ownerless NFT and the "0x" call as rollytics does. */
  async function expectServedAsRollytics(file: string, extensions: Record<string, number>, tail: string[]): Promise<Served> {
    const s = await serveSnapshot(file);
    served.push(s);
    const st = await get<Record<string, unknown>>(s, '/status');
    expect(st.status).to.equal(200);
    const keys = Object.keys(st.body);
    expect(keys.slice(0, 4)).to.deep.equal(['version', 'commit_hash', 'chain_id', 'height']);
    expect(keys.slice(keys.length - tail.length)).to.deep.equal(tail);
    for (const k of tail) expect(st.body[k], k).to.equal(extensions[k]);

    const page = await get<{ tokens: Nft[] }>(s, `/indexer/nft/v1/tokens/by_collection/${token.collection_addr}?token_id=${encodeURIComponent(token.token_id)}`);
    expect(page.status).to.equal(200);
    const t = page.body.tokens.find((x) => x.nft.token_id === token.token_id);
    expect(t, 'the ownerless NFT is imported').to.not.equal(undefined);
    expect(t?.owner).to.equal('');
    const byOwner = await get<{ tokens: Nft[] }>(s, `/indexer/nft/v1/tokens/by_account/${token.owner}?collection_addr=${token.collection_addr}&pagination.limit=1000`);
    expect(byOwner.status).to.equal(200);
    expect(byOwner.body.tokens.map((x) => x.nft.token_id), 'no account lists an ownerless NFT').to.not.include(token.token_id);

    const calls = await get<{ internal_txs: Call[] }>(s, `/indexer/tx/v1/evm-internal-txs/${call.hash}`);
    expect(calls.status).to.equal(200);
    expect(calls.body.internal_txs.find((c) => c.index === call.index)?.from).to.equal('0x');
    return s;
  }

  it('a dump with /status extensions, an owner "" NFT and a "0x" internal-tx account imports, then serves them as rollytics', async () => {
    const dir = join(work, 'dump');
    cpSync(demo, dir, { recursive: true });
    const meta = JSON.parse(lines(dir, 'meta')[0]) as Record<string, unknown>;
    write(dir, 'meta', [JSON.stringify({ ...meta, ...EXTENSIONS })]);
    write(dir, 'tokens', lines(dir, 'tokens').map((l, i) => (i === 0 ? JSON.stringify({ ...JSON.parse(l) as object, owner: '' }) : l)));
    write(dir, 'evm_internal_txs', lines(dir, 'evm_internal_txs').map((l, i) => {
      if (i !== 0) return l;
      const { accounts: _drop, ...rest } = JSON.parse(l) as Record<string, unknown>;
      return JSON.stringify({ ...rest, from: '0x' });
    }));
    const file = join(work, 'dump.sqlite');
    await runImport({ fromDump: dir, out: file, force: false, quiet: true, json: false });
    const s = await expectServedAsRollytics(file, EXTENSIONS, SERVED_STATUS_TAIL);
    // The "0x" side links to no account: the zero address does not list the call.
    const zero = await get<{ internal_txs: Call[] }>(s, '/indexer/tx/v1/evm-internal-txs/by_account/0x0000000000000000000000000000000000000000');
    expect(zero.body.internal_txs.filter((c) => c.hash === call.hash && c.index === call.index)).to.deep.equal([]);

    // An update on top of it (no new meta) keeps the base's fields and rows.
    const empty = join(work, 'no-new-heights');
    mkdirSync(empty);
    const updated = join(work, 'updated.sqlite');
    await runImport({ base: file, fromDump: empty, out: updated, force: false, quiet: true, json: false });
    await expectServedAsRollytics(updated, EXTENSIONS, SERVED_STATUS_TAIL);

    // API crawl of that server: whatever its /status and its objects show is carried over.
    const crawled = join(work, 'crawled.sqlite');
    await runImport({ fromApi: s.url, out: crawled, force: false, quiet: true, json: false, concurrency: 2 });
    await expectServedAsRollytics(crawled, EXTENSIONS, SERVED_STATUS_TAIL);
  });

  it('a dump /status extension out of range is refused with the field named', async () => {
    const dir = join(work, 'bad');
    cpSync(demo, dir, { recursive: true });
    const meta = JSON.parse(lines(dir, 'meta')[0]) as Record<string, unknown>;
    write(dir, 'meta', [JSON.stringify({ ...meta, tx_account_cleanup_deleted: -2 })]);
    let err: Error | undefined;
    try {
      await runImport({ fromDump: dir, out: join(work, 'bad.sqlite'), force: false, quiet: true, json: false });
    } catch (e) { err = e as Error; }
    expect(err?.message).to.match(/meta\.ndjson:1: tx_account_cleanup_deleted: must be an integer ≥ -1/);
  });

  describe('from PostgreSQL (real server)', () => {
    let pg: PgServer | undefined;
    before(async function () { pg = await postgresOrSkip(this); });
    after(async () => { await pg?.stop(); });

    it('reads the cleanup status tables and keeps NFTs and calls whose account id is missing from account_dict', async () => {
      const dsn = await pg!.createDatabase('rollytics_compat');
      await loadRollyticsDb(dsn, demo);
      const c = new Client({ connectionString: dsn });
      await c.connect();
      try {
        await c.query(`UPDATE nft SET owner_id = (SELECT max(id) + 1000 FROM account_dict)
          WHERE collection_addr = decode($1, 'hex') AND token_id = $2`, [token.collection_addr.slice(2), token.token_id]);
        const missing = (await c.query<{ id: string }>('SELECT (max(id) + 2000)::text AS id FROM account_dict')).rows[0].id;
        await c.query('UPDATE evm_internal_tx SET from_id = $1 WHERE sequence = 1', [missing]);
        await c.query('INSERT INTO evm_internal_tx_accounts (account_id, sequence) VALUES ($1, 1)', [missing]);
        await c.query('CREATE TABLE evm_ret_cleanup_status (last_cleaned_height bigint, corrected_records bigint)');
        await c.query('INSERT INTO evm_ret_cleanup_status VALUES (120, 7)');
        await c.query('CREATE TABLE tx_account_cleanup_status (last_cleaned_sequence bigint, deleted_records bigint, inserted_records bigint)');
        await c.query('INSERT INTO tx_account_cleanup_status VALUES (900, 0, 31)');
      } finally {
        await c.end();
      }
      const m = JSON.parse(readFileSync(join(demo, 'meta.ndjson'), 'utf8').split('\n')[0]) as { version: string; commit_hash: string };
      const file = join(work, 'pg.sqlite');
      await runImport({
        fromPostgres: dsn, vmType: 'evm', validators: join(demo, 'validators.ndjson'), statusVersion: m.version, statusCommit: m.commit_hash,
        denomContracts: join(demo, 'denom_contracts.ndjson'), out: file, force: false, quiet: true, json: false,
      });
      await expectServedAsRollytics(file, { ...EXTENSIONS, tx_account_cleanup_inserted: 31 }, SERVED_STATUS_TAIL);
    });
  });
});
