import { expect } from 'chai';
import { createRequestListener } from '../../src/serve/routing';
import { ResponseCache } from '../../src/cache/store';
import { corsHeaders } from '../../src/http/cors';
import { loadOpenApi } from '../../src/serve/openapi';
import { RunningServer, listen } from '../../src/serve/server';
import { openSnapshot, Snapshot } from '../../src/snapshot/open';
import { DEMO } from '../helpers/serve';
import { appOptions } from '../helpers/app-options';

/**
 * CORS answers are `Cache-Control: public`: a shared cache (a CDN, a corporate proxy) keeps one
 * answer per URL unless told to vary it, and the in-process response cache keeps one too.
 */
describe('CORS and caches', function () {
  this.timeout(60_000);

  it('a list of origins: every answer varies on Origin, whatever the request sent', () => {
    const h = corsHeaders('https://a.example,*.b.example');
    expect(h(undefined)).to.deep.equal(['Vary', 'Origin']);
    expect(h('https://elsewhere.example')).to.deep.equal(['Vary', 'Origin']);
    expect(h('https://a.example')).to.deep.equal(['Access-Control-Allow-Origin', 'https://a.example', 'Vary', 'Origin']);
    expect(h('https://x.b.example')).to.deep.equal(['Access-Control-Allow-Origin', 'https://x.b.example', 'Vary', 'Origin']);
  });

  it('`*`: the same header with or without Origin (nothing to vary)', () => {
    const h = corsHeaders('*');
    expect(h(undefined)).to.deep.equal(['Access-Control-Allow-Origin', '*']);
    expect(h('https://a.example')).to.deep.equal(['Access-Control-Allow-Origin', '*']);
  });

  describe('over HTTP, with the response cache in front', () => {
    let snapshot: Snapshot;
    let server: RunningServer;
    let cache: ResponseCache;
    before(async () => {
      snapshot = openSnapshot(DEMO('move'));
      cache = new ResponseCache(16 << 20, Infinity, false);
      server = await listen(createRequestListener({
        snapshots: { current: () => snapshot }, openapi: loadOpenApi(), options: appOptions({ corsOrigin: 'https://a.example,https://b.example' }), responseCache: cache,
      }), '127.0.0.1', 0);
    });
    after(async () => {
      await server.close();
      snapshot.close();
    });

    const get = async (origin?: string): Promise<Response> => fetch(`${server.url}/indexer/block/v1/blocks?pagination.limit=2`, { headers: origin ? { Origin: origin } : {} });

    it('the answer cached for origin a is not served with a\'s header to b, to another origin or to no origin', async () => {
      const a = await get('https://a.example');
      expect(a.headers.get('cache-control')).to.match(/^public/);
      expect(a.headers.get('access-control-allow-origin')).to.equal('https://a.example');
      expect(a.headers.get('vary')).to.equal('Accept-Encoding, Origin');
      const hits = cache.hits;
      const b = await get('https://b.example');
      expect(cache.hits, 'b is answered from the cache').to.equal(hits + 1);
      expect(b.headers.get('access-control-allow-origin')).to.equal('https://b.example');
      expect(b.headers.get('vary')).to.equal('Accept-Encoding, Origin');
      for (const other of ['https://c.example', undefined]) {
        const r = await get(other);
        expect(r.headers.get('access-control-allow-origin'), String(other)).to.equal(null);
        expect(r.headers.get('vary'), String(other)).to.equal('Accept-Encoding, Origin');
        expect(await r.text()).to.equal(await (await get('https://a.example')).text());
      }
    });
  });
});
