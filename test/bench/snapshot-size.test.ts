import Database from 'better-sqlite3';
import { expect } from 'chai';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compare, sqliteSizes, VmReport } from '../../bench/snapshot-size';

describe('bench/snapshot-size: what it reports', () => {
  let dir: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'snapshot-size-')); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('charges every page of the file to a table (an index to the table it indexes) or to the free list', () => {
    const file = join(dir, 'a.sqlite');
    const db = new Database(file);
    db.exec(`CREATE TABLE big (k INTEGER PRIMARY KEY, body TEXT);
      CREATE INDEX big_body ON big (body);
      CREATE TABLE small (x TEXT);
      CREATE TABLE gone (x TEXT);`);
    db.transaction(() => {
      const ins = db.prepare('INSERT INTO big (body) VALUES (?)');
      for (let i = 0; i < 2000; i++) ins.run(`row ${i} `.repeat(20));
      db.prepare('INSERT INTO small VALUES (?)').run('x');
      const gone = db.prepare('INSERT INTO gone VALUES (?)');
      for (let i = 0; i < 500; i++) gone.run('y'.repeat(200));
    })();
    db.exec('DROP TABLE gone'); // leaves free pages behind
    db.close();

    const s = sqliteSizes(file);
    expect(s.fileBytes).to.equal(statSync(file).size);
    expect(s.freelistPages).to.be.greaterThan(0);
    expect(s.tables.map((t) => t.name)).to.deep.equal(['big', 'small', 'sqlite_schema']);
    const big = s.tables[0];
    expect(big.indexBytes).to.be.greaterThan(100_000); // the body index: ~2000 × 200 B
    expect(big.tableBytes).to.be.greaterThan(big.indexBytes / 2);
    expect(big.totalBytes).to.equal(big.tableBytes + big.indexBytes);
    const charged = s.tables.reduce((a, t) => a + t.totalBytes, 0);
    expect(charged + s.freelistPages * s.pageSize).to.equal(s.pageCount * s.pageSize);
    expect(s.pageCount * s.pageSize).to.equal(s.fileBytes);
  });

  it('bytes per tx and the ratio use the tables of PostgreSQL and the whole snapshot file', () => {
    const table = { name: 'tx', tableBytes: 0, indexBytes: 0, totalBytes: 0 };
    const r: VmReport = {
      vm: 'wasm', dump: '/d', txs: 1000,
      ours: { file: 'f', fileBytes: 1_200_000, pageSize: 4096, pageCount: 293, freelistPages: 0, tables: [table] },
      pg: { tablesBytes: 3_000_000, databaseBytes: 4_000_000, emptyDatabaseBytes: 7_000_000, tables: [table], loadSeconds: 1,
        postgresVersion: '15', schemaSha256: 'x', dump: '/d', measuredAt: 't' },
    };
    const c = compare(r);
    expect([c.oursPerTx, c.pgPerTx, c.pgDatabasePerTx, c.ratio, c.ratioToDatabase]).to.deep.equal([1200, 3000, 4000, 0.4, 0.3]);
    expect(compare({ vm: 'evm', dump: '/d', txs: 10, ours: r.ours }).ratio).to.equal(undefined);
    expect(() => compare({ ...r, txs: 0 })).to.throw('wasm: tx count 0');
  });
});
