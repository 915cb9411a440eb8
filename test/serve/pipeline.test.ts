import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { createRequestListener } from '../../src/serve/routing';
import { ResponseCache } from '../../src/cache/store';
import { normalizeUrl } from '../../src/http/url';
import { loadOpenApi } from '../../src/serve/openapi';
import { RunningServer, listen } from '../../src/serve/server';
import { openSnapshot, Snapshot } from '../../src/snapshot/open';
import { DEMO, ROOT } from '../helpers/serve';
import { appOptions } from '../helpers/app-options';

/**
 * The request pipeline (src/serve/app.ts) as clients meet it: every method on every route, OPTIONS
 * with CORS on and off, absolute-form request lines, Go booleans, bad values cut in 400s, IBC
 * collection names with unescaped "/" — with and without the response cache in front, and the
 * same answer before and after the route's GET has been served (and cached).
 */

interface Answer { status: number; headers: Record<string, string>; body: string }

/** One request over a raw socket (Connection: close): the request line exactly as given. */
function exchange(base: string, method: string, target: string, headers: Record<string, string> = {}): Promise<Answer> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect(Number(port), hostname, () => {
      const lines = [`${method} ${target} HTTP/1.1`, `Host: ${hostname}:${port}`, 'Connection: close',
        ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    });
    socket.on('data', (b: Buffer) => chunks.push(b));
    socket.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const [head, ...rest] = raw.split('\r\n\r\n');
      const [statusLine, ...headerLines] = head.split('\r\n');
      const h: Record<string, string> = {};
      for (const l of headerLines) { const i = l.indexOf(':'); h[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim(); }
      resolve({ status: Number(statusLine.split(' ')[1]), headers: h, body: rest.join('\r\n\r\n') });
    });
    socket.on('error', reject);
    socket.setTimeout(10_000, () => socket.destroy(new Error(`no answer: ${method} ${target}`)));
  });
}

/** A GET-able URL for each path of openapi.yaml on the move demo (path parameters filled in). */
function routeUrls(): string[] {
  const fill: Record<string, string> = {
    height: '7', tx_hash: '00', account: 'init1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq', collection_addr: '0x1', name: 'x',
    denom: 'umin', token_id: '1', contract_addr: '0x1', evm_tx_hash: '00',
  };
  // the EVM routes do not exist on the move demo (404 for every method, evm-txs.test)
  const paths = Object.keys(loadOpenApi().paths as Record<string, unknown>).filter((p) => !p.includes('/evm-'));
  return paths.map((p) => p.replace(/\{([^}]+)\}/g, (_m, name: string) => fill[name] ?? '1'));
}

const OPS = ['/health', '/ready', '/metrics', '/swagger', '/swagger/doc.json'];
const OTHER_METHODS = ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'];

