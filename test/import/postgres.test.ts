import { expect } from 'chai';
import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client } from 'pg';
import { runImport } from '../../src/import/run';
import { ROOT } from '../../src/assets';
import type { VmType } from '../../src/lib/vm';
import { freePort, PgServer, postgresOrSkip } from '../support/postgres';
import { loadRollyticsDb } from '../helpers/rollytics-pg';
import { demoDump, expectSameAnswers } from '../helpers/same-answers';

const CLI = join(ROOT, 'bin', 'indexer-api');

function sha(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

function cli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The CLI run without blocking the event loop (a server in this process must answer it). */
function cliAsync(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 120_000 }, (e, stdout, stderr) => {
      done({ status: e ? (typeof e.code === 'number' ? e.code : null) : 0, stdout, stderr });
    });
  });
}

function meta(dir: string): { version: string; commit_hash: string } {
  return JSON.parse(readFileSync(join(dir, 'meta.ndjson'), 'utf8').split('\n')[0]) as { version: string; commit_hash: string };
}

function pgArgs(dir: string, vm: VmType): string[] {
  const m = meta(dir);
  const args = ['--vm-type', vm, '--validators', join(dir, 'validators.ndjson'), '--status-version', m.version, '--status-commit', m.commit_hash];
  if (existsSync(join(dir, 'denom_contracts.ndjson'))) args.push('--denom-contracts', join(dir, 'denom_contracts.ndjson'));
  return args;
}

