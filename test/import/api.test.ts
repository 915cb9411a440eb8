import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runImport } from '../../src/import/run';
import { openApiSource } from '../../src/sources/api/source';
import { resolveHttp } from '../../src/sources/options';
import type { VmType } from '../../src/lib/vm';
import { openSnapshot } from '../../src/snapshot/open';
import { compareServers, describeMismatches } from './helpers/compare';
import { demoDump, Served, serveSnapshot } from '../helpers/same-answers';

/**
 * A proxy in front of a server that misbehaves on purpose: every `failEvery`-th request gets a
 * 503 (or a 429), every `stallEvery`-th never answers (the client must time out), and it
 * records the most requests it ever had in flight.
 */
async function flakyProxy(target: string, o: { failEvery?: number; stallEvery?: number }): Promise<{
  url: string; requests: number; failed: number; stalled: number; maxInFlight: number; paths: string[]; close(): Promise<void>;
}> {
  const state = { url: '', requests: 0, failed: 0, stalled: 0, maxInFlight: 0, paths: [] as string[], close: async (): Promise<void> => undefined };
  let inFlight = 0;
  const stalled: ServerResponse[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const n = ++state.requests;
    state.paths.push(req.url ?? '');
    inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, inFlight);
    // done when the answer is handed to the socket ('finish') or the client went away ('close'),
    // whichever comes first: on 'close' alone, an answer the client had already read could still
    // count while the client's next request arrived (one process, a busy machine: 4 of 3 seen once)
    let done = false;
    const end = (): void => { if (!done) { done = true; inFlight--; } };
    res.on('finish', end);
    res.on('close', end);
    if (o.failEvery && n % o.failEvery === 0) {
      state.failed++;
      res.writeHead(n % (2 * o.failEvery) === 0 ? 429 : 503, { 'content-type': 'text/plain' }).end('try again');
      return;
    }
    if (o.stallEvery && n % o.stallEvery === 0) {
      state.stalled++;
      stalled.push(res);
      return;
    }
    fetch(target + req.url).then(async (r) => {
      const body = Buffer.from(await r.arrayBuffer());
      res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'text/plain' }).end(body);
    }, () => { res.writeHead(502).end(); });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () => new Promise<void>((r) => {
    for (const s of stalled) s.destroy();
    server.close(() => r());
    server.closeAllConnections();
  });
  return state;
}

function denomsOf(file: string): string[] {
  const s = openSnapshot(file);
  try {
    return s.db.prepare('SELECT denom FROM richlist_denoms ORDER BY denom').pluck().all() as string[];
  } finally {
    s.close();
  }
}

