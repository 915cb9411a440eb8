import { expect } from 'chai';
import { connect } from 'node:net';
import { targetsOf } from '../../bench/targets';
import { createRequestListener } from '../../src/serve/routing';
import { ResponseCache } from '../../src/cache/store';
import { normalizeUrl } from '../../src/http/url';
import { loadOpenApi } from '../../src/serve/openapi';
import { RunningServer, listen } from '../../src/serve/server';
import { openSnapshot, Snapshot } from '../../src/snapshot/open';
import { DEMO } from '../helpers/serve';
import { appOptions } from '../helpers/app-options';

/**
 * The response cache in front of Express (src/cache/front.ts) must send exactly what the
 * Express pipeline sends: every route family on every demo snapshot, fetched over a raw socket
 * from a server without the cache and, twice, from one with it (the second answer a cache hit),
 * compared byte for byte — status line, every header in order (but Date), body — for a plain
 * GET, a GET with an Origin, a conditional GET (304, and 200 with Cache-Control: no-cache),
 * and HEAD.
 */

/** One request on a fresh connection (Connection: close), the raw answer with its Date line removed. */
function exchange(base: string, method: string, path: string, headers: Record<string, string> = {}): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect(Number(port), hostname, () => {
      const lines = [`${method} ${path} HTTP/1.1`, `Host: ${hostname}:${port}`, 'Connection: close',
        ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    });
    socket.on('data', (b: Buffer) => chunks.push(b));
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('latin1').replace(/\r\nDate: [^\r]*/, '')));
    socket.on('error', reject);
    socket.setTimeout(10_000, () => socket.destroy(new Error(`no answer: ${method} ${path}`)));
  });
}

const etagIn = (raw: string): string => /\r\nETag: ([^\r]*)/.exec(raw)?.[1] ?? '';

/** The families of bench/targets.ts plus the routes it has no target for, and a URL that needs normalizing. */
function urlsOf(file: string): string[] {
  const paths = targetsOf(file).families.map((f) => f.path);
  const collection = /by_collection\/([^?]+)/.exec(paths.find((p) => p.includes('/by_collection/')) as string)?.[1] as string;
  const owner = /tokens\/by_account\/([^?]+)/.exec(paths.find((p) => p.includes('/tokens/by_account/')) as string)?.[1] as string;
  return [...paths, '/indexer/block/v1/avg_blocktime', `/indexer/nft/v1/collections/${collection}`,
    `/indexer/nft/v1/collections/by_account/${owner}?pagination.limit=3`, '//indexer/tx/v1/txs/?pagination.limit=2&pagination.reverse=false'];
}

