import { expect } from 'chai';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { useWal } from '../../src/snapshot/writer';
import { tableDiff } from '../../src/snapshot/digest';
import { nftStateProbe } from '../../src/snapshot/queries/nft-state';

const MOVE = join(__dirname, '..', '..', '..', 'fixtures', 'demo', 'move.sqlite');

/** Every plan line of the statements `fn` runs on `db` (better-sqlite3 prepares them through db.prepare). */
function plansOf(db: Database.Database, fn: () => void): string[] {
  const prepare = db.prepare.bind(db);
  const plans: string[] = [];
  const spy = (sql: string): Database.Statement => {
    const st = prepare(sql);
    if (/^\s*SELECT/i.test(sql)) {
      const params = (sql.match(/\?/g) ?? []).map(() => Buffer.alloc(32));
      plans.push(...(prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((r) => r.detail));
    }
    return st;
  };
  Object.assign(db, { prepare: spy });
  try { fn(); } finally { Object.assign(db, { prepare }); }
  return plans;
}

describe('follow on Move: the NFT objects a batch names, mapped to collections by index (#22)', () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), 'indexer-api-nft-objects-')); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('collectionsOfObjects: keyed lookups (accounts_by_addr, nfts_by_object), no pass over nfts; the right collections', () => {
    const db = new Database(MOVE, { readonly: true });
    try {
      const rows = db.prepare(`SELECT lower(hex(a.addr)) AS obj, lower(hex(n.collection_addr)) AS col FROM nfts n
        JOIN accounts a ON a.id = n.object_account_id ORDER BY n.token_id LIMIT 5`).all() as { obj: string; col: string }[];
      expect(rows.length).to.equal(5);
      const probe = nftStateProbe(db);
      let got = new Set<string>();
      const plans = plansOf(db, () => { got = probe.collectionsOfObjects([...rows.map((r) => r.obj), 'ff'.repeat(32)]); });
      expect([...got].sort()).to.deep.equal([...new Set(rows.map((r) => r.col))].sort());
      expect(plans.join('\n')).to.match(/nfts_by_object/);
      expect(plans.filter((p) => /^SCAN /.test(p)), plans.join('\n')).to.deep.equal([]);
    } finally {
      db.close();
    }
  });

  it('collection(): one keyed read of a collection (a batch asks per address, never for the whole list)', () => {
    const db = new Database(MOVE, { readonly: true });
    try {
      const c = db.prepare('SELECT lower(hex(addr)) AS hex, nft_count, name, origin_name FROM collections ORDER BY addr LIMIT 1').get() as
        { hex: string; nft_count: number; name: string; origin_name: string };
      let got: unknown;
      let none: unknown = null;
      const plans = plansOf(db, () => {
        const probe = nftStateProbe(db);
        got = probe.collection(c.hex);
        none = probe.collection('ff'.repeat(32));
      }).filter((p) => /collections/.test(p));
      expect(got).to.deep.equal({ count: c.nft_count, name: c.name, originName: c.origin_name });
      expect(none).to.equal(undefined);
      expect(plans, plans.join('\n')).to.deep.equal(['SEARCH collections USING PRIMARY KEY (addr=?)']);
    } finally {
      db.close();
    }
  });

  it('a snapshot made before nfts_by_object gets it once, with the schema\'s text (index-for-index equal to a fresh import)', () => {
    const file = join(dir, 'old.sqlite');
    copyFileSync(MOVE, file);
    const db = new Database(file);
    db.exec('DROP INDEX nfts_by_object');
    db.close();
    expect(tableDiff(file, MOVE)).to.have.length(1); // (indexes)
    const lines: string[] = [];
    useWal(file, (l) => lines.push(l));
    useWal(file, (l) => lines.push(l));
    expect(lines).to.have.length(1);
    expect(lines[0]).to.match(/^follow: built index nfts_by_object \(this snapshot predates it\) in \d+ ms$/);
    expect(tableDiff(file, MOVE)).to.deep.equal([]);
  });
});