describe('the request pipeline: methods, OPTIONS, request targets, booleans, error values', function () {
  this.timeout(120_000);
  let snapshot: Snapshot;
  const servers: Record<string, RunningServer> = {};

  before(async () => {
    snapshot = openSnapshot(DEMO('move'));
    const snapshots = { current: () => snapshot };
    const openapi = loadOpenApi();
    servers.plain = await listen(createRequestListener({ snapshots, openapi, options: appOptions({ corsOrigin: '*' }) }), '127.0.0.1', 0);
    servers.cached = await listen(createRequestListener({
      snapshots, openapi, options: appOptions({ corsOrigin: '*' }), responseCache: new ResponseCache(16 << 20, Infinity, false),
    }), '127.0.0.1', 0);
    servers.noCors = await listen(createRequestListener({ snapshots, openapi, options: appOptions({ corsOrigin: '' }) }), '127.0.0.1', 0);
  });
  after(async () => {
    for (const s of Object.values(servers)) await s.close();
    snapshot.close();
  });

  it('answers every other method on every route (API and ops) 405 with the JSON error, the same before and after a GET', async () => {
    const urls = [...routeUrls(), ...OPS];
    expect(urls.length).to.be.greaterThan(20);
    for (const name of ['plain', 'cached', 'noCors']) {
      const base = servers[name].url;
      const before = new Map<string, Answer>();
      for (const url of urls) for (const m of OTHER_METHODS) before.set(`${m} ${url}`, await exchange(base, m, url));
      for (const url of urls) { await exchange(base, 'GET', url); await exchange(base, 'GET', url); }
      for (const url of urls) {
        for (const m of OTHER_METHODS) {
          const what = `${name}: ${m} ${url}`;
          const a = await exchange(base, m, url);
          expect(a.status, what).to.equal(405);
          expect(a.headers.allow, what).to.equal('GET, HEAD');
          expect(a.headers['content-type'], what).to.match(/^application\/json/);
          expect(a.headers['cache-control'], what).to.equal('no-store');
          expect(JSON.parse(a.body), what).to.deep.equal({ code: 12, message: `method not allowed: ${m} ${url.split('?')[0]}`, details: [] });
          expect(a.body, `${what}: same as before the GET`).to.equal(before.get(`${m} ${url}`)?.body);
        }
      }
    }
  });

  it('answers a CORS preflight 204 when CORS is on, and 405 when it is off', async () => {
    const preflight = { Origin: 'https://app.example', 'Access-Control-Request-Method': 'GET' };
    for (const url of ['/status', '/indexer/tx/v1/txs', '/health']) {
      const on = await exchange(servers.plain.url, 'OPTIONS', url, preflight);
      expect(on.status, url).to.equal(204);
      expect(on.headers['access-control-allow-origin'], url).to.equal('*');
      expect(on.headers['access-control-allow-methods'], url).to.equal('GET, HEAD, OPTIONS');
      const off = await exchange(servers.noCors.url, 'OPTIONS', url, preflight);
      expect(off.status, url).to.equal(405);
      expect(off.headers['access-control-allow-origin'], url).to.equal(undefined);
    }
  });

  it('accepts an absolute-form request line as its origin form', async () => {
    for (const name of ['plain', 'cached']) {
      const base = servers[name].url;
      const { host } = new URL(base);
      for (const target of ['/status', '/indexer/block/v1/blocks?pagination.limit=2']) {
        const want = await exchange(base, 'GET', target);
        expect(want.status).to.equal(200);
        for (const abs of [`http://${host}${target}`, `HTTP://example.com:99${target}`]) {
          const got = await exchange(base, 'GET', abs);
          expect(got.status, `${name}: ${abs}`).to.equal(200);
          expect(got.body, `${name}: ${abs}`).to.equal(want.body);
          expect(got.headers.etag, `${name}: ${abs}`).to.equal(want.headers.etag);
        }
      }
    }
    expect(normalizeUrl('http://h')).to.equal('/');
    expect(normalizeUrl('https://h:1?x=1')).to.equal('/?x=1');
  });

  it('reads booleans as Go ParseBool does, and anything else as the default (rollytics QueryBool)', async () => {
    const base = servers.plain.url;
    const list = (q: string): string => `/indexer/tx/v1/txs?pagination.limit=2&${q}`;
    for (const [values, as] of [[['1', 't', 'T', 'TRUE', 'true', 'True'], 'true'], [['0', 'f', 'F', 'FALSE', 'false', 'False'], 'false']] as const) {
      for (const param of ['pagination.reverse', 'pagination.count_total']) {
        const want = await exchange(base, 'GET', list(`${param}=${as}`));
        expect(want.status).to.equal(200);
        for (const v of values) {
          const got = await exchange(base, 'GET', list(`${param}=${v}`));
          expect(got.status, `${param}=${v}`).to.equal(200);
          expect(got.body, `${param}=${v}`).to.equal(want.body);
        }
      }
    }
    const byDefault = await exchange(base, 'GET', list('pagination.reverse=true'));
    for (const v of ['yes', '2', 'tRUE', 'TrUe', '', 'on', 'abc']) {
      const r = await exchange(base, 'GET', list(`pagination.reverse=${v}`));
      expect(r.status, v).to.equal(200);
      expect(r.body, v).to.equal(byDefault.body);
    }
  });

  it('cuts a huge bad value to 100 characters and "…" in a 400', async () => {
    const huge = 'A'.repeat(100_000);
    for (const target of [`/indexer/tx/v1/txs?pagination.key=${huge.slice(0, 5000)}!`, `/indexer/tx/v1/txs?pagination.limit=${'9'.repeat(5000)}`]) {
      const r = await exchange(servers.plain.url, 'GET', target);
      expect(r.status).to.equal(400);
      expect(r.body.length).to.be.lessThan(400);
      expect(JSON.parse(r.body).message).to.match(/: [A9]{100}… \(/);
    }
    const notFound = await exchange(servers.plain.url, 'GET', `/no/${'x'.repeat(5000)}`);
    expect(notFound.status).to.equal(404);
    expect(JSON.parse(notFound.body).message).to.equal(`not found: GET /no/${'x'.repeat(96)}…`);
  });

  it('treats the rest of a by_name path as the collection name (IBC names keep their "/")', async () => {
    const base = servers.plain.url;
    const want = await exchange(base, 'GET', '/indexer/nft/v1/collections/by_name/ibc%2FABC');
    expect(want.status).to.equal(200);
    for (const target of ['/indexer/nft/v1/collections/by_name/ibc/ABC', '/indexer/nft/v1/collections/by_name/ibc/ABC/']) {
      const got = await exchange(base, 'GET', target);
      expect(got.status, target).to.equal(200);
      expect(got.body, target).to.equal(want.body);
    }
    expect(normalizeUrl('/indexer/nft/v1/collections/by_name/ibc/a/b?x=/')).to.equal('/indexer/nft/v1/collections/by_name/ibc%2Fa%2Fb?x=/');
  });
});

describe('express-openapi-validator: changed only by the declared patch in patches/', () => {
  it('is installed exactly as patches/ describes (npm ci ran patch-package)', () => {
    const patches = readdirSync(join(ROOT, 'patches')).filter((f) => f.startsWith('express-openapi-validator+'));
    expect(patches).to.have.length(1);
    // reverse-applies cleanly only if every hunk is in node_modules as patched
    execFileSync('git', ['apply', '--check', '--reverse', join('patches', patches[0])], { cwd: ROOT, stdio: 'pipe' });
    const version = (JSON.parse(execFileSync('npm', ['pkg', 'get', 'dependencies.express-openapi-validator'], { cwd: ROOT }).toString()) as string);
    expect(patches[0]).to.equal(`express-openapi-validator+${version}.patch`);
  });
});
