import { expect } from 'chai';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runImport } from '../../src/import/run';
import { createRequestListener } from '../../src/serve/routing';
import { loadOpenApi } from '../../src/serve/openapi';
import { listen, type RunningServer } from '../../src/serve/server';
import { canonicalAddress } from '../../src/lib/address';
import { nftStateProbe } from '../../src/snapshot/queries/nft-state';
import { prepareTipQueries } from '../../src/snapshot/queries/tip';
import { openSnapshot, type Snapshot } from '../../src/snapshot/open';
import { openStore } from '../../src/snapshot/store';
import { openApiSource } from '../../src/sources/api/source';
import type { ApiSourceOptions } from '../../src/sources/api/options';
import { resolveHttp } from '../../src/sources/options';
import type { NftStateProbe } from '../../src/records/source';
import type { ImportSource } from '../../src/records/source';
import { DEMO } from '../helpers/serve';
import { appOptions } from '../helpers/app-options';

const KINDS = ['meta', 'validators', 'blocks', 'txs', 'collections', 'tokens', 'token_txs', 'richlist', 'denom_contracts', 'evm_txs', 'evm_internal_txs'];

/** Every record a source gives, kind by kind, with the place its errors would name. */
async function everything(s: ImportSource): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const k of KINDS) {
    const it = s.records(k);
    if (it === undefined) continue;
    out[k] = [];
    for await (const r of it) out[k].push(`${r.file}\t${r.text}`);
  }
  return out;
}

/**
 * follow's batches (src/sources/api/follow.ts): staged in memory when small, their crawl steps
 * overlapped. What they deliver — and the error they fail with — must be what the sequential
 * crawl into a staging file gives.
 */