describe('import --from-api (crawl a served snapshot)', function () {
  this.timeout(300_000);
  const work = mkdtempSync(join(tmpdir(), 'indexer-api-import-api-'));
  const sources = new Map<VmType, { file: string; served: Served; dump: string }>();

  async function source(vm: VmType): Promise<{ file: string; served: Served; dump: string }> {
    let s = sources.get(vm);
    if (!s) {
      const dump = await demoDump(vm);
      const file = join(work, `${vm}-source.sqlite`);
      await runImport({ fromDump: dump, out: file, force: false, quiet: true, json: false });
      s = { file, served: await serveSnapshot(file), dump };
      sources.set(vm, s);
    }
    return s;
  }

  after(async () => {
    for (const s of sources.values()) await s.served.close();
    rmSync(work, { recursive: true, force: true });
  });

  for (const vm of ['wasm', 'evm'] as VmType[]) {
    it(`${vm} demo: the crawled snapshot answers every route and page exactly as the source`, async () => {
      const src = await source(vm);
      const out = join(work, `${vm}-crawled.sqlite`);
      // The Wasm crawl goes through a proxy that fails or stalls some requests: retries must hide it.
      const proxy = vm === 'wasm' ? await flakyProxy(src.served.url, { failEvery: 9, stallEvery: 97 }) : undefined;
      const denomContracts = join(src.dump, 'denom_contracts.ndjson');
      try {
        const r = await runImport({
          fromApi: proxy?.url ?? src.served.url, out, force: false, quiet: true, json: false, concurrency: 3,
          denoms: denomsOf(src.file), denomContracts: existsSync(denomContracts) ? denomContracts : undefined,
          // a short timeout lets the proxy's stalled requests be retried quickly; without the proxy (EVM) a
          // busy runner (make test's parallel pool at load ~10) answers some pages slower than 1 s, and a
          // timeout there only re-asks the same page
          timeout: proxy ? 1000 : 10_000, backoffMs: 5,
        });
        expect(r.vmType).to.equal(vm);
        expect(r.records.txs).to.equal(3000);
        if (proxy) {
          expect(proxy.failed).to.be.greaterThan(10);
          expect(proxy.stalled).to.be.greaterThan(0);
          expect(r.stats?.retries).to.be.at.least(proxy.failed + proxy.stalled);
          expect(proxy.maxInFlight).to.be.at.most(3);
          // lists are crawled by next_key: we refuse deep offsets (docs/api-contract.md#deep-offsets)
          expect(proxy.paths.filter((p) => /[?&]pagination\.offset=/.test(p))).to.deep.equal([]);
        }
      } finally {
        await proxy?.close();
      }
      const crawled = await serveSnapshot(out);
      try {
        const res = await compareServers(src.served, crawled, { skip: (p) => p === '/indexer/block/v1/avg_blocktime' });
        expect(res.mismatches, describeMismatches(res)).to.have.length(0);
        expect(res.requests).to.be.greaterThan(6000);
        // Block times come from the txs; only empty blocks are estimated (documented).
        const a = JSON.parse(await (await fetch(`${src.served.url}/indexer/block/v1/avg_blocktime`)).text()) as { avg_block_time: number };
        const b = JSON.parse(await (await fetch(`${crawled.url}/indexer/block/v1/avg_blocktime`)).text()) as { avg_block_time: number };
        expect(Math.abs(a.avg_block_time - b.avg_block_time)).to.be.below(0.001);
      } finally {
        await crawled.close();
      }
    });
  }

  it('--from-height/--to-height crawl a range; --rate paces the requests', async () => {
    const src = await source('wasm');
    const out = join(work, 'range.sqlite');
    const started = Date.now();
    const r = await runImport({ fromApi: src.served.url, out, force: false, quiet: true, json: false, fromHeight: 101, toHeight: 130, rate: 200, concurrency: 4 });
    const seconds = (Date.now() - started) / 1000;
    expect(r.records.blocks).to.equal(30);
    const requests = r.stats?.requests ?? 0;
    expect(requests).to.be.greaterThan(100);
    expect(seconds).to.be.at.least((requests - 1) / 200 - 0.05);
    const s = openSnapshot(out);
    const srcSnap = openSnapshot(src.file);
    try {
      const heights = s.db.prepare('SELECT min(height) AS lo, max(height) AS hi FROM blocks').get() as { lo: number; hi: number };
      expect(heights).to.deep.equal({ lo: 101, hi: 130 });
      const want = srcSnap.db.prepare('SELECT sequence, json FROM txs WHERE height BETWEEN 101 AND 130 ORDER BY sequence').all();
      const got = s.db.prepare('SELECT sequence, json FROM txs ORDER BY sequence').all();
      expect(got).to.deep.equal(want);
    } finally {
      s.close();
      srcSnap.close();
    }
  });

  it('collections, tokens and rich lists are crawled by next_key, page after page, never by offset', async () => {
    const src = await source('evm');
    const proxy = await flakyProxy(src.served.url, {});
    const srcSnap = openSnapshot(src.file);
    const count = (sql: string): number => srcSnap.db.prepare(sql).pluck().get() as number;
    const want = { collections: count('SELECT count(*) FROM collections'), tokens: count('SELECT count(*) FROM nfts'), richlist: count('SELECT count(*) FROM richlist') };
    srcSnap.close();
    const s = await openApiSource({ url: proxy.url, vmType: 'evm', prefix: 'init', denoms: denomsOf(src.file), listPage: 3, http: resolveHttp({}),
      denomContractsFile: join(src.dump, 'denom_contracts.ndjson') });
    try {
      const got: Record<string, number> = {};
      for (const kind of ['collections', 'tokens', 'richlist'] as const) {
        got[kind] = 0;
        for await (const _ of s.records(kind) ?? []) got[kind]++;
      }
      expect(got).to.deep.equal(want);
      expect(proxy.paths.filter((p) => /[?&]pagination\.offset=/.test(p))).to.deep.equal([]);
      for (const list of ['/indexer/nft/v1/collections?', '/indexer/nft/v1/tokens/by_collection/', '/indexer/richlist/v1/']) {
        // more rows than 3 per page: the crawl went on by key
        expect(proxy.paths.filter((p) => p.startsWith(list) && p.includes('pagination.key=')).length, list).to.be.greaterThan(1);
      }
    } finally {
      await s.close();
      await proxy.close();
    }
  });

  it('txSequenceAfter (follow: our highest tx sequence) replaces the sequence search when two probes confirm it, and only then', async () => {
    const src = await source('wasm');
    const srcSnap = openSnapshot(src.file);
    const want = srcSnap.db.prepare('SELECT sequence FROM txs WHERE height BETWEEN 101 AND 130 ORDER BY sequence').pluck().all() as number[];
    srcSnap.close();
    const crawl = async (txSequenceAfter: number | undefined): Promise<{ sequences: number[]; requests: number }> => {
      const s = await openApiSource({ url: src.served.url, vmType: 'wasm', prefix: 'init', fromHeight: 101, toHeight: 130, denoms: [], txSequenceAfter, http: resolveHttp({}) });
      try {
        const sequences: number[] = [];
        for await (const r of s.records('txs') ?? []) sequences.push((JSON.parse(r.text) as { sequence: number }).sequence);
        return { sequences, requests: s.stats?.().requests ?? 0 };
      } finally {
        await s.close();
      }
    };
    const searched = await crawl(undefined);
    expect(searched.sequences).to.deep.equal(want);
    const right = await crawl(want[0] - 1);
    expect(right.sequences).to.deep.equal(want);
    expect(searched.requests - right.requests, 'probes saved').to.be.at.least(8);
    for (const wrong of [want[0] - 4, want[0] + 2, 0]) expect((await crawl(wrong)).sequences, `txSequenceAfter ${wrong}`).to.deep.equal(want);
  });

  for (const vm of ['wasm', 'evm'] as const) {
  it(`${vm}: --base + --from-api crawls only the new heights; the result holds the same rows as the source`, async () => {
    const src = await source(vm);
    const first = join(work, `${vm}-first-half.sqlite`);
    const next = join(work, `${vm}-second-half.sqlite`);
    await runImport({ fromApi: src.served.url, out: first, force: false, quiet: true, json: false, toHeight: 200, concurrency: 4 });
    const r = await runImport({ base: first, fromApi: src.served.url, out: next, force: false, quiet: true, json: false, concurrency: 4 });
    expect(r.records.blocks).to.equal(200); // only the new heights go through the loader
    const a = openSnapshot(src.file);
    const b = openSnapshot(next);
    try {
      for (const sql of ['SELECT height, json FROM blocks ORDER BY height', 'SELECT sequence, hash, json FROM txs ORDER BY sequence',
        'SELECT collection_addr, token_id, json FROM nfts ORDER BY 1, 2', // burned NFTs' links are not served, so not crawled
        'SELECT collection_addr, token_id, sequence FROM nft_txs WHERE (collection_addr, token_id) IN (SELECT collection_addr, token_id FROM nfts) ORDER BY 1, 2, 3',
        'SELECT addr, json FROM collections ORDER BY addr', 'SELECT name, tx_count FROM msg_types ORDER BY name',
        'SELECT sequence, height, hash, json FROM evm_txs ORDER BY sequence', 'SELECT sequence, height, hash, json FROM evm_internal_txs ORDER BY sequence',
        'SELECT hash, internal_tx_count FROM evm_hashes ORDER BY hash', 'SELECT * FROM evm_height_counts ORDER BY height',
        `SELECT a.addr, c.tx_count, c.signer_tx_count, c.internal_tx_count FROM evm_account_counts c JOIN accounts a ON a.id = c.account_id ORDER BY 1`]) {
        expect(b.db.prepare(sql).all(), sql).to.deep.equal(a.db.prepare(sql).all());
      }
      expect(b.status).to.equal(a.status);
      if (vm === 'evm') expect(b.db.prepare('SELECT count(*) FROM evm_txs').pluck().get()).to.be.greaterThan(0);
    } finally {
      a.close();
      b.close();
    }
  });
  }

  it('--base ending just before an empty block: the block gets the time a crawl from height 1 estimates (the API serves whole seconds)', async () => {
    const src = await source('wasm');
    // the first empty block whose stored time is not a whole second: only an estimate can give it
    const s = openSnapshot(src.file);
    const empty = s.db.prepare('SELECT height FROM blocks WHERE tx_count = 0 AND height > 1 AND time_us % 1000000 <> 0 ORDER BY height LIMIT 1').pluck().get() as number;
    s.close();
    expect(empty, 'an empty block in the demo').to.be.a('number');
    const whole = join(work, 'wasm-whole-crawl.sqlite');
    const base = join(work, `wasm-to-${empty - 1}.sqlite`);
    const next = join(work, `wasm-from-${empty}.sqlite`);
    await runImport({ fromApi: src.served.url, out: whole, force: true, quiet: true, json: false, concurrency: 4 });
    await runImport({ fromApi: src.served.url, out: base, force: true, quiet: true, json: false, toHeight: empty - 1, concurrency: 4 });
    await runImport({ base, fromApi: src.served.url, out: next, force: true, quiet: true, json: false, concurrency: 4 });
    const a = openSnapshot(whole);
    const b = openSnapshot(next);
    try {
      const sql = 'SELECT height, time_us, json FROM blocks WHERE height BETWEEN ? AND ? ORDER BY height';
      expect(b.db.prepare(sql).all(empty - 1, empty + 5)).to.deep.equal(a.db.prepare(sql).all(empty - 1, empty + 5));
      expect(b.status).to.equal(a.status);
    } finally {
      a.close();
      b.close();
    }
  });

  it('a URL that is not a rollytics API fails with one line naming it; --out untouched, no temp file left', async () => {
    const src = await source('wasm');
    const out = join(work, 'not-api.sqlite');
    await runImport({ fromDump: src.dump, out, force: false, quiet: true, json: false });
    const before = createHash('sha256').update(readFileSync(out)).digest('hex');
    let err: Error | undefined;
    try {
      await runImport({ fromApi: `${src.served.url}/nothing-here`, out, force: true, quiet: true, json: false, retries: 1 });
    } catch (e) {
      err = e as Error;
    }
    expect(err?.message).to.match(new RegExp(`^GET ${src.served.url}/nothing-here/status: HTTP 404`));
    expect(createHash('sha256').update(readFileSync(out)).digest('hex')).to.equal(before);
    expect(readdirSync(work).filter((f) => f.includes('.tmp-'))).to.deep.equal([]);
  });
});
