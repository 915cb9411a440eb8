import { expect } from 'chai';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { runImport } from '../../src/commands/import';
import { PgServer, postgresOrSkip } from '../support/postgres';
import { loadRollyticsDb } from '../import/helpers/rollytics-pg';
import { demoDump } from '../import/helpers/serve';
import { startServe } from '../serve/helpers';
import { differences, eventually, startFollow, statusHeight } from './helpers';

/** History tables of a rollytics database, and how their rows are tied to a height. */
const HISTORY: [string, string][] = [
  ['block', 'height > $1'],
  ['tx_accounts', 'sequence IN (SELECT sequence FROM tx WHERE height > $1)'],
  ['tx_msg_types', 'sequence IN (SELECT sequence FROM tx WHERE height > $1)'],
  ['tx_nfts', 'sequence IN (SELECT sequence FROM tx WHERE height > $1)'],
  ['tx', 'height > $1'],
];

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
      for (const [t, cond] of HISTORY) {
        await c.query(`CREATE TABLE hidden_${t} AS SELECT * FROM ${t} WHERE ${cond}`, [250]);
      }
      for (const [t, cond] of HISTORY) await c.query(`DELETE FROM ${t} WHERE ${cond}`, [250]);
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
});