describe('import --from-postgres (real PostgreSQL)', function () {
  this.timeout(300_000);
  let pg: PgServer | undefined;
  const work = mkdtempSync(join(tmpdir(), 'indexer-api-import-pg-'));
  /** wasm demo loaded once, reused by the error tests */
  let wasmDsn = '';
  let baseline = '';

  before(async function () {
    pg = await postgresOrSkip(this);
  });

  after(async () => {
    await pg?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  for (const vm of ['wasm', 'evm', 'move'] as VmType[]) {
    it(`${vm} demo: every route and page answers exactly as the dump import`, async () => {
      const dir = await demoDump(vm);
      const dsn = await pg!.createDatabase(`rollytics_${vm}`);
      await loadRollyticsDb(dsn, dir);
      if (vm === 'wasm') wasmDsn = dsn;
      const fromDump = join(work, `${vm}-dump.sqlite`);
      const fromPg = join(work, `${vm}-pg.sqlite`);
      await runImport({ fromDump: dir, out: fromDump, force: false, quiet: true, json: false });
      const m = meta(dir);
      const r = await runImport({
        fromPostgres: dsn, vmType: vm, validators: join(dir, 'validators.ndjson'), statusVersion: m.version, statusCommit: m.commit_hash,
        denomContracts: existsSync(join(dir, 'denom_contracts.ndjson')) ? join(dir, 'denom_contracts.ndjson') : undefined,
        out: fromPg, force: false, quiet: true, json: false,
      });
      expect(r.source).to.match(/^postgres postgres:\/\/postgres@127\.0\.0\.1:\d+\/rollytics_/);
      expect(r.records.txs).to.equal(3000);
      if (vm === 'wasm') baseline = fromPg;
      await expectSameAnswers(fromDump, fromPg, 6000);
    });
  }

  describe('--rest-url: proposer monikers from a chain node', () => {
    // A stand-in for the node's REST API on 127.0.0.1 (no chain node runs offline): answers
    // GET /opinit/opchild/v1/validator/{valoper} from the demo's validators.ndjson, 404 for
    // `hidden`, 503 to the first request for each proposer (the importer must retry), and
    // garbage when `garbage` is set.
    let node: Server;
    let nodeUrl = '';
    let hidden = '';
    let garbage = false;
    const seen = new Set<string>();
    let validators: { proposer: string; moniker: string; operator_address: string }[] = [];
    let dir = '';
    let dsn = '';

    before(async () => {
      dir = await demoDump('wasm');
      dsn = await pg!.createDatabase('rollytics_rest');
      await loadRollyticsDb(dsn, dir);
      validators = readFileSync(join(dir, 'validators.ndjson'), 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l) as typeof validators[0]);
      hidden = validators[validators.length - 1].proposer;
      node = createServer((req, res) => {
        const m = /^\/opinit\/opchild\/v1\/validator\/([^/?]+)$/.exec(req.url ?? '');
        const v = m ? validators.find((x) => x.proposer === decodeURIComponent(m[1])) : undefined;
        if (garbage) return void res.writeHead(200).end('<html>not json</html>');
        if (!v || v.proposer === hidden) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"code":5,"message":"not found"}');
        if (!seen.has(v.proposer)) {
          seen.add(v.proposer);
          return void res.writeHead(503).end('busy');
        }
        res.writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ validator: { moniker: v.moniker, operator_address: v.operator_address, cons_power: '1' } }));
      });
      await new Promise<void>((r) => node.listen(0, '127.0.0.1', r));
      nodeUrl = `http://127.0.0.1:${(node.address() as { port: number }).port}`;
    });

    after(() => new Promise<void>((r) => node.close(() => r())));

    it('one lookup per distinct proposer, retried on 503; a 404 proposer gets the fallback rendering', async () => {
      const m = meta(dir);
      const out = join(work, 'rest.sqlite');
      const r = await cliAsync(['import', '--from-postgres', dsn, '--vm-type', 'wasm', '--rest-url', nodeUrl, '--status-version', m.version,
        '--status-commit', m.commit_hash, '--out', out, '--json', '--retries', '2']);
      expect(r.status, r.stderr).to.equal(0);
      const summary = JSON.parse(r.stdout) as { stats?: Record<string, number> };
      expect(summary.stats).to.deep.equal({ rest_validators: validators.length - 1, rest_unknown_proposers: 1 });
      const db = new Database(out, { readonly: true });
      try {
        const rows = db.prepare('SELECT proposer, moniker, operator_address FROM validators ORDER BY proposer').all();
        expect(rows).to.deep.equal(validators.filter((v) => v.proposer !== hidden).sort((a, b) => (a.proposer < b.proposer ? -1 : 1)));
      } finally {
        db.close();
      }
    });

    it('an answer that is not the validator object stops the import naming the URL; --out untouched', async () => {
      garbage = true;
      try {
        const before = sha(baseline);
        const r = await cliAsync(['import', '--from-postgres', dsn, '--vm-type', 'wasm', '--rest-url', nodeUrl, '--out', baseline, '--force', '--quiet']);
        expect(r.status).to.equal(1);
        expect(r.stderr).to.match(/--rest-url: GET http:\/\/127\.0\.0\.1:\d+\/opinit\/opchild\/v1\/validator\/initvaloper1\w+: the answer is not JSON/);
        expect(sha(baseline)).to.equal(before);
      } finally {
        garbage = false;
      }
    });

    it('--rest-url is refused with --validators or without --from-postgres', () => {
      const a = cli(['import', '--from-postgres', dsn, '--vm-type', 'wasm', '--rest-url', nodeUrl, '--validators', join(dir, 'validators.ndjson'), '--out', join(work, 'x.sqlite')]);
      // a usage error (README: exit 2)
      expect(a.status).to.equal(2);
      expect(a.stderr).to.contain('pass --validators FILE or --rest-url URL, not both');
      const b = cli(['import', '--from-dump', dir, '--rest-url', nodeUrl, '--out', join(work, 'x.sqlite')]);
      expect(b.status).to.equal(2);
      expect(b.stderr).to.contain('--rest-url goes with --from-postgres');
    });
  });

  it('connection refused: one line naming the DSN without its password; --out untouched', async () => {
    if (!baseline) throw new Error('needs the wasm round trip first');
    const port = await freePort();
    const before = sha(baseline);
    const r = cli(['import', '--from-postgres', `postgres://reader:s3cr3t-pw@127.0.0.1:${port}/rollytics`, '--vm-type', 'wasm',
      '--out', baseline, '--force', '--quiet']);
    expect(r.status).to.equal(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines, r.stderr).to.have.length(1);
    expect(lines[0]).to.contain(`postgres://reader@127.0.0.1:${port}/rollytics`);
    expect(lines[0]).to.match(/ECONNREFUSED|connect/);
    expect(r.stderr).not.to.contain('s3cr3t');
    expect(sha(baseline)).to.equal(before);
  });

  it('a missing table is refused by name; --out untouched', async () => {
    const dsn = await pg!.createDatabase('rollytics_missing');
    const c = new Client({ connectionString: dsn });
    await c.connect();
    await c.query('CREATE TABLE block (chain_id text, height bigint, hash bytea, "timestamp" timestamptz, block_time bigint, proposer text, gas_used bigint, gas_wanted bigint, tx_count smallint, total_fee jsonb)');
    await c.query('CREATE TABLE tx (hash bytea, height bigint, sequence bigint, signer_id bigint, data jsonb)');
    await c.end();
    const before = sha(baseline);
    const r = cli(['import', '--from-postgres', dsn, '--vm-type', 'wasm', '--out', baseline, '--force', '--quiet']);
    expect(r.status).to.equal(1);
    expect(r.stderr.trim().split('\n')).to.have.length(1);
    expect(r.stderr).to.contain('not a rollytics database: missing tables tx_accounts, account_dict');
    expect(sha(baseline)).to.equal(before);
  });

  it('a malformed row (tx.data without txhash) names the table and key; --out untouched, no temp file left', async () => {
    const dir = await demoDump('wasm');
    const dsn = await pg!.createDatabase('rollytics_bad_row');
    await loadRollyticsDb(dsn, dir, {
      txData: (seq, data) => {
        if (seq === 1234) delete data.txhash;
        return data;
      },
    });
    const before = sha(baseline);
    const r = cli(['import', '--from-postgres', dsn, ...pgArgs(dir, 'wasm'), '--out', baseline, '--force', '--quiet']);
    expect(r.status).to.equal(1);
    expect(r.stderr.trim().split('\n'), r.stderr).to.have.length(1);
    expect(r.stderr).to.match(/bad record from postgres postgres:\/\/postgres@127\.0\.0\.1:\d+\/rollytics_bad_row: table tx, sequence 1234 \(hash [0-9A-F]{64}, height \d+\): tx\.txhash: must be a string/);
    expect(sha(baseline)).to.equal(before);
    expect(readdirSync(work).filter((f) => f.includes('.tmp-'))).to.deep.equal([]);
  });

  it('signer and message types come from the database: no signer row → no signer; tx_msg_types as stored', async () => {
    const dir = await demoDump('wasm');
    const dsn = await pg!.createDatabase('rollytics_links');
    await loadRollyticsDb(dsn, dir);
    const c = new Client({ connectionString: dsn });
    await c.connect();
    let unsigned: number;
    let retyped: number;
    try {
      // A signed tx loses its signer (as rollytics stores txs whose signer_id is 0), and another
      // tx's message types are replaced by one the tx body does not contain.
      const s = await c.query<{ sequence: string }>(
        'SELECT t.sequence::text AS sequence FROM tx t JOIN tx_accounts ta ON ta.sequence = t.sequence AND ta.signer ORDER BY t.sequence LIMIT 1 OFFSET 100');
      unsigned = Number(s.rows[0].sequence);
      await c.query('UPDATE tx SET signer_id = 0 WHERE sequence = $1', [unsigned]);
      await c.query('DELETE FROM tx_accounts WHERE sequence = $1 AND signer', [unsigned]);
      retyped = unsigned + 7;
      const d = await c.query<{ id: string }>("INSERT INTO msg_type_dict (id, msg_type) SELECT max(id) + 1, 'test.v1.MsgOnlyInTheDb' FROM msg_type_dict RETURNING id::text AS id");
      await c.query('DELETE FROM tx_msg_types WHERE sequence = $1', [retyped]);
      await c.query('INSERT INTO tx_msg_types (msg_type_id, sequence) VALUES ($1, $2)', [Number(d.rows[0].id), retyped]);
    } finally {
      await c.end();
    }
    const out = join(work, 'links.sqlite');
    const r = cli(['import', '--from-postgres', dsn, ...pgArgs(dir, 'wasm'), '--out', out, '--quiet']);
    expect(r.status, r.stderr).to.equal(0);
    const db = new Database(out, { readonly: true });
    try {
      const signerRows = db.prepare('SELECT count(*) AS n FROM tx_accounts WHERE sequence = ? AND signer = 1').get(unsigned) as { n: number };
      expect(signerRows.n, 'a tx without a signer row must not get one derived from its public key').to.equal(0);
      const types = db.prepare('SELECT m.name FROM tx_msg_types t JOIN msg_types m ON m.id = t.msg_type_id WHERE t.sequence = ?')
        .all(retyped) as { name: string }[];
      expect(types.map((t) => t.name)).to.deep.equal(['test.v1.MsgOnlyInTheDb']);
    } finally {
      db.close();
    }
  });

  it('a tx_msg_types row pointing outside msg_type_dict names the table and tx; --out untouched', async () => {
    const dir = await demoDump('wasm');
    const dsn = await pg!.createDatabase('rollytics_bad_msg_type');
    await loadRollyticsDb(dsn, dir);
    const c = new Client({ connectionString: dsn });
    await c.connect();
    try {
      await c.query('INSERT INTO tx_msg_types (msg_type_id, sequence) VALUES (999999, 42)');
    } finally {
      await c.end();
    }
    const before = sha(baseline);
    const r = cli(['import', '--from-postgres', dsn, ...pgArgs(dir, 'wasm'), '--out', baseline, '--force', '--quiet']);
    expect(r.status).to.equal(1);
    expect(r.stderr).to.match(/table tx, sequence 42 \(hash [0-9A-F]{64}, height \d+\): tx_msg_types: msg_type_id 999999 is not in msg_type_dict/);
    expect(sha(baseline)).to.equal(before);
  });

  it('reads one consistent snapshot: rows committed while the import runs are not seen', async () => {
    if (!wasmDsn) throw new Error('needs the wasm round trip first');
    const out = join(work, 'consistent.sqlite');
    const writer = new Client({ connectionString: wasmDsn });
    await writer.connect();
    try {
      // Start the import, then (while its transaction is open) add a block the import must not see.
      const running = runImport({ fromPostgres: wasmDsn, vmType: 'wasm', out, force: true, quiet: true, json: false });
      // Wait until its transaction holds a snapshot (backend_xmin set).
      for (let i = 0; ; i++) {
        const q = await writer.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'indexer-api import' AND backend_xmin IS NOT NULL");
        if (q.rows[0].n > 0) break;
        if (i > 500) throw new Error('the import never opened its transaction');
        await new Promise((r) => setTimeout(r, 10));
      }
      await writer.query(`INSERT INTO block (chain_id, height, hash, "timestamp", block_time, proposer, gas_used, gas_wanted, tx_count, total_fee)
        SELECT chain_id, height + 1, hash, "timestamp", 500, proposer, 0, 0, 0, 'null' FROM block ORDER BY height DESC LIMIT 1`);
      const r = await running;
      expect(r.records.blocks).to.equal(400);
      const act = await writer.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'indexer-api import'");
      expect(act.rows[0].n).to.equal(0);
    } finally {
      await writer.query('DELETE FROM block WHERE height = 401');
      await writer.end();
    }
  });
});
