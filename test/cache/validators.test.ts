/**
 * Validators outlive bodies (issue #36, docs/response-cache.md#validators): for every answer the
 * cache admits it keeps the ETag sent and the tags the answer read in a compact key table with
 * its own budget, so that an unchanged revalidation is a 304 without reading a row, whether its
 * body is still held or not. Each hazard the issue lists has a test here; the servers of
 * test/cache/front.test.ts (byte-identical 304s), test/cache/caching.test.ts (--cache-bytes 0)
 * and test/follow/live-cache-validators.test.ts (a real follow, validators only) hold the rest end to end.
 */
import { expect } from 'chai';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { etagOf } from '../../src/http/etag';
import { CachePart, CacheState, ResponseCache } from '../../src/cache/store';
import { gzipEtag } from '../../src/http/encoding';
import type { ChangeRecord } from '../../src/snapshot/changes';
import { DEMO, get, metric, startServe, type ServeProcess } from '../helpers/serve';

const SEED = 'lineage.2.';
const etag = (text: string): string => etagOf(SEED, Buffer.from(text));
const entry = (text: string, tag = etag(text), size = text.length) => ({
  body: Buffer.alloc(size, text), etag: tag, route: '/indexer/tx/v1/txs/by_account/:account',
  headers: ['Cache-Control', 'public, max-age=1', 'ETag', tag, 'Content-Type', 'application/json; charset=utf-8', 'Content-Length', String(size)],
  headers304: ['Cache-Control', 'public, max-age=1', 'ETag', tag],
});

/** The ETag a revalidation of (`url`, gzip) sending `inm` gets from the part's validator: what the front does. */
function revalidate(c: ResponseCache, p: CachePart, url: string, gzip: boolean, inm: string): string | undefined {
  const i = p.lookup(url, gzip);
  return i < 0 ? undefined : c.matchValidator(i, inm);
}

/** What httpCaching keeps of an answer the app computed: the validator, and the body on second sight. */
function answered(p: CachePart, s: CacheState, url: string, gzip: boolean, text: string, deps: string[] | undefined, o: { seen?: boolean; revalidated?: boolean } = {}): void {
  const seen = o.seen ?? true;
  if (!seen && !o.revalidated) return;
  p.keep(s, url, gzip, entry(text, gzip ? gzipEtag(etag(text)) : etag(text)), deps, { body: seen, validator: true }, seen);
}