for (const vm of ['move', 'wasm', 'evm'] as const) {
  for (const corsOrigin of ['*', 'https://app.example,*.wallet.example']) {
    describe(`response cache in front of Express: byte-identical answers (${vm}, --cors-origin ${corsOrigin})`, function () {
      this.timeout(60_000);
      let snapshot: Snapshot;
      let plain: RunningServer;
      let cached: RunningServer;
      let cache: ResponseCache;
      before(async () => {
        snapshot = openSnapshot(DEMO(vm));
        const snapshots = { current: () => snapshot };
        const openapi = loadOpenApi();
        cache = new ResponseCache(64 << 20, Infinity, false); // admission is caching.test's; here: every 200 stored
        plain = await listen(createRequestListener({ snapshots, openapi, options: appOptions({ corsOrigin }) }), '127.0.0.1', 0);
        cached = await listen(createRequestListener({ snapshots, openapi, options: appOptions({ corsOrigin }), responseCache: cache }), '127.0.0.1', 0);
      });
      after(async () => {
        await plain.close();
        await cached.close();
        snapshot.close();
      });

      for (const path of urlsOf(DEMO(vm))) {
        it(`GET, GET with Origin, conditional GET and HEAD of ${path}`, async () => {
          const first = await exchange(cached.url, 'GET', path);
          const reference = await exchange(plain.url, 'GET', path);
          expect(reference).to.match(/^HTTP\/1.1 200 OK\r\n/);
          expect(first, 'the miss (computed by Express)').to.equal(reference);
          const etag = etagIn(reference);
          expect(etag).to.match(/^"/);
          const variants: [string, Record<string, string>][] = [
            ['GET', {}],
            ['GET', { Origin: 'https://app.example' }],
            ['GET', { Origin: 'https://x.wallet.example' }],
            ['GET', { Origin: 'https://elsewhere.example' }],
            ['GET', { 'If-None-Match': etag }],
            ['GET', { 'If-None-Match': `"other", W/${etag}`, Origin: 'https://app.example' }],
            ['GET', { 'If-None-Match': etag, 'Cache-Control': 'no-cache' }],
            ['GET', { 'If-None-Match': etag, 'If-Modified-Since': 'Sat, 01 Jan 2000 00:00:00 GMT' }],
            ['GET', { 'If-None-Match': '"something-else"' }],
            ['HEAD', {}],
            ['HEAD', { 'If-None-Match': etag }],
          ];
          for (const [method, headers] of variants) {
            const hits = cache.hits;
            const got = await exchange(cached.url, method, path, headers);
            const want = await exchange(plain.url, method, path, headers);
            const what = `${method} ${JSON.stringify(headers)}`;
            expect(cache.hits, `${what} is a cache hit`).to.equal(hits + 1);
            expect(got, what).to.equal(want);
          }
          expect((await exchange(cached.url, 'GET', path, { 'If-None-Match': etag })).startsWith('HTTP/1.1 304 Not Modified\r\n')).to.equal(true);
          // the gzip representation: cached apart (its first request a miss), its own bytes and ETag
          const gzip = { 'Accept-Encoding': 'gzip, deflate, br' };
          const gzFirst = await exchange(cached.url, 'GET', path, gzip);
          expect(gzFirst, 'the gzip miss').to.equal(await exchange(plain.url, 'GET', path, gzip));
          const gzEtag = etagIn(gzFirst);
          for (const [method, headers] of [
            ['GET', gzip], ['GET', { ...gzip, Origin: 'https://app.example' }], ['GET', { ...gzip, 'If-None-Match': gzEtag }],
            ['HEAD', gzip], ['HEAD', { ...gzip, 'If-None-Match': gzEtag }],
          ] as [string, Record<string, string>][]) {
            const hits = cache.hits;
            const got = await exchange(cached.url, method, path, headers);
            const what = `${method} ${JSON.stringify(headers)}`;
            expect(cache.hits, `${what} is a cache hit`).to.equal(hits + 1);
            expect(got, what).to.equal(await exchange(plain.url, method, path, headers));
          }
        });
      }

      it('never stores an error, a preflight or an ops answer, and still answers them as Express does', async () => {
        for (const [method, path, headers] of [
          ['GET', '/indexer/block/v1/blocks/99999999', {}], ['GET', '/indexer/tx/v1/txs?pagination.limit=0', {}],
          ['GET', '/nope', {}], ['POST', '/status', {}], ['GET', '/health', {}],
          ['OPTIONS', '/status', { Origin: 'https://app.example', 'Access-Control-Request-Method': 'GET' }],
        ] as [string, string, Record<string, string>][]) {
          const entries = cache.size;
          for (let i = 0; i < 2; i++) expect(await exchange(cached.url, method, path, headers), `${method} ${path}`).to.equal(await exchange(plain.url, method, path, headers));
          expect(cache.size, `${method} ${path}`).to.equal(entries);
        }
      });
    });
  }
}

for (const vm of ['move', 'evm'] as const) {
  for (const corsOrigin of ['*', 'https://app.example,*.wallet.example']) {
    describe(`response cache validators (no body held): byte-identical 304s (${vm}, --cors-origin ${corsOrigin})`, function () {
      this.timeout(60_000);
      let snapshot: Snapshot;
      let plain: RunningServer;
      let cached: RunningServer;
      let cache: ResponseCache;
      before(async () => {
        snapshot = openSnapshot(DEMO(vm));
        const snapshots = { current: () => snapshot };
        const openapi = loadOpenApi();
        // no byte for bodies: every key is a validator alone
        cache = new ResponseCache(0, Infinity, false);
        plain = await listen(createRequestListener({ snapshots, openapi, options: appOptions({ corsOrigin }) }), '127.0.0.1', 0);
        cached = await listen(createRequestListener({ snapshots, openapi, options: appOptions({ corsOrigin }), responseCache: cache }), '127.0.0.1', 0);
      });
      after(async () => {
        await plain.close();
        await cached.close();
        snapshot.close();
      });

      for (const path of urlsOf(DEMO(vm))) {
        it(`a conditional GET or HEAD of ${path} is the Express path's 304; anything else goes to Express`, async () => {
          for (const accept of [{}, { 'Accept-Encoding': 'gzip, deflate, br' }] as Record<string, string>[]) {
            const first = await exchange(cached.url, 'GET', path, accept);
            expect(first, 'the miss (computed by Express)').to.equal(await exchange(plain.url, 'GET', path, accept));
            const etag = etagIn(first);
            const fresh: [string, Record<string, string>][] = [
              ['GET', { ...accept, 'If-None-Match': etag }],
              ['GET', { ...accept, 'If-None-Match': `"other", W/${etag}`, Origin: 'https://app.example' }],
              ['GET', { ...accept, 'If-None-Match': etag, 'Cache-Control': 'no-cache', Origin: 'https://x.wallet.example' }],
              ['GET', { ...accept, 'If-None-Match': '*', Origin: 'https://elsewhere.example' }],
              ['HEAD', { ...accept, 'If-None-Match': etag }],
            ];
            for (const [method, headers] of fresh) {
              const hits = cache.validatorHits;
              const got = await exchange(cached.url, method, path, headers);
              const what = `${method} ${JSON.stringify(headers)}`;
              expect(got, what).to.match(/^HTTP\/1.1 304 Not Modified\r\n/);
              expect(cache.validatorHits, `${what} is a validator hit`).to.equal(hits + 1);
              expect(got, what).to.equal(await exchange(plain.url, method, path, headers));
            }
            // a validator never makes a 200: these are Express's to answer
            for (const [method, headers] of [
              ['GET', accept], ['HEAD', accept], ['GET', { ...accept, 'If-None-Match': '"something-else"' }],
              ['GET', { ...accept, 'If-None-Match': etag, 'If-Modified-Since': 'Sat, 01 Jan 2000 00:00:00 GMT' }],
            ] as [string, Record<string, string>][]) {
              const hits = cache.validatorHits + cache.hits;
              const got = await exchange(cached.url, method, path, headers);
              expect(cache.validatorHits + cache.hits, `${method} ${JSON.stringify(headers)} is not answered from memory`).to.equal(hits);
              expect(got).to.equal(await exchange(plain.url, method, path, headers));
            }
          }
        });
      }
    });
  }
}

describe('normalizeUrl', () => {
  it('collapses leading slashes and drops one trailing slash of the path, leaving the query alone', () => {
    const cases: [string, string][] = [
      ['/status', '/status'], ['/', '/'], ['//', '/'], ['//indexer/tx/v1/txs', '/indexer/tx/v1/txs'],
      ['/indexer/tx/v1/txs/', '/indexer/tx/v1/txs'], ['///a//?x=/', '/a/?x=/'], ['/a?b=c/', '/a?b=c/'], ['/a/?b', '/a?b'],
    ];
    for (const [url, want] of cases) expect(normalizeUrl(url), url).to.equal(want);
  });
});
