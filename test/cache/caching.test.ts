import { expect } from 'chai';
import { copyFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { etagOf } from '../../src/http/etag';
import { CacheState, ResponseCache } from '../../src/cache/store';
import type { ChangeRecord } from '../../src/snapshot/changes';
import { DEMO, get, getJson, metric, eventually, serveTmp, ServeProcess, smallSnapshots, startServe } from '../helpers/serve';

const BLOCKS = '/indexer/block/v1/blocks?pagination.limit=2';
/** an ETag as etagOf writes them */
const ETAG = etagOf('seed.2.', Buffer.from('{}'));

/** Puts `from` at `db` the way a publisher does: a copy beside it, renamed over it. */
function publish(from: string, db: string): void {
  const tmp = `${db}.incoming`;
  copyFileSync(from, tmp);
  renameSync(tmp, db);
}

describe('serve: ETag, Cache-Control, 304 and the response cache', function () {
  this.timeout(60_000);

  describe('without the response cache', () => {
    let s: ServeProcess;
    let snapshotId: string;
    before(async () => {
      s = await startServe(['--db', DEMO('wasm'), '--cache-max-age', '30', '--cache-validator-bytes', '0']);
      snapshotId = (await getJson<{ snapshot_id: string }>(`${s.url}/ready`)).snapshot_id;
    });
    after(async () => { await s.stop(); });

    it('has no response cache with --cache-validator-bytes 0 (no cache metrics)', async () => {
      expect((await get(`${s.url}/metrics`)).body).not.to.include('indexer_api_response_cache_');
    });

    it('gives a 200 a strong ETag of its versions (not of the file: no snapshot id in it) and Cache-Control public, max-age', async () => {
      const r = await get(s.url + BLOCKS);
      expect(r.status).to.equal(200);
      expect(r.headers.etag).to.match(/^"[A-Za-z0-9_-]{27}"$/);
      expect(r.headers.etag).not.to.include(snapshotId);
      expect(r.headers['cache-control']).to.equal('public, max-age=30');
      // the URL is part of it (docs/response-cache.md "ETags from versions"): another spelling of the same answer has its own
      expect((await get(`${s.url}${BLOCKS}&pagination.offset=0`)).headers.etag).not.to.equal(r.headers.etag);
      // an answer that reads no tag (a tx by hash) keeps the ETag of its bytes: equal for any spelling of its URL
      const hash = (JSON.parse((await get(`${s.url}/indexer/tx/v1/txs?pagination.limit=1`)).body) as { txs: { txhash: string }[] }).txs[0].txhash;
      const tx = await get(`${s.url}/indexer/tx/v1/txs/${hash}`);
      expect(tx.status).to.equal(200);
      expect((await get(`${s.url}/indexer/tx/v1/txs/${hash}?unused=1`)).headers.etag).to.equal(tx.headers.etag);
    });

    it('sends a tx, an EVM tx or a block with Cache-Control immutable (its bytes never change), lists with the short max-age', async () => {
      const block = await get(`${s.url}/indexer/block/v1/blocks/3`);
      expect(block.headers['cache-control']).to.equal('public, max-age=31536000, immutable');
      const hash = (JSON.parse((await get(`${s.url}/indexer/tx/v1/txs?pagination.limit=1`)).body) as { txs: { txhash: string }[] }).txs[0].txhash;
      const tx = await get(`${s.url}/indexer/tx/v1/txs/${hash}`);
      expect(tx.status).to.equal(200);
      expect(tx.headers['cache-control']).to.equal('public, max-age=31536000, immutable');
      expect((await get(`${s.url}/indexer/tx/v1/txs/by_height/3`)).headers['cache-control']).to.equal('public, max-age=30');
    });

    it('gives the same URL the same ETag, and another URL (or query) another one; HEAD matches GET', async () => {
      const a = await get(s.url + BLOCKS);
      const b = await get(s.url + BLOCKS);
      const c = await get(`${s.url}/indexer/block/v1/blocks?pagination.limit=3`);
      const d = await get(`${s.url}/status`);
      const head = await new Promise<string | undefined>((done, fail) => {
        // the same representation as `get` asks for (identity: the gzip one has its own ETag, test/wire/packed.test.ts)
        fetch(s.url + BLOCKS, { method: 'HEAD', headers: { 'accept-encoding': 'identity' } }).then((res) => done(res.headers.get('etag') ?? undefined), fail);
      });
      expect(b.headers.etag).to.equal(a.headers.etag);
      expect(head).to.equal(a.headers.etag);
      expect(new Set([a.headers.etag, c.headers.etag, d.headers.etag]).size).to.equal(3);
    });

    it('answers 304 with no body to a matching If-None-Match (exact, weak, or in a list)', async () => {
      const etag = (await get(s.url + BLOCKS)).headers.etag as string;
      for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
        const r = await get(s.url + BLOCKS, { 'If-None-Match': inm });
        expect(r.status, inm).to.equal(304);
        expect(r.body).to.equal('');
        expect(r.headers.etag).to.equal(etag);
        expect(r.headers['cache-control']).to.equal('public, max-age=30');
      }
      expect((await get(s.url + BLOCKS, { 'If-None-Match': '"something-else"' })).status).to.equal(200);
    });

    it('marks errors no-store, without an ETag, and never answers them 304', async () => {
      for (const [path, status] of [['/indexer/block/v1/blocks/999999', 404], ['/indexer/block/v1/blocks/abc', 400], ['/nope', 404]] as const) {
        const r = await get(s.url + path, { 'If-None-Match': '*' });
        expect(r.status, path).to.equal(status);
        expect(r.headers['cache-control'], path).to.equal('no-store');
        expect(r.headers.etag, path).to.equal(undefined);
        expect(JSON.parse(r.body)).to.have.keys('code', 'message', 'details');
      }
    });
  });

  describe('with --cache-bytes 0: no body kept, validators kept', () => {
    let s: ServeProcess;
    before(async () => { s = await startServe(['--db', DEMO('wasm'), '--cache-bytes', '0']); });
    after(async () => { await s.stop(); });
    const cacheMetric = async (name: string): Promise<number> => metric((await get(`${s.url}/metrics`)).body, name) as number;

    it('computes every plain GET, and answers an unchanged conditional GET 304 from its validator', async () => {
      const url = `${s.url}/indexer/tx/v1/txs?pagination.limit=5`;
      const first = await get(url);
      const etag = first.headers.etag as string;
      for (let i = 0; i < 3; i++) expect((await get(url)).status).to.equal(200);
      expect(await cacheMetric('indexer_api_response_cache_hits_total'), 'no body answered a plain GET').to.equal(0);
      expect(await cacheMetric('indexer_api_response_cache_entries')).to.equal(0);
      const validatorHits = await cacheMetric('indexer_api_response_cache_validator_hits_total');
      const again = await get(url, { 'If-None-Match': etag });
      expect(again.status).to.equal(304);
      expect(again.headers.etag).to.equal(etag);
      expect(again.headers['cache-control']).to.equal('public, max-age=1');
      expect(await cacheMetric('indexer_api_response_cache_validator_hits_total')).to.equal(validatorHits + 1);
      expect(await cacheMetric('indexer_api_response_cache_validators')).to.be.greaterThan(0);
      expect(await cacheMetric('indexer_api_response_cache_validator_bytes')).to.be.greaterThan(0);
      // a validator never makes a 200: the same URL without If-None-Match (or with another ETag) is computed
      expect((await get(url, { 'If-None-Match': '"not-this-one"' })).status).to.equal(200);
      expect(await cacheMetric('indexer_api_response_cache_validator_hits_total')).to.equal(validatorHits + 1);
    });

    it('answers a conditional GET that also says Cache-Control: no-cache (as fetch() sends it) 304 when the ETag matches', async () => {
      const url = `${s.url}/indexer/block/v1/blocks?pagination.limit=3`;
      const etag = (await get(url)).headers.etag as string;
      await get(url);
      for (let i = 0; i < 2; i++) {
        const r = await get(url, { 'If-None-Match': etag, 'Cache-Control': 'no-cache', Pragma: 'no-cache' });
        expect(r.status, `poll ${i}`).to.equal(304);
        expect(r.headers.etag).to.equal(etag);
      }
      // Node's fetch() (undici) adds Cache-Control: no-cache and Pragma: no-cache to a request that sets If-None-Match
      const full = await fetch(url);
      const gzEtag = full.headers.get('etag') as string;
      await full.arrayBuffer();
      const node = await fetch(url, { headers: { 'If-None-Match': gzEtag } });
      expect(node.status, 'Node\'s fetch() revalidating').to.equal(304);
      expect(node.headers.get('etag')).to.equal(gzEtag);
    });
  });

  it('changes every ETag when the snapshot changes', async () => {
    const [first, second] = await smallSnapshots();
    const db = join(serveTmp(), 'etag.sqlite');
    publish(first.file, db);
    const s = await startServe(['--db', db]);
    try {
      const before = await get(s.url + BLOCKS);
      publish(second.file, db);
      await eventually('the swap', async () => (await getJson<{ height: number }>(`${s.url}/status`)).height === second.height);
      const after = await get(s.url + BLOCKS, { 'If-None-Match': before.headers.etag as string });
      expect(after.status).to.equal(200);
      expect(after.headers.etag).not.to.equal(before.headers.etag);
      expect(after.body).not.to.equal(before.body);
    } finally {
      await s.stop();
    }
  });

  describe('with the response cache (the default)', () => {
    let s: ServeProcess;
    const db = join(serveTmp(), 'cached.sqlite');
    before(async () => {
      const [first] = await smallSnapshots();
      publish(first.file, db);
      s = await startServe(['--db', db]);
    });
    after(async () => { await s.stop(); });

    const cacheMetric = async (name: string): Promise<number> => metric((await get(`${s.url}/metrics`)).body, name) as number;

    it('serves a repeated 200 from the cache with the same bytes and headers', async () => {
      const url = `${s.url}/indexer/tx/v1/txs?pagination.limit=3`;
      const hits = await cacheMetric('indexer_api_response_cache_hits_total');
      const notAdmitted = await cacheMetric('indexer_api_response_cache_not_admitted_total');
      const a = await get(url); // first sight: computed, not stored
      expect(await cacheMetric('indexer_api_response_cache_not_admitted_total')).to.equal(notAdmitted + 1);
      expect((await get(url)).body).to.equal(a.body); // second sight: computed and stored
      const b = await get(url);
      expect(await cacheMetric('indexer_api_response_cache_hits_total')).to.equal(hits + 1);
      expect(b.status).to.equal(200);
      expect(b.body).to.equal(a.body);
      for (const h of ['content-type', 'content-length', 'etag', 'cache-control']) expect(b.headers[h], h).to.equal(a.headers[h]);
      const notModified = await get(url, { 'If-None-Match': a.headers.etag as string });
      expect(notModified.status).to.equal(304);
      expect(await cacheMetric('indexer_api_response_cache_hits_total')).to.equal(hits + 2);
    });

    it('answers a client that always sends If-None-Match without the page: from the tag versions, then from the validator kept', async () => {
      const url = `${s.url}/indexer/tx/v1/txs?pagination.limit=7`;
      const first = await get(url); // first sight: not stored
      const etag = first.headers.etag as string;
      const hits = await cacheMetric('indexer_api_response_cache_hits_total');
      const misses = await cacheMetric('indexer_api_response_cache_misses_total');
      const validatorHits = await cacheMetric('indexer_api_response_cache_validator_hits_total');
      const versionHits = await cacheMetric('indexer_api_response_cache_version_hits_total');
      // the key is not held: decided from the file's versions, no page computed, its validator kept
      expect((await get(url, { 'If-None-Match': etag })).status).to.equal(304);
      expect(await cacheMetric('indexer_api_response_cache_version_hits_total')).to.equal(versionHits + 1);
      const again = await get(url, { 'If-None-Match': etag });
      expect(again.status).to.equal(304);
      expect(again.headers.etag).to.equal(etag);
      expect(await cacheMetric('indexer_api_response_cache_version_hits_total'), 'the second from the validator').to.equal(versionHits + 1);
      expect(await cacheMetric('indexer_api_response_cache_validator_hits_total')).to.equal(validatorHits + 2);
      expect(await cacheMetric('indexer_api_response_cache_misses_total'), 'no page computed').to.equal(misses);
      expect(await cacheMetric('indexer_api_response_cache_hits_total')).to.equal(hits);
      // a plain GET (second sight) is computed and stored; the next is the stored 200: the Express path's bytes and headers
      expect((await get(url)).body).to.equal(first.body);
      const full = await get(url);
      expect(await cacheMetric('indexer_api_response_cache_hits_total')).to.equal(hits + 1);
      expect(full.body).to.equal(first.body);
      for (const h of ['content-type', 'content-length', 'etag', 'cache-control']) expect(full.headers[h], h).to.equal(first.headers[h]);
    });

    it('counts a cache hit under its route pattern in the metrics', async () => {
      for (let i = 0; i < 3; i++) await get(`${s.url}/indexer/block/v1/blocks/3`); // miss, miss (stored), hit
      const text = (await get(`${s.url}/metrics`)).body;
      expect(metric(text, 'indexer_api_http_requests_total', 'method="GET",route="/indexer/block/v1/blocks/:height",status="200"')).to.equal(3);
    });

    it('writes the same request log line for a hit as for the miss before it', async () => {
      const path = '/indexer/block/v1/blocks?pagination.limit=4';
      await get(s.url + path); // first sight, not stored
      const a = await get(s.url + path);
      const hits = await cacheMetric('indexer_api_response_cache_hits_total');
      await get(s.url + path);
      await fetch(s.url + path, { method: 'HEAD', headers: { 'accept-encoding': 'identity' } }); // the representation `get` stored
      expect(await cacheMetric('indexer_api_response_cache_hits_total')).to.equal(hits + 2);
      const lines = () => s.lines.filter((l) => l.msg === 'request' && l.path === path);
      await eventually('the log lines', async () => lines().length === 4);
      const [, miss, hit, head] = lines();
      const shape = (l: Record<string, unknown>) => ({ ...l, time: undefined, ms: undefined });
      expect(shape(hit)).to.deep.equal(shape(miss));
      expect(miss).to.include({ level: 'info', method: 'GET', status: 200, bytes: Buffer.byteLength(a.body) });
      expect(head).to.include({ method: 'HEAD', status: 200, bytes: 0 });
      expect(hit.ms).to.be.a('number');
    });

    it('never caches an error', async () => {
      const entries = await cacheMetric('indexer_api_response_cache_entries');
      const hits = await cacheMetric('indexer_api_response_cache_hits_total');
      for (let i = 0; i < 2; i++) {
        expect((await get(`${s.url}/indexer/block/v1/blocks/999999`)).status).to.equal(404);
        expect((await get(`${s.url}/indexer/tx/v1/txs?pagination.limit=0`)).status).to.equal(400);
      }
      expect(await cacheMetric('indexer_api_response_cache_entries')).to.equal(entries);
      expect(await cacheMetric('indexer_api_response_cache_hits_total')).to.equal(hits);
    });

    it('answers from the new snapshot after a swap', async () => {
      const [, second] = await smallSnapshots();
      const before = await get(`${s.url}/status`);
      await get(`${s.url}/status`);
      publish(second.file, db);
      await eventually('the swap', async () => (JSON.parse((await get(`${s.url}/status`)).body) as { height: number }).height === second.height);
      expect((await get(`${s.url}/status`)).body).not.to.equal(before.body);
    });
  });

  describe('ResponseCache admission (second sight)', () => {
    it('admits a URL the second time it is seen, never the first', () => {
      const c = new ResponseCache(1 << 20);
      c.sync(liveFile('f1').state());
      for (let i = 0; i < 1000; i++) expect(c.admit(`/u/${i}`), `first sight of /u/${i}`).to.equal(false);
      let admitted = 0;
      for (let i = 0; i < 1000; i++) if (c.admit(`/u/${i}`)) admitted++;
      expect(admitted).to.equal(1000);
      expect(c.notAdmitted).to.equal(1000);
    });

    it('forgets one-off URLs over time (the filter resets) and on another file', () => {
      const c = new ResponseCache(1 << 20);
      c.sync(liveFile('f1').state());
      // fifty URLs seen once, then a crawl long enough to reset the filter: they are forgotten. Each
      // is taken for seen again only by the filter's false positives (its hash is seeded per
      // process, so which ones varies: 0–6 in 60 processes); never forgetting would admit all fifty
      for (let i = 0; i < 50; i++) c.admit(`/once/${i}`);
      for (let i = 0; i < 400_000; i++) c.admit(`/crawl/${i}`);
      let remembered = 0;
      for (let i = 0; i < 50; i++) if (c.admit(`/once/${i}`)) remembered++;
      expect(remembered).to.be.below(15);
      // a Bloom filter: a URL never seen is taken for seen now and then, never often
      let wronglyAdmitted = 0;
      for (let i = 0; i < 1000; i++) if (c.admit(`/new/${i}`)) wronglyAdmitted++;
      expect(wronglyAdmitted).to.be.below(100);
      c.admit('/again');
      expect(c.admit('/again')).to.equal(true);
      c.sync(liveFile('f2').state());
      expect(c.admit('/again')).to.equal(false);
    });

    it('admits everything when admission is off', () => {
      const c = new ResponseCache(1 << 20, Infinity, false);
      expect(c.admit('/x')).to.equal(true);
    });
  });

  describe('ResponseCache', () => {
    const entry = (n: number) => ({ body: Buffer.alloc(n, 'x'), etag: ETAG, route: '/r', headers: [], headers304: [] });
    const s1 = liveFile('f1').state();
    const cache = (maxBytes: number, maxEntries?: number): ResponseCache => {
      const c = new ResponseCache(maxBytes, maxEntries, false);
      c.sync(s1);
      return c;
    };

    it('keeps its bodies beyond its entry count for the keys asked for most: a newcomer takes the place of one asked for at least 2 times less', () => {
      const c = cache(1 << 20, 2);
      c.set(s1, 'a', entry(1), []);
      c.set(s1, 'b', entry(1), []);
      expect(c.get('a')).not.to.equal(undefined);
      c.set(s1, 'c', entry(1), []);
      expect(c.get('c'), 'asked for as often as the bodies held: not kept').to.equal(undefined);
      expect(c.size).to.equal(2);
      // c is asked for again and again: it beats b (asked for once), never a while a keeps up
      for (let i = 0; i < 3; i++) c.get('c');
      c.get('a');
      c.set(s1, 'c', entry(1), []);
      expect(c.get('c')).not.to.equal(undefined);
      expect(c.get('a')).not.to.equal(undefined);
      expect(c.get('b')).to.equal(undefined);
      expect(c.size).to.equal(2);
      expect(c.validators, 'b lost its body, not its validator').to.equal(3);
    });

    it('keeps bodies under its byte cap, and skips a body over 1/8 of the cap', () => {
      const c = cache(8 * 1000);
      for (let i = 0; i < 20; i++) c.set(s1, `k${i}`, entry(400), ['tip']);
      expect(c.bytes).to.be.at.most(8000);
      expect(c.size).to.be.within(10, 19);
      expect(c.get('k0')).not.to.equal(undefined);
      expect(c.get('k19'), 'a newcomer asked for no more than the bodies held').to.equal(undefined);
      c.set(s1, 'huge', entry(1000), []);
      expect(c.get('huge')).to.equal(undefined);
      expect(c.get('k0')).not.to.equal(undefined);
    });

    it('replaces an entry stored again under the same key without double-counting its bytes', () => {
      const c = cache(1 << 20);
      c.set(s1, 'k', entry(100), ['a:01']);
      const one = c.bytes;
      c.set(s1, 'k', entry(50), ['a:02']);
      expect(c.size).to.equal(1);
      expect(c.bytes).to.equal(one - 50);
    });

    it('holds one file: another file empties it, and a late store computed on the old file is dropped', () => {
      const f2 = liveFile('f2').state();
      const c = cache(1 << 20);
      c.set(s1, 'k', entry(10), []);
      c.sync(s1);
      expect(c.get('k')).not.to.equal(undefined);
      c.sync(f2);
      expect(c.size).to.equal(0);
      expect(c.bytes).to.equal(0);
      c.set(s1, 'k', entry(10), []);
      expect(c.get('k')).to.equal(undefined);
      c.set(f2, 'k', entry(10), []);
      expect(c.get('k')).not.to.equal(undefined);
    });
  });

  describe('ResponseCache across writes to the same file (change records)', () => {
    const entry = () => ({ body: Buffer.from('{}'), etag: ETAG, route: '/r', headers: [], headers304: [] });

    it('drops exactly the entries whose tags a write names, and keeps the rest', () => {
      const f = liveFile('f');
      const c = new ResponseCache(1 << 20, Infinity, false);
      const s0 = f.state();
      c.sync(s0);
      c.set(s0, 'alice', entry(), ['a:aa']);
      c.set(s0, 'bob', entry(), ['a:bb']);
      c.set(s0, 'tx', entry(), []);
      c.set(s0, 'status', entry(), ['tip']);
      c.set(s0, 'unknown', entry(), undefined);
      const s1 = f.commit(['tip', 'a:aa', 'h:5']);
      c.sync(s1);
      expect(c.get('alice')).to.equal(undefined);
      expect(c.get('status')).to.equal(undefined);
      expect(c.get('unknown'), 'an answer of unknown deps goes with any write').to.equal(undefined);
      expect(c.get('bob')).not.to.equal(undefined);
      expect(c.get('tx')).not.to.equal(undefined);
      expect(c.invalidated).to.equal(3);
      expect(c.flushes).to.equal(0);
    });

    it('applies every record between two states it saw (a worker that polled past several batches)', () => {
      const f = liveFile('f');
      const c = new ResponseCache(1 << 20, Infinity, false);
      const s0 = f.state();
      c.sync(s0);
      for (const k of ['aa', 'bb', 'cc']) c.set(s0, k, entry(), [`a:${k}`]);
      f.commit(['a:aa']);
      f.commit(['tip']);
      const s3 = f.commit(['a:cc']);
      c.sync(s3);
      expect([c.get('aa'), c.get('bb'), c.get('cc')].map((e) => e !== undefined)).to.deep.equal([false, true, false]);
    });

    it('empties its entries when the records in between cannot be read (pruned, or a write that recorded none)', () => {
      const f = liveFile('f');
      const c = new ResponseCache(1 << 20, Infinity, false);
      const s0 = f.state();
      c.sync(s0);
      c.set(s0, 'bb', entry(), ['a:bb']);
      f.commit(['a:aa']);
      const s2 = f.commit(['a:aa']);
      f.prune(1);
      c.sync(s2);
      expect(c.get('bb')).to.equal(undefined);
      expect(c.flushes).to.equal(1);
      c.set(s2, 'bb', entry(), ['a:bb']);
      const unrecorded = f.commitWithoutRecord();
      c.sync(unrecorded);
      expect(c.get('bb')).to.equal(undefined);
      expect(c.flushes).to.equal(2);
    });

    it('empties its entries when a batch renders the stored rows again (another wire format), whatever its records name', () => {
      const f = liveFile('f');
      const c = new ResponseCache(1 << 20, Infinity, false);
      const s0 = f.state();
      c.sync(s0);
      c.set(s0, 'bb', entry(), ['a:bb']);
      const s1 = { ...f.commit(['a:aa']), meta: { snapshotId: 'rendered', wireFormat: 3 } };
      c.sync(s1);
      expect(c.get('bb')).to.equal(undefined);
      expect(c.flushes).to.equal(1);
    });

    it('stores an answer computed on an older state only if nothing it read changed since', () => {
      const f = liveFile('f');
      const c = new ResponseCache(1 << 20, Infinity, false);
      const s0 = f.state();
      c.sync(s0);
      const s1 = f.commit(['a:aa']);
      c.sync(s1);
      // two requests that began on s0 finish after the cache moved to s1
      c.set(s0, 'aa', entry(), ['a:aa']);
      c.set(s0, 'bb', entry(), ['a:bb']);
      c.set(s0, 'unknown', entry(), undefined);
      expect(c.get('aa'), 'read a:aa, which s1 changed').to.equal(undefined);
      expect(c.get('unknown')).to.equal(undefined);
      expect(c.get('bb')).not.to.equal(undefined);
    });

    it('moves only forward: an older state seen after a newer one changes nothing', () => {
      const f = liveFile('f');
      const c = new ResponseCache(1 << 20, Infinity, false);
      const s0 = f.state();
      const s1 = f.commit(['a:aa']);
      c.sync(s1);
      c.set(s1, 'aa', entry(), ['a:aa']);
      c.sync(s0);
      expect(c.get('aa')).not.to.equal(undefined);
    });
  });
});

/**
 * A stand-in for one snapshot file followed in place: each commit is a new state (what a
 * Snapshot of src/snapshot/open.ts shows the cache) with its change record.
 */
function liveFile(fileKey: string) {
  const records: ChangeRecord[] = [];
  let floor = 0;
  let seq = 0;
  let commits = 0;
  const reader = (upToSeq: number) => ({
    seq: () => upToSeq,
    since(since: number, upTo: number): ChangeRecord[] | undefined {
      if (since === upTo) return [];
      if (since < floor) return undefined;
      return records.filter((r) => r.seq > since && r.seq <= upTo);
    },
  });
  const state = (): CacheState => ({ fileKey, changeSeq: seq, changes: reader(seq), meta: { snapshotId: `${fileKey}-${commits}`, wireFormat: 2 } });
  return {
    state,
    commit(tags: string[]): CacheState {
      records.push({ seq: ++seq, tags });
      commits++;
      return state();
    },
    commitWithoutRecord(): CacheState { commits++; return state(); },
    prune(upTo: number): void { floor = upTo; },
  };
}