describe('response cache: validators outlive bodies (#36)', () => {
  it('an evicted body leaves its validator, which still drops with the tags its answer read', () => {
    const f = liveFile('f');
    const c = new ResponseCache(1 << 20, 1, false);
    const p = c.part('');
    const s0 = f.state();
    p.sync(s0);
    answered(p, s0, '/alice', false, 'alice page', ['a:aa']);
    answered(p, s0, '/bob', false, 'bob page', ['a:bb']);
    expect(c.bodyOf(p.lookup('/alice', false)), 'alice holds the one body').not.to.equal(undefined);
    // bob asked for more: takes the body's place
    for (let i = 0; i < 4; i++) p.lookup('/bob', false);
    answered(p, s0, '/bob', false, 'bob page', ['a:bb']);
    expect(c.bodyOf(p.lookup('/bob', false))).not.to.equal(undefined);
    expect(c.bodyOf(p.lookup('/alice', false)), 'alice lost her body').to.equal(undefined);
    expect(revalidate(c, p, '/alice', false, etag('alice page')), 'a validator alone').to.equal(etag('alice page'));
    // a tx of alice's arrives: the validator whose body went must not answer 304 any more
    p.sync(f.commit(['tip', 'a:aa']));
    expect(revalidate(c, p, '/alice', false, etag('alice page')), 'stale validator').to.equal(undefined);
    expect(revalidate(c, p, '/bob', false, etag('bob page'))).to.equal(etag('bob page'));
    expect(c.invalidated).to.equal(1);
  });

  it('keeps a validator per representation, with the exact ETag sent (gzip ETags are not derived from identity ones)', () => {
    const f = liveFile('f');
    const c = new ResponseCache(0, Infinity, false);
    const p = c.part('');
    const s = f.state();
    p.sync(s);
    answered(p, s, '/txs', true, 'rows', ['tip']);
    answered(p, s, '/txs', false, 'rows', ['tip']);
    expect(revalidate(c, p, '/txs', true, gzipEtag(etag('rows')))).to.equal(gzipEtag(etag('rows')));
    expect(revalidate(c, p, '/txs', true, etag('rows')), 'identity ETag, gzip key').to.equal(undefined);
    expect(revalidate(c, p, '/txs', false, etag('rows'))).to.equal(etag('rows'));
    expect(revalidate(c, p, '/txs', false, gzipEtag(etag('rows'))), 'gzip ETag, identity key').to.equal(undefined);
    // an empty list or /status goes as identity to a gzip client: its gzip key holds the identity ETag it was sent
    p.keep(s, '/empty', true, entry('{"txs":[]}'), ['a:cc'], { body: false, validator: true }, true);
    expect(revalidate(c, p, '/empty', true, etag('{"txs":[]}'))).to.equal(etag('{"txs":[]}'));
    expect(revalidate(c, p, '/empty', true, gzipEtag(etag('{"txs":[]}')))).to.equal(undefined);
    // weak comparison, lists, and `*` as the app's conditional GET has them
    expect(revalidate(c, p, '/txs', false, `W/${etag('rows')}`)).to.equal(etag('rows'));
    expect(revalidate(c, p, '/txs', false, `"x", ${etag('other')}, ${etag('rows')}`)).to.equal(etag('rows'));
    expect(revalidate(c, p, '/txs', false, '*')).to.equal(etag('rows'));
    expect(revalidate(c, p, '/txs', false, '"x"')).to.equal(undefined);
  });

  it('keeps the validator of a body too large to cache', () => {
    const f = liveFile('f');
    const c = new ResponseCache(8 * 1024, Infinity, false);
    const p = c.part('');
    const s = f.state();
    p.sync(s);
    p.keep(s, '/huge', false, entry('x', etag('huge'), 4096), ['tip'], { body: true, validator: true }, true);
    const i = p.lookup('/huge', false);
    expect(c.bodyOf(i)).to.equal(undefined);
    expect(c.matchValidator(i, etag('huge'))).to.equal(etag('huge'));
    expect(c.size).to.equal(0);
    expect(c.validators).to.equal(1);
  });

  it('applies the older-state rule to validators: an answer computed before a change it read is not kept', () => {
    const f = liveFile('f');
    const c = new ResponseCache(0, Infinity, false);
    const p = c.part('');
    const s0 = f.state();
    p.sync(s0);
    const s1 = f.commit(['a:aa']);
    p.sync(s1);
    answered(p, s0, '/aa', false, 'aa', ['a:aa']);
    answered(p, s0, '/bb', false, 'bb', ['a:bb']);
    answered(p, s0, '/any', false, 'any', undefined);
    expect(revalidate(c, p, '/aa', false, etag('aa'))).to.equal(undefined);
    expect(revalidate(c, p, '/any', false, etag('any')), 'unknown deps on an older state').to.equal(undefined);
    expect(revalidate(c, p, '/bb', false, etag('bb'))).to.equal(etag('bb'));
    // and an answer of unknown deps goes with the next write, whatever it names
    answered(p, s1, '/any', false, 'any', undefined);
    expect(revalidate(c, p, '/any', false, etag('any'))).to.equal(etag('any'));
    p.sync(f.commit(['h:9']));
    expect(revalidate(c, p, '/any', false, etag('any'))).to.equal(undefined);
    expect(revalidate(c, p, '/bb', false, etag('bb'))).to.equal(etag('bb'));
  });

  it('empties validators on a flush (records pruned, another file) and on a chain\'s removal, and only that chain\'s', () => {
    const f = liveFile('f');
    const g = liveFile('g');
    const c = new ResponseCache(0, Infinity, false);
    const [a, b] = [c.part('a'), c.part('b')];
    const sa = f.state();
    const sb = g.state();
    a.sync(sa);
    b.sync(sb);
    for (let i = 0; i < 50; i++) { answered(a, sa, `/a${i}`, false, `a${i}`, [`a:${i}`]); answered(b, sb, `/b${i}`, false, `b${i}`, [`a:${i}`]); }
    expect(c.validators).to.equal(100);
    f.commit(['a:1']);
    const pruned = f.commit(['a:2']);
    f.prune(1);
    a.sync(pruned);
    expect(c.flushes).to.equal(1);
    expect(c.validators, 'chain a flushed, b kept').to.equal(50);
    expect(revalidate(c, a, '/a7', false, etag('a7'))).to.equal(undefined);
    expect(revalidate(c, b, '/b7', false, etag('b7'))).to.equal(etag('b7'));
    answered(a, pruned, '/a7', false, 'a7', ['a:7']);
    a.sync(liveFile('other').state());
    expect(revalidate(c, a, '/a7', false, etag('a7')), 'another file').to.equal(undefined);
    c.dropPart('b');
    expect(c.validators).to.equal(0);
    expect(c.validatorBytes).to.be.greaterThan(0);
  });

  it('never answers a request that is not a matching conditional GET (a validator makes no 200)', () => {
    const f = liveFile('f');
    const c = new ResponseCache(0, Infinity, false);
    const p = c.part('');
    const s = f.state();
    p.sync(s);
    answered(p, s, '/x', false, 'x', ['tip']);
    const i = p.lookup('/x', false);
    expect(i).to.be.at.least(0);
    expect(c.bodyOf(i), 'no body to answer a plain GET with').to.equal(undefined);
    expect(c.matchValidator(i, '"something-else"')).to.equal(undefined);
    expect(c.matchValidator(i, '')).to.equal(undefined);
  });

  it('admits a validator on second sight or on a matching revalidation, not a crawler\'s one-off URL', () => {
    const f = liveFile('f');
    const c = new ResponseCache(0, Infinity, true);
    const p = c.part('');
    const s = f.state();
    p.sync(s);
    // a crawler: every URL once, with or without a made-up If-None-Match (never matching)
    for (let i = 0; i < 5000; i++) answered(p, s, `/crawl/${i}`, false, `c${i}`, ['tip'], { seen: p.admit(`/crawl/${i}`) });
    expect(c.validators, 'Bloom false positives only').to.be.below(500);
    // a wallet: its first poll is a 200, its second a revalidation
    answered(p, s, '/wallet', false, 'w', ['a:ww'], { seen: p.admit('/wallet') });
    answered(p, s, '/wallet', false, 'w', ['a:ww'], { seen: p.admit('/wallet'), revalidated: true });
    expect(revalidate(c, p, '/wallet', false, etag('w'))).to.equal(etag('w'));
  });

  it('keeps each validator within 300 bytes of memory, and its key table within its budget', () => {
    const gc = collector();
    const f = liveFile('f');
    const budget = 32 << 20;
    const n = 100_000;
    const c = new ResponseCache(0, Infinity, false, budget);
    const p = c.part('');
    const s = f.state();
    p.sync(s);
    const urls = Array.from({ length: n }, (_, i) => `/indexer/tx/v1/txs/by_account/init1${String(i).padStart(38, 'q')}?pagination.reverse=true&pagination.limit=10`);
    const tags = urls.map((_, i) => [`a:${i.toString(16).padStart(40, '0')}`]);
    const etags = urls.map((u) => gzipEtag(etag(u)));
    const e = { body: Buffer.alloc(0), route: '/indexer/tx/v1/txs/by_account/:account', headers: [] as string[] };
    // strings built by concatenation are flattened on first read (the old pieces freed): read them
    // all now, so that what is measured is what the cache keeps
    for (const t of [...urls, ...etags, ...tags.flat()]) t.charCodeAt(0);
    gc();
    const before = memory();
    for (let i = 0; i < n; i++) {
      p.keep(s, urls[i], true, { ...e, etag: etags[i], headers304: ['Cache-Control', 'public, max-age=1', 'ETag', etags[i]] }, tags[i], { body: false, validator: true }, true);
    }
    gc();
    const perValidator = (memory() - before) / n;
    expect(c.validators).to.equal(n);
    expect(perValidator, `${perValidator.toFixed(0)} bytes per validator`).to.be.at.most(300);
    if (process.env.SHOW_FIGURES) process.stdout.write(`      ${perValidator.toFixed(1)} bytes per validator (${n} validators, key table ${c.table.bytes} bytes)\n`);
    expect(c.validatorBytes).to.be.at.most(budget + (4 << 20));
    for (let i = 0; i < n; i += 997) expect(revalidate(c, p, urls[i], true, etags[i])).to.equal(etags[i]);
    // the inputs stay referenced until here: a dead local's memory would be freed by the collections above
    expect(tags.length + urls.length + etags.length).to.equal(3 * n);
  });

  it('holds no more validators than its budget, evicting the least used first', () => {
    const f = liveFile('f');
    const c = new ResponseCache(0, Infinity, false, 64 * 1024);
    const p = c.part('');
    const s = f.state();
    p.sync(s);
    answered(p, s, '/hot', false, 'hot', ['tip']);
    for (let i = 0; i < 5000; i++) {
      answered(p, s, `/u${i}`, false, `u${i}`, ['tip']);
      if (i % 50 === 0) expect(revalidate(c, p, '/hot', false, etag('hot')), `the hot key, after ${i}`).to.equal(etag('hot'));
    }
    expect(c.table.bytes).to.be.at.most(64 * 1024);
    expect(c.validators).to.be.within(500, 1200);
  });
});

