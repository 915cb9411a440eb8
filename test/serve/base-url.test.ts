/**
 * `serve --base-url /PREFIX/` (issue #31): a real server on 127.0.0.1 under a prefix beside one at
 * the root, over the same demo snapshot — every route family answers the same bytes, anything
 * outside the prefix is the JSON 404, Swagger UI and the explorer link under it, the response
 * cache and CORS work there, the ops endpoints have their prefixed form; and the URL building of
 * the real clients (Celatone, interwovenkit: shared reference client-explorer.md /
 * client-wallet.md) from a base like `http://host/minimove-1` pages as it does at the root.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { createReadStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultServeSettings, parseBaseUrl } from '../../src/settings/serve';
import { createLogger } from '../../src/lib/log';
import { underBase } from '../../src/http/url';
import { startServer } from '../../src/index';
import { assembleServeStack, ServeStack } from '../../src/serve/assembly';
import { publishSnapshot } from '../../src/publish/publish';
import { pagesAsAtRoot, routePaths } from './client-urls';
import { CLI, cleanEnv, DEMO, eventually, get, metric, ROOT, startServe } from '../helpers/serve';

const BASE = '/minimove-1';

/** One GET with this exact request target (absolute form included), the raw response text. */
function rawGet(port: number, target: string): Promise<string> {
  return new Promise((done, fail) => {
    const sock = connect(port, '127.0.0.1', () => sock.end(`GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
    let text = '';
    sock.setEncoding('utf8').on('data', (d: string) => { text += d; }).on('end', () => done(text)).on('error', fail);
  });
}

/** the stack settings these tests leave as a plain `serve` has them (but a free port, no watches, no start-up check) */
const REST = { ...defaultServeSettings(), port: 0, watchPollMs: undefined, verifyAtStart: false, commitPollMs: 0, clusterWorker: false };

async function stack(file: string, baseUrl: string, corsOrigin = '*'): Promise<ServeStack> {
  return assembleServeStack({
    ...REST, file, logger: createLogger('error'), corsOrigin, baseUrl, cacheBytes: 8 * 1024 * 1024, cacheEntries: 10_000, explorer: true,
  });
}

describe('serve --base-url', function () {
  this.timeout(120_000);

  describe('the option', () => {
    it('normalizes /minimove-1, /minimove-1/, minimove-1 (and nested prefixes) to one form', () => {
      for (const v of ['/minimove-1', '/minimove-1/', 'minimove-1', 'minimove-1/', ' /minimove-1/ ']) expect(parseBaseUrl(v, '--base-url'), v).to.equal('/minimove-1');
      expect(parseBaseUrl('/indexers/minimove-1/', '--base-url')).to.equal('/indexers/minimove-1');
      for (const v of ['', '/']) expect(parseBaseUrl(v, '--base-url'), v).to.equal('');
    });

    it('refuses what is not a plain path prefix, naming the option and the value', () => {
      for (const v of ['/a?b', '/a#b', '/a/../b', '/./a', '/a b', '/a//b', '/a%2Fb', 'http://host/a', '/a\\b', '/ä']) {
        expect(() => parseBaseUrl(v, '--base-url'), v).to.throw(/^--base-url must be a path prefix such as \/minimove-1\/, got /).with.property('message').that.contains(JSON.stringify(v));
      }
    });

    it('matches whole segments only, after undoing the absolute form and doubled slashes', () => {
      expect(underBase('/minimove-1', BASE)).to.equal('/');
      expect(underBase('/minimove-1?x=1', BASE)).to.equal('/?x=1');
      expect(underBase('/minimove-1/status', BASE)).to.equal('/status');
      expect(underBase('//minimove-1//indexer/a', BASE)).to.equal('//indexer/a');
      expect(underBase('http://h:1/minimove-1/status', BASE)).to.equal('/status');
      for (const u of ['/minimove-10/status', '/minimove-1x', '/status', '/', '/MINIMOVE-1/status']) expect(underBase(u, BASE), u).to.equal(undefined);
    });

    it('the CLI exits 2 on a bad value, naming --base-url and the value', () => {
      const r = spawnSync(process.execPath, [CLI, 'serve', '--base-url', '/a?b', '--get', '/status'], { cwd: ROOT, env: cleanEnv(), encoding: 'utf8' });
      expect(r.status).to.equal(2);
      expect(r.stderr).to.contain('--base-url').and.contain('"/a?b"');
    });

    it('--get takes the API path, under the prefix', () => {
      const r = spawnSync(process.execPath, [CLI, 'serve', '--demo', 'move', '--no-verify', '--base-url', 'minimove-1', '--get', '/status'], { cwd: ROOT, env: cleanEnv(), encoding: 'utf8' });
      expect(r.status, r.stderr).to.equal(0);
      expect(JSON.parse(r.stdout)).to.include({ chain_id: 'minimove-demo-1' });
    });

        it('--help describes it', () => {
      const r = spawnSync(process.execPath, [CLI, 'serve', '--help'], { cwd: ROOT, env: cleanEnv(), encoding: 'utf8' });
      expect(r.stdout).to.match(/--base-url\s+Answer under this path prefix/);
    });
  });

  for (const vm of ['move', 'evm'] as const) {
    describe(`a prefixed server beside a root server (${vm} demo)`, () => {
      let root: ServeStack;
      let pre: ServeStack;
      let origin: string;
      before(async () => {
        root = await stack(DEMO(vm), '');
        pre = await stack(DEMO(vm), BASE);
        origin = pre.url.slice(0, -BASE.length);
      });
      after(async () => { await root?.close(1000); await pre?.close(1000); });

      it('url ends with the prefix', () => {
        expect(pre.url).to.equal(`http://127.0.0.1:${pre.port}${BASE}`);
      });

      it('every route family answers the same status and bytes under the prefix (also as Celatone joins: base + "/" + "/indexer…")', async () => {
        const paths = await routePaths(root.url, vm);
        for (const p of paths) {
          const a = await get(root.url + p);
          expect(a.status, `${p}: ${a.body}`).to.equal(200);
          const b = await get(pre.url + p);
          expect(b.status, p).to.equal(200);
          expect(b.body, p).to.equal(a.body);
          expect(b.headers.etag, p).to.equal(a.headers.etag);
          const c = await get(`${pre.url}/${p}`);
          expect(c.body, `/${p}`).to.equal(a.body);
        }
      });

      it('the API\'s 400 and 404 are the same under the prefix', async () => {
        for (const p of ['/indexer/block/v1/blocks/abc', '/indexer/tx/v1/txs/00', '/indexer/nope', '/indexer/block/v1/blocks?pagination.limit=x']) {
          const [a, b] = [await get(root.url + p), await get(pre.url + p)];
          expect(a.status, p).to.be.oneOf([400, 404]);
          expect([b.status, b.body], p).to.deep.equal([a.status, a.body]);
        }
      });

      it('anything outside the prefix is the JSON 404, the root, the ops endpoints and a cached URL included', async () => {
        // a URL now in the response cache (admitted on second sight) must not answer outside the prefix
        for (let i = 0; i < 3; i++) await get(`${pre.url}/indexer/block/v1/blocks`);
        for (const p of ['/', '/status', '/health', '/ready', '/metrics', '/swagger', '/swagger/doc.json', '/explorer/explorer.js',
          '/indexer/block/v1/blocks', '/minimove-10/status', '/minimove-1x', '/blocks/1']) {
          const r = await get(origin + p);
          expect(r.status, p).to.equal(404);
          expect(r.headers['content-type'], p).to.match(/^application\/json/);
          const body = JSON.parse(r.body) as { code: number; message: string; details: unknown[] };
          expect(body, p).to.deep.equal({ code: 5, message: `not found: GET ${p}: this server answers under ${BASE}/`, details: [] });
          expect(r.headers['cache-control'], p).to.equal('no-store');
        }
      });

      it('HEAD, other methods and the absolute form behave under the prefix as at the root', async () => {
        const head = await fetch(`${pre.url}/status`, { method: 'HEAD' });
        expect(head.status).to.equal(200);
        expect(head.headers.get('etag')).to.equal((await fetch(`${root.url}/status`, { method: 'HEAD' })).headers.get('etag'));
        const post = await fetch(`${pre.url}/status`, { method: 'POST' });
        expect(post.status).to.equal(405);
        expect(post.headers.get('allow')).to.equal('GET, HEAD');
        const raw = await rawGet(pre.port, `http://127.0.0.1:${pre.port}${BASE}/status`);
        expect(raw).to.match(/^HTTP\/1\.1 200 /).and.contain('"chain_id"');
      });

            it('the ops endpoints answer under the prefix', async () => {
        expect(JSON.parse((await get(`${pre.url}/health`)).body)).to.deep.equal({ status: 'ok' });
        expect(JSON.parse((await get(`${pre.url}/ready`)).body)).to.include({ status: 'ready' });
        expect((await get(`${pre.url}/metrics`)).body).to.contain('indexer_api_snapshot_height');
      });

      it('the response cache answers under the prefix (hits grow), keyed without it', async () => {
        const p = `${pre.url}/indexer/tx/v1/txs?pagination.limit=4`;
        const hits = async (): Promise<number> => metric((await get(`${pre.url}/metrics`)).body, 'indexer_api_response_cache_hits_total') ?? 0;
        const before = await hits();
        const bodies = [];
        for (let i = 0; i < 4; i++) bodies.push((await get(p)).body);
        expect(await hits()).to.be.at.least(before + 2);
        expect(new Set(bodies).size).to.equal(1);
        // the same entry answers the Celatone form of the URL
        expect((await get(`${pre.url}//indexer/tx/v1/txs?pagination.limit=4`)).body).to.equal(bodies[0]);
      });

      it('the request log line shows the path as sent, prefix included', async () => {
        const lines: string[] = [];
        const logged = await assembleServeStack({
          ...REST, file: DEMO(vm), logger: createLogger('info', (t) => { lines.push(t); }), baseUrl: BASE, cacheBytes: 0, cacheEntries: 0, explorer: false,
        });
        try {
          await get(`${logged.url}/status`);
          await new Promise((r) => setTimeout(r, 50));
        } finally { await logged.close(1000); }
        const req = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'request');
        expect(req).to.include({ path: `${BASE}/status`, status: 200 });
      });

      it('Swagger UI loads its assets and doc.json under the prefix; doc.json names it in servers', async () => {
        const page = await get(`${pre.url}/swagger`);
        expect(page.status).to.equal(200);
        const refs = [...page.body.matchAll(/(?:href|src)="([^"]+)"|url: '([^']+)'/g)].map((m) => m[1] ?? m[2]);
        expect(refs).to.have.members([`${BASE}/swagger/swagger-ui.css`, `${BASE}/swagger/swagger-ui-bundle.js`, `${BASE}/swagger/doc.json`]);
        for (const r of refs) expect((await get(origin + r)).status, r).to.equal(200);
        const doc = JSON.parse((await get(`${pre.url}/swagger/doc.json`)).body) as Record<string, unknown>;
        const rootDoc = JSON.parse((await get(`${root.url}/swagger/doc.json`)).body) as Record<string, unknown>;
        expect(doc.servers).to.deep.equal([{ url: BASE }]);
        expect(rootDoc).to.not.have.property('servers');
        const { servers: _s, ...rest } = doc;
        expect(rest).to.deep.equal(rootDoc);
      });

      it('the explorer shell links its assets, pages and Swagger under the prefix and names the base for explorer.js', async () => {
        for (const page of ['', '/', '/blocks/1', '/search?q=x']) {
          const r = await get(pre.url + page);
          expect(r.status, page).to.equal(200);
          expect(r.headers['content-type'], page).to.match(/^text\/html/);
          expect(r.body).to.contain(`<meta name="indexer-api-base" content="${BASE}">`);
          const refs = [...r.body.matchAll(/\s(?:href|src)="(\/[^"]*)"/g)].map((m) => m[1]);
          expect(refs).to.include.members([`${BASE}/explorer/explorer.css`, `${BASE}/explorer/explorer.js`, `${BASE}/`, `${BASE}/swagger`]);
          for (const ref of refs) expect(ref.startsWith(`${BASE}/`), ref).to.equal(true);
        }
        for (const a of ['/explorer/explorer.js', '/explorer/explorer.css']) expect((await get(pre.url + a)).status, a).to.equal(200);
        // at the root the shell is the file as shipped
        expect((await get(`${root.url}/`)).body).to.contain('<meta name="indexer-api-base" content="">').and.contain('href="/explorer/explorer.css"');
      });
    });
  }

  describe('CORS under the prefix', () => {
    let pre: ServeStack;
    before(async () => { pre = await stack(DEMO('move'), BASE, 'https://explorer.example'); });
    after(async () => { await pre?.close(1000); });

    it('answers the allowed origin on a computed answer, a cache hit, a 404 outside the prefix and a preflight', async () => {
      const o = { origin: 'https://explorer.example' };
      for (let i = 0; i < 3; i++) {
        const r = await get(`${pre.url}/indexer/block/v1/blocks?pagination.limit=2`, o);
        expect(r.status).to.equal(200);
        expect(r.headers['access-control-allow-origin'], `request ${i}`).to.equal(o.origin);
      }
      const outside = await get(`${pre.url.slice(0, -BASE.length)}/status`, o);
      expect(outside.status).to.equal(404);
      expect(outside.headers['access-control-allow-origin']).to.equal(o.origin);
      const preflight = await fetch(`${pre.url}/status`, { method: 'OPTIONS', headers: { ...o, 'access-control-request-method': 'GET' } });
      expect(preflight.status).to.equal(204);
      expect(preflight.headers.get('access-control-allow-origin')).to.equal(o.origin);
      const other = await get(`${pre.url}/status`, { origin: 'https://evil.example' });
      expect(other.headers['access-control-allow-origin']).to.equal(undefined);
    });
  });

  describe('the library\'s startServer({ baseUrl })', () => {
    it('serves under the prefix, url ending with it', async () => {
      const srv = await startServer({ demo: 'move', baseUrl: 'minimove-1/' });
      try {
        expect(srv.url).to.equal(`http://127.0.0.1:${srv.port}${BASE}`);
        expect((await get(`${srv.url}/status`)).status).to.equal(200);
        expect((await get(`http://127.0.0.1:${srv.port}/status`)).status).to.equal(404);
      } finally { await srv.close(); }
    });

    it('refuses a bad baseUrl, naming it', async () => {
      let err: Error | undefined;
      try { await startServer({ demo: 'move', baseUrl: '/a/../b' }); } catch (e) { err = e as Error; }
      expect(err?.message).to.match(/^startServer: baseUrl must be a path prefix/).and.contain('"/a/../b"');
    });
  });

  describe('the real clients\' URL building from a base like http://host/minimove-1', () => {
    let root: ServeStack;
    let pre: ServeStack;
    before(async () => { root = await stack(DEMO('evm'), ''); pre = await stack(DEMO('evm'), BASE); });
    after(async () => { await root?.close(1000); await pre?.close(1000); });

    it('pages and parses the same under the prefix (with and without a trailing slash) as at the root', async () => {
      // next_key was followed, not only first pages compared
      expect(await pagesAsAtRoot(root.url, [pre.url, `${pre.url}/`])).to.be.at.least(2);
    });
  });

  describe('the CLI: --pull under a prefix', () => {
    let dir: string;
    let origin: Server;
    let manifest: string;
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'indexer-api-base-url-'));
      await publishSnapshot({ db: DEMO('wasm'), to: join(dir, 'pub'), keep: 1, compress: 'none' });
      // a plain static origin (whole files, no Range: the puller then downloads from zero)
      origin = createServer((req, res) => {
        const file = join(dir, 'pub', (req.url ?? '/').replace(/^\/+/, ''));
        try { res.writeHead(200, { 'content-length': statSync(file).size }); } catch { res.writeHead(404).end(); return; }
        createReadStream(file).pipe(res);
      });
      await new Promise<void>((done) => origin.listen(0, '127.0.0.1', done));
      manifest = `http://127.0.0.1:${(origin.address() as AddressInfo).port}/manifest.json`;
    });
    after(() => { origin?.close(); rmSync(dir, { recursive: true, force: true }); });

    for (const workers of ['1', '2']) {
      it(`pulls, then serves the pulled file under the prefix (--workers ${workers})`, async () => {
        const db = join(dir, `local-${workers}.sqlite`);
        const s = await startServe(['--pull', manifest, '--db', db, '--base-url', BASE, '--workers', workers, '--log-level', 'warn']);
        try {
          expect(s.url.endsWith(BASE)).to.equal(true);
          await eventually('ready under the prefix', async () => (await get(`${s.url}/ready`)).status === 200 || undefined);
          expect(JSON.parse((await get(`${s.url}/status`)).body)).to.include({ chain_id: 'miniwasm-demo-1' });
          expect((await get(`${s.url.slice(0, -BASE.length)}/ready`)).status).to.equal(404);
        } finally {
          expect((await s.stop()).code).to.equal(0);
        }
      });
    }
  });

  describe('the CLI: --workers 2 under a prefix', () => {
    it('every worker answers under the prefix; the listening and serving lines end with it; the ops port stays at the root', async () => {
      const s = await startServe(['--db', DEMO('move'), '--workers', '2', '--base-url', 'minimove-1/', '--ops-port', '0']);
      try {
        expect(s.url).to.match(new RegExp(`^http://127\\.0\\.0\\.1:\\d+${BASE}$`));
        expect(s.listening).to.equal(s.url);
        const origin = s.url.slice(0, -BASE.length);
        for (let i = 0; i < 6; i++) {
          expect((await get(`${s.url}/status`)).status).to.equal(200);
          expect((await get(`${origin}/status`)).status).to.equal(404);
        }
        // 503 while the start-up quick check runs
        await eventually('ready under the prefix', async () => (await get(`${s.url}/ready`)).status === 200 || undefined);
        // the ops port is for probes: unprefixed
        const ops = String((await s.line('the ops port', (l) => l.msg === 'operations port listening')).url);
        await eventually('the ops port ready', async () => (await get(`${ops}/ready`)).status === 200 || undefined);
        expect((await get(`${ops}${BASE}/ready`)).status).to.equal(404);
      } finally {
        expect((await s.stop()).code).to.equal(0);
      }
    });
  });
});