describe('API source, follow batches: in-memory staging and overlapped steps (#30)', function () {
  this.timeout(180_000);
  const tmp = mkdtempSync(join(tmpdir(), 'indexer-api-follow-staging-'));
  let full: Snapshot;
  let server: RunningServer;
  /** requests the source answers 500 (url → true) */
  let failing: (url: string) => boolean = () => false;
  let top = 0;
  let cut = '';
  let from = 0;

  before(async () => {
    full = openSnapshot(DEMO('evm'));
    top = full.meta.height;
    const app = createRequestListener({ snapshots: { current: () => full }, openapi: loadOpenApi(), options: appOptions({ corsOrigin: '', logError: () => undefined }) });
    server = await listen((req: IncomingMessage, res: ServerResponse) => {
      if (failing(req.url ?? '')) { res.statusCode = 500; res.end('failing on purpose'); return; }
      app(req, res);
    }, '127.0.0.1', 0);
    // a replica 6 heights below, crawled as follow's first import is
    from = top - 5;
    cut = join(tmp, 'cut.sqlite');
    await runImport({ fromApi: server.url, toHeight: from - 1, out: cut, force: true, quiet: true, json: false });
  });

  after(async () => {
    await server?.close();
    full?.close();
  });

  /** openApiSource as follow's batch of from..to calls it (src/sources/api/follow.ts), with `over`. */
  async function batch(to: number, over: Partial<ApiSourceOptions>, ours?: (p: NftStateProbe) => NftStateProbe, recheck?: Set<string>)
    : Promise<{ got: Record<string, string[]> | Error; staged: boolean; left: boolean; reason?: string }> {
    const db = openStore(cut, 'read');
    const stagingPath = join(tmp, `staging-${Math.random().toString(16).slice(2)}`);
    try {
      const { tip } = prepareTipQueries(db).tip();
      const probe = nftStateProbe(db);
      let s: ImportSource;
      try {
        s = await openApiSource({
          nftChangesSince: { height: from, ours: ours ? ours(probe) : probe, recheck },
          url: server.url, vmType: 'evm', prefix: full.meta.prefix, fromHeight: from, toHeight: to,
          evmSequenceStart: { txs: tip.evmTxs, internal: tip.evmInternalTxs }, txSequenceAfter: tip.txs, previousBlockUs: tip.timeUs,
          denoms: [], withoutRichList: true, http: resolveHttp({ retries: 0 }), linkTokensSince: from, stagingPath, ...over,
        });
      } catch (e) {
        return { got: e as Error, staged: false, left: existsSync(stagingPath) };
      }
      const staged = existsSync(stagingPath);
      const reason = s.fullStateReason?.();
      const got = await everything(s);
      await s.close();
      return { got, staged, left: existsSync(stagingPath), reason };
    } finally {
      db.close();
    }
  }

  it('a one-block and a 5-block batch: the same records in memory, overlapped, as staged in a file one step after the other; no file made', async () => {
    for (const to of [from, top]) {
      const file = await batch(to, {});
      const mem = await batch(to, { stageInMemory: true, overlap: true });
      expect(file.got).to.not.be.instanceOf(Error);
      const got = file.got as Record<string, string[]>;
      expect(got.blocks.length).to.equal(to - from + 1);
      if (to === top) expect(got.txs.length + got.evm_txs.length, 'the batch has txs').to.be.greaterThan(0);
      expect(mem.got, `heights ${from}..${to}`).to.deep.equal(file.got);
      expect(file.staged, 'the file staging is a file').to.equal(true);
      expect(mem.staged, 'memory staging leaves no file').to.equal(false);
      expect(mem.reason).to.equal(undefined);
      expect(file.left || mem.left, 'nothing left behind').to.equal(false);
    }
  });

  it('a batch whose blocks hold more txs than memoryStagingTxs moves its staging to the file before reading them, delivering the same records', async () => {
    const file = await batch(top, {});
    const txs = (file.got as Record<string, string[]>).txs.length;
    expect(txs, 'the batch has txs').to.be.greaterThan(1);
    const under = await batch(top, { stageInMemory: true, overlap: true, memoryStagingTxs: txs });
    const over = await batch(top, { stageInMemory: true, overlap: true, memoryStagingTxs: txs - 1 });
    expect(under.staged, `${txs} txs, limit ${txs}: in memory`).to.equal(false);
    expect(over.staged, `${txs} txs, limit ${txs - 1}: spilled to the file`).to.equal(true);
    expect(under.got).to.deep.equal(file.got);
    expect(over.got).to.deep.equal(file.got);
    expect(under.left || over.left, 'nothing left behind').to.equal(false);
  });

  it('a batch that must read the whole NFT state moves its staging to the file first, delivering the same records', async () => {
    // ours "has another name" for every collection: the rechecked one reads as renamed
    const renamed = (p: NftStateProbe): NftStateProbe => ({
      ...p,
      collection: (hex: string) => { const c = p.collection(hex); return c && { ...c, name: `${c.name} (before)` }; },
      hasToken: (hex: string, id: string) => p.hasToken(hex, id),
      collectionsOfObjects: (hexes: string[]) => p.collectionsOfObjects(hexes),
    });
    const list = await (await fetch(`${server.url}/indexer/nft/v1/collections?pagination.limit=1`)).json() as { collections: { object_addr: string }[] };
    const recheck = new Set([canonicalAddress(list.collections[0].object_addr, full.meta.prefix).toString('hex')]);
    const file = await batch(from, {}, renamed, recheck);
    const mem = await batch(from, { stageInMemory: true, overlap: true }, renamed, recheck);
    expect(file.reason).to.match(/renamed/);
    expect(mem.reason).to.equal(file.reason);
    expect(mem.staged, 'spilled to the staging file before the whole read').to.equal(true);
    expect((mem.got as Record<string, string[]>).tokens.length, 'every token').to.be.greaterThan(10);
    expect(mem.got).to.deep.equal(file.got);
    expect(file.left || mem.left, 'nothing left behind').to.equal(false);
  });

  it('several steps failing: the overlapped crawl fails with the error the sequential one gives, and leaves nothing behind', async () => {
    const cases: [string, (url: string) => boolean][] = [
      ['the tx page and the EVM txs', (u) => (/^\/indexer\/tx\/v1\/txs\?/.test(u) && !/pagination\.limit=1&/.test(u)) || u.startsWith('/indexer/tx/v1/evm-txs/')],
      ['the EVM and the internal txs', (u) => u.startsWith('/indexer/tx/v1/evm-')],
      ['only the internal txs', (u) => u.startsWith('/indexer/tx/v1/evm-internal-txs/')],
      ['the blocks and /status', (u) => u.startsWith('/indexer/block/v1/blocks?') || u === '/status'],
      ['the newest collections and the tx probes', (u) => u.startsWith('/indexer/nft/v1/collections?') || /pagination\.limit=1&/.test(u)],
    ];
    try {
      for (const [what, f] of cases) {
        failing = f;
        const seq = await batch(top, {});
        const mem = await batch(top, { stageInMemory: true, overlap: true });
        expect(seq.got, what).to.be.instanceOf(Error);
        expect((mem.got as Error).message, what).to.equal((seq.got as Error).message);
        expect(seq.left || mem.left, `${what}: nothing left behind`).to.equal(false);
      }
    } finally {
      failing = () => false;
    }
  });
});