describe('response cache: eviction that suits a polling population (#36)', () => {
  /**
   * N wallets poll in turn (each URL once a cycle, the order shuffled each cycle); bodies for a
   * fraction f of them fit. Least-recently-used and FIFO-like policies answer none from a body
   * (each URL comes back after every other one); the hit share must be at least 0.8·f.
   */
  for (const f of [0.05, 0.2, 0.5, 0.8]) {
    it(`answers at least 0.8·f of the polls from a body when a fraction f = ${f} of the bodies fits`, () => {
      const n = 4000;
      const size = 2000;
      const file = liveFile('f');
      // the budget holds f·n bodies (each body counts its bytes and a fixed overhead)
      const c = new ResponseCache(Math.floor(f * n) * (size + 256) + 100, Infinity, true);
      const p = c.part('');
      const s = file.state();
      p.sync(s);
      let polls = 0;
      let hits = 0;
      let seed = 7;
      const order = Array.from({ length: n }, (_, i) => i);
      for (let cycle = 0; cycle < 12; cycle++) {
        for (let i = n - 1; i > 0; i--) {
          seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
          const j = seed % (i + 1);
          [order[i], order[j]] = [order[j], order[i]];
        }
        for (const w of order) {
          const url = `/indexer/tx/v1/txs/by_account/w${w}?pagination.limit=10`;
          const slot = p.lookup(url, true);
          const hit = slot >= 0 && c.bodyOf(slot) !== undefined;
          if (cycle >= 4) { polls++; if (hit) hits++; }
          if (hit) continue;
          const seen = p.admit(url);
          p.keep(s, url, true, entry('x', gzipEtag(etag(url)), size), [`a:${w}`], { body: seen, validator: true }, seen);
        }
      }
      const share = hits / polls;
      expect(share, `hit share ${share.toFixed(3)} with f = ${f}`).to.be.at.least(0.8 * f);
      if (process.env.SHOW_FIGURES) process.stdout.write(`      hit share ${share.toFixed(3)} (f = ${f})\n`);
    });
  }

  it('still takes in a new hot set: bodies of keys no longer asked for give way', () => {
    const file = liveFile('f');
    const c = new ResponseCache(50 * (1000 + 256), Infinity, false);
    const p = c.part('');
    const s = file.state();
    p.sync(s);
    const poll = (url: string): boolean => {
      const slot = p.lookup(url, false);
      if (slot >= 0 && c.bodyOf(slot) !== undefined) return true;
      p.keep(s, url, false, entry('y', etag(url), 1000), ['tip'], { body: true, validator: true }, true);
      return false;
    };
    for (let r = 0; r < 5; r++) for (let i = 0; i < 50; i++) poll(`/old/${i}`);
    let hits = 0;
    // the new set's counts pass the old one's within a few rounds (sooner once the counts age: every
    // AGE_WINDOW_PER_BODY × bodies requests and every minute, not reached by so short a run)
    for (let r = 0; r < 20; r++) for (let i = 0; i < 50; i++) if (poll(`/new/${i}`) && r >= 15) hits++;
    expect(hits / 250, 'the new set, once asked for more than the old').to.be.above(0.9);
  });
});

