import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCut } from '../../src/commands/import';
import { RunningIndexerApi, startServer } from '../../src/index';
import { tableDigests } from '../../src/snapshot/digest';
import { openDatabase } from '../../src/sqlite';
import { cleanEnv, CLI, DEMO, ROOT } from '../helpers/serve';
import { pickAccounts } from '../helpers/fixture-accounts';

interface Page { pagination: { next_key: string | null; total: string } }

/** Every item of a list endpoint, following next_key; and the total it reports. */
async function all<T>(url: string, member: string): Promise<{ items: T[]; total: number }> {
  const items: T[] = [];
  let key: string | null = null;
  let total = 0;
  do {
    const sep = url.includes('?') ? '&' : '?';
    const res = await fetch(`${url}${sep}pagination.limit=1000${key ? `&pagination.key=${encodeURIComponent(key)}` : ''}`);
    expect(res.status, url).to.equal(200);
    const body = await res.json() as Page & Record<string, T[]>;
    items.push(...body[member]);
    total = Number(body.pagination.total);
    key = body.pagination.next_key;
  } while (key);
  return { items, total };
}


const txHash = (t: { txhash?: string; transactionHash?: string }): string => String(t.txhash ?? t.transactionHash);

describe('import --accounts: a small, self-consistent, deterministic fixture cut from a bigger chain', function () {
  this.timeout(180_000);
  let dir: string;
  const servers: RunningIndexerApi[] = [];
  const serve = async (db: string): Promise<string> => { const s = await startServer({ db }); servers.push(s); return s.url; };
  before(() => { dir = mkdtempSync(join(tmpdir(), 'indexer-api-cut-')); });
  after(async () => {
    await Promise.all(servers.map((s) => s.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  describe('a Wasm chain, cut from a snapshot file', () => {
    const accounts = pickAccounts(DEMO('wasm'));
    let first: string;
    before(async () => {
      first = join(dir, 'wasm-1.sqlite');
      await runCut({ fromSnapshot: DEMO('wasm'), accounts, out: first, force: false, quiet: true, json: false });
    });

    it('gives the same bytes when cut again from the same inputs', async () => {
      const again = join(dir, 'wasm-2.sqlite');
      await runCut({ fromSnapshot: DEMO('wasm'), accounts, out: again, force: false, quiet: true, json: false, parseThreads: 0 });
      expect(readFileSync(again).equals(readFileSync(first))).to.equal(true);
    });

    it("serves each account's txs and NFTs exactly as the big chain does", async () => {
      const [big, cut] = await Promise.all([serve(DEMO('wasm')), serve(first)]);
      for (const a of accounts) {
        const [want, got] = await Promise.all([big, cut].map((u) => all<{ txhash: string }>(`${u}/indexer/tx/v1/txs/by_account/${a}`, 'txs')));
        expect(got.items.map(txHash), a).to.deep.equal(want.items.map(txHash));
        expect(got.total).to.equal(want.total);
        const [wantNfts, gotNfts] = await Promise.all([big, cut].map((u) => all(`${u}/indexer/nft/v1/tokens/by_account/${a}`, 'tokens')));
        expect(gotNfts.items, a).to.deep.equal(wantNfts.items);
      }
    });

    it('holds nothing else: every tx is one of theirs, every block holds one, and the totals count what is there', async () => {
      const [big, cut] = await Promise.all([serve(DEMO('wasm')), serve(first)]);
      const theirs = new Set<string>();
      for (const a of accounts) for (const t of (await all<{ txhash: string }>(`${big}/indexer/tx/v1/txs/by_account/${a}`, 'txs')).items) theirs.add(t.txhash);
      const txs = await all<{ txhash: string; height: string }>(`${cut}/indexer/tx/v1/txs`, 'txs');
      expect(new Set(txs.items.map(txHash))).to.deep.equal(theirs);
      expect(txs.total).to.equal(theirs.size);
      const blocks = await all<{ height: string; tx_count: string }>(`${cut}/indexer/block/v1/blocks`, 'blocks');
      const perHeight = new Map<string, number>();
      for (const t of txs.items) perHeight.set(t.height, (perHeight.get(t.height) ?? 0) + 1);
      expect(blocks.items.map((b) => [b.height, Number(b.tx_count)]).sort()).to.deep.equal([...perHeight].sort());
      expect(blocks.total).to.equal(perHeight.size);
      const status = await (await fetch(`${cut}/status`)).json() as { height: number };
      expect(status.height).to.equal(Math.max(...[...perHeight.keys()].map(Number)));
      expect(readFileSync(first).length).to.be.below(readFileSync(DEMO('wasm')).length / 10);
    });

    it('keeps a --collections collection whole', async () => {
      const big = await serve(DEMO('wasm'));
      const collections = await all<{ object_addr: string }>(`${big}/indexer/nft/v1/collections`, 'collections');
      const c = collections.items[collections.items.length - 1].object_addr;
      const out = join(dir, 'wasm-collection.sqlite');
      await runCut({ fromSnapshot: DEMO('wasm'), accounts: accounts.slice(1), collections: [c], out, force: false, quiet: true, json: false });
      const cut = await serve(out);
      const [want, got] = await Promise.all([big, cut].map((u) => all(`${u}/indexer/nft/v1/tokens/by_collection/${c}`, 'tokens')));
      expect(got.items).to.deep.equal(want.items);
      expect(got.total).to.be.above(0);
    });
  });

  describe('an EVM chain, cut from a running API and from its snapshot file', () => {
    const accounts = pickAccounts(DEMO('evm'));
    let fromFile: string;
    let fromApi: string;
    before(async () => {
      fromFile = join(dir, 'evm-file.sqlite');
      fromApi = join(dir, 'evm-api.sqlite');
      await runCut({ fromSnapshot: DEMO('evm'), accounts, out: fromFile, force: false, quiet: true, json: false });
      const denoms = (await (async () => {
        const db = openDatabase(DEMO('evm'), { readonly: true, fileMustExist: true });
        try { return db.prepare('SELECT denom FROM richlist_denoms ORDER BY denom').pluck().all() as string[]; } finally { db.close(); }
      })());
      await runCut({ fromApi: await serve(DEMO('evm')), denoms, accounts, out: fromApi, force: false, quiet: true, json: false, backoffMs: 10 });
    });

    it('holds the same tables either way (only meta.source names the source)', () => {
      const a = tableDigests(fromFile);
      const b = tableDigests(fromApi);
      a.delete('meta');
      b.delete('meta');
      expect(b).to.deep.equal(a);
    });

    it("serves each account's EVM txs, and exactly their rich-list rows with their amounts", async () => {
      const [big, cut] = await Promise.all([serve(DEMO('evm')), serve(fromFile)]);
      const db = openDatabase(DEMO('evm'), { readonly: true, fileMustExist: true });
      const denoms = db.prepare('SELECT denom FROM richlist_denoms ORDER BY denom').pluck().all() as string[];
      db.close();
      for (const a of accounts) {
        const [want, got] = await Promise.all([big, cut].map((u) => all<{ transactionHash: string }>(`${u}/indexer/tx/v1/evm-txs/by_account/${a}`, 'txs')));
        expect(got.items.map(txHash), a).to.deep.equal(want.items.map(txHash));
      }
      let held = 0;
      for (const denom of denoms) {
        const want = (await all<{ account: string; amount: string }>(`${big}/indexer/richlist/v1/${denom}`, 'holders')).items
          .filter((h) => accounts.includes(h.account));
        const got = await all<{ account: string; amount: string }>(`${cut}/indexer/richlist/v1/${denom}`, 'holders');
        expect(got.items, denom).to.deep.equal(want);
        expect(got.total).to.equal(want.length);
        held += want.length;
      }
      expect(held).to.be.above(0);
    });
  });

  describe('the command line', () => {
    const run = (args: string[]): { status: number | null; stderr: string } => {
      const r = spawnSync(process.execPath, [CLI, 'import', ...args], { cwd: ROOT, encoding: 'utf8', env: cleanEnv(), timeout: 120_000 });
      return { status: r.status, stderr: r.stderr };
    };

    it('cuts a Move fixture with --from-snapshot and --accounts (comma-separated)', () => {
      const out = join(dir, 'move.sqlite');
      const r = run(['--from-snapshot', DEMO('move'), '--accounts', pickAccounts(DEMO('move')).join(','), '--out', out, '--quiet']);
      expect(r.stderr).to.equal('');
      expect(r.status).to.equal(0);
      const db = openDatabase(out, { readonly: true, fileMustExist: true });
      try {
        expect(db.prepare("SELECT value FROM meta WHERE key = 'vm_type'").pluck().get()).to.equal('move');
        expect(db.prepare('SELECT count(*) FROM nfts').pluck().get()).to.be.above(0);
      } finally {
        db.close();
      }
    });

    it('names a bad account, and refuses --from-snapshot without --accounts', () => {
      const out = join(dir, 'bad.sqlite');
      const bad = run(['--from-snapshot', DEMO('move'), '--accounts', 'init1notanaddress', '--out', out]);
      // not an address in any form: a usage error, found while parsing (README: exit 2)
      expect(bad.status).to.equal(2);
      expect(bad.stderr).to.match(/^indexer-api: --accounts: "init1notanaddress" is not an address/);
      const missing = run(['--from-snapshot', DEMO('move'), '--out', out]);
      // a usage error (README: exit 2)
      expect(missing.status).to.equal(2);
      expect(missing.stderr).to.include('--from-snapshot is the source of a fixture cut: name the accounts with --accounts');
    });
  });
});