describe('serve: validators end to end (#36)', function () {
  this.timeout(60_000);
  let s: ServeProcess;
  before(async () => { s = await startServe(['--db', DEMO('move'), '--cache-bytes', '1k']); });
  after(async () => { await s.stop(); });
  const m = async (name: string): Promise<number> => metric((await get(`${s.url}/metrics`)).body, name) ?? 0;

  it('does not grow the validators on a crawl of one-off URLs, and keeps a polling wallet\'s', async () => {
    const before = await m('indexer_api_response_cache_validators');
    for (let i = 0; i < 200; i++) {
      await get(`${s.url}/indexer/block/v1/blocks?pagination.limit=${1 + (i % 50)}&pagination.offset=${i}`, i % 2 ? { 'If-None-Match': `"made-up-${i}"` } : {});
    }
    expect(await m('indexer_api_response_cache_validators') - before, 'validators a crawl left').to.be.below(20);
    const url = `${s.url}/indexer/tx/v1/txs?pagination.limit=10`;
    const tag = (await get(url)).headers.etag as string;
    const hits = await m('indexer_api_response_cache_validator_hits_total');
    for (let i = 0; i < 3; i++) expect((await get(url, { 'If-None-Match': tag })).status).to.equal(304);
    // poll 1 decided by the file's tag versions (its validator kept), 2 and 3 by the validator (the body is over 1/8 of 1k): none rebuilt
    expect(await m('indexer_api_response_cache_validator_hits_total'), 'every poll a 304 without the page').to.equal(hits + 3);
  });
});

/** A stand-in for one snapshot file followed in place (as in test/cache/caching.test.ts). */
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
    prune(upTo: number): void { floor = upTo; },
  };
}

/** Memory the process holds for JS objects and typed arrays. */
function memory(): number {
  const u = process.memoryUsage();
  return u.heapUsed + u.arrayBuffers;
}

/** A full garbage collection (the test process may not have been started with --expose-gc). */
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  return () => { gc(); gc(); };
}
