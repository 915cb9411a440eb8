import { expect } from 'chai';
import express from 'express';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { createRequestListener } from '../../src/serve/routing';
import { readBinaryAsset, readTextAsset } from '../../src/assets';
import { ResponseCache } from '../../src/cache/store';
import { acceptQ, choose, precompress, staticFile } from '../../src/http/static';
import { loadOpenApi, servedDocument } from '../../src/serve/openapi';
import { RunningServer, listen } from '../../src/serve/server';
import { openSnapshot, Snapshot } from '../../src/snapshot/open';
import { DEMO } from '../helpers/serve';
import { appOptions } from '../helpers/app-options';

/**
 * Precompressed fixed files (src/http/static.ts): the Swagger UI and explorer assets, the OpenAPI
 * document and the explorer's shell, through Express alone and behind the response cache.
 */

interface Answer { status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }

function fetchRaw(base: string, method: string, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(base + path, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (b: Buffer) => chunks.push(b));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

function decode(a: Answer): Buffer {
  const enc = a.headers['content-encoding'];
  if (enc === 'gzip') return gunzipSync(a.body);
  if (enc === 'br') return brotliDecompressSync(a.body);
  expect(enc, 'Content-Encoding').to.equal(undefined);
  return a.body;
}

describe('precompressed static files: Accept-Encoding negotiation', () => {
  it('reads q-values, `*`, x-gzip and an absent header as RFC 9110 says', () => {
    expect(acceptQ(undefined, 'identity')).to.equal(1);
    expect(acceptQ(undefined, 'gzip')).to.equal(0);
    expect(acceptQ('gzip, deflate, br', 'br')).to.equal(1);
    expect(acceptQ('gzip;q=0.5, br;q=0', 'br')).to.equal(0);
    expect(acceptQ('gzip;q=0.5, br;q=0', 'gzip')).to.equal(0.5);
    expect(acceptQ('x-gzip', 'gzip')).to.equal(1);
    expect(acceptQ('*;q=0.2', 'br')).to.equal(0.2);
    expect(acceptQ('br, *;q=0', 'identity')).to.equal(0);
    expect(acceptQ('br', 'identity')).to.equal(1);
    expect(acceptQ('', 'gzip')).to.equal(0);
  });

  it('chooses the highest q, brotli over gzip on a tie, identity when nothing else is acceptable', async () => {
    const reps = await precompress(Buffer.from('{"a":"b"}'.repeat(2000)));
    expect(reps.map((r) => r.encoding)).to.deep.equal(['identity', 'gzip', 'br']);
    expect(new Set(reps.map((r) => r.etag)).size).to.equal(3);
    expect(choose(reps, undefined).encoding).to.equal('identity');
    expect(choose(reps, 'gzip, deflate, br').encoding).to.equal('br');
    expect(choose(reps, 'gzip').encoding).to.equal('gzip');
    expect(choose(reps, 'br;q=0.5, gzip').encoding).to.equal('gzip');
    expect(choose(reps, 'gzip;q=0, br;q=0').encoding).to.equal('identity');
    expect(choose(reps, 'identity;q=0').encoding).to.equal('identity');
    expect(choose(reps, '*').encoding).to.equal('br');
  });

  it('keeps no encoding that does not save 5 %', async () => {
    const reps = await precompress(Buffer.from('x'));
    expect(reps.map((r) => r.encoding)).to.deep.equal(['identity']);
    expect(choose(reps, 'gzip, br').encoding).to.equal('identity');
  });

  it('compresses once per process, however many requests arrive at once', async () => {
    let loads = 0;
    const app = express();
    app.get('/f', staticFile(() => { loads++; return 'hello '.repeat(1000); }, 'text/plain'));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const all = await Promise.all(['gzip', 'br', '', 'gzip', 'br'].map((ae) => fetchRaw(base, 'GET', '/f', ae ? { 'Accept-Encoding': ae } : {})));
      for (const a of all) expect(decode(a).toString()).to.equal('hello '.repeat(1000));
      expect(loads).to.equal(1);
    } finally {
      server.close();
    }
  });
});

const FILES: [string, () => Buffer][] = [
  ['/swagger/swagger-ui-bundle.js', () => readBinaryAsset('node_modules/swagger-ui-dist/swagger-ui-bundle.js')],
  ['/swagger/swagger-ui.css', () => readBinaryAsset('node_modules/swagger-ui-dist/swagger-ui.css')],
  // a Wasm chain's: without the /evm- paths (src/serve/openapi.ts servedDocument)
  ['/swagger/doc.json', () => Buffer.from(JSON.stringify(servedDocument(loadOpenApi(), 'no-evm', '')))],
  ['/explorer/explorer.js', () => Buffer.from(readTextAsset('src/explorer/assets/explorer.js'))],
  ['/explorer/explorer.css', () => Buffer.from(readTextAsset('src/explorer/assets/explorer.css'))],
  ['/', () => Buffer.from(readTextAsset('src/explorer/assets/index.html'))],
  ['/blocks/12', () => Buffer.from(readTextAsset('src/explorer/assets/index.html'))],
];

describe('precompressed static files: Swagger UI, OpenAPI document, explorer', function () {
  this.timeout(60_000);
  let snapshot: Snapshot;
  const servers: [string, RunningServer][] = [];
  before(async () => {
    snapshot = openSnapshot(DEMO('wasm'));
    const snapshots = { current: (): Snapshot => snapshot };
    const openapi = loadOpenApi();
    const options = appOptions({ corsOrigin: 'https://app.example', explorer: true });
    servers.push(['Express', await listen(createRequestListener({ snapshots, openapi, options }), '127.0.0.1', 0)]);
    servers.push(['response cache front', await listen(createRequestListener({ snapshots, openapi, options, responseCache: new ResponseCache(64 << 20, Infinity, false) }), '127.0.0.1', 0)]);
  });
  after(async () => {
    for (const [, s] of servers) await s.close();
    snapshot.close();
  });

  for (const [path, read] of FILES) {
    it(`${path}: identity, gzip, brotli; an ETag each; Vary; HEAD and 304 consistent`, async () => {
      const identity = read();
      // brotli is kept only where it saves ≥ 5 % over gzip (src/http/static.ts MIN_SAVING)
      const kept = new Set((await precompress(identity)).map((r) => r.encoding));
      for (const [via, s] of servers) {
        const etags = new Map<string, string>();
        for (const ae of [undefined, 'gzip', 'gzip, deflate, br', 'br;q=0, gzip;q=0', 'identity']) {
          const what = `${via} ${path} Accept-Encoding: ${ae}`;
          const headers: Record<string, string> = ae === undefined ? {} : { 'Accept-Encoding': ae };
          const get = await fetchRaw(s.url, 'GET', path, headers);
          expect(get.status, what).to.equal(200);
          expect(decode(get).equals(identity), `${what}: decoded body is the file`).to.equal(true);
          expect(String(get.headers.vary), what).to.match(/(?:^|, *)Accept-Encoding(?:,|$)/);
          expect(get.headers['content-length'], what).to.equal(String(get.body.length));
          const enc = (get.headers['content-encoding'] as string | undefined) ?? 'identity';
          if (ae === undefined || ae === 'identity' || ae.startsWith('br;q=0')) expect(enc, what).to.equal('identity');
          else if (identity.length > 2000) expect(enc, what).to.equal(ae === 'gzip' || !kept.has('br') ? 'gzip' : 'br');
          const etag = get.headers.etag as string;
          expect(etag, what).to.match(/^"[A-Za-z0-9_-]+"$/);
          if (etags.has(enc)) expect(etag, what).to.equal(etags.get(enc));
          etags.set(enc, etag);

          const head = await fetchRaw(s.url, 'HEAD', path, headers);
          expect(head.status, `HEAD ${what}`).to.equal(200);
          expect(head.body.length, `HEAD ${what}`).to.equal(0);
          for (const h of ['etag', 'content-length', 'content-encoding', 'content-type', 'vary', 'cache-control']) {
            expect(head.headers[h], `HEAD ${what}: ${h}`).to.deep.equal(get.headers[h]);
          }

          for (const method of ['GET', 'HEAD']) {
            const cond = await fetchRaw(s.url, method, path, { ...headers, 'If-None-Match': etag });
            expect(cond.status, `${method} ${what} If-None-Match`).to.equal(304);
            expect(cond.body.length).to.equal(0);
            expect(cond.headers.etag).to.equal(etag);
            expect(String(cond.headers.vary)).to.match(/Accept-Encoding/);
          }
        }
        expect(new Set(etags.values()).size, `${via} ${path}: one ETag per representation`).to.equal(etags.size);
        if (identity.length > 2000) {
          expect(etags.size, `${via} ${path}: representations`).to.be.greaterThan(1);
          // the identity ETag does not validate a gzip answer (RFC 9110: another representation)
          const cross = await fetchRaw(s.url, 'GET', path, { 'Accept-Encoding': 'gzip', 'If-None-Match': etags.get('identity') as string });
          expect(cross.status, `${via} ${path}`).to.equal(200);
        }
      }
    });
  }

  it('adds Accept-Encoding to the Vary: Origin of a listed origin', async () => {
    for (const [via, s] of servers) {
      const a = await fetchRaw(s.url, 'GET', '/swagger/swagger-ui.css', { Origin: 'https://app.example', 'Accept-Encoding': 'gzip' });
      expect(a.headers['access-control-allow-origin'], via).to.equal('https://app.example');
      expect(String(a.headers.vary).split(/, */).sort(), via).to.deep.equal(['Accept-Encoding', 'Origin']);
    }
  });

  it('answers HEAD of an API URL with the ETag its GET has, miss or hit', async () => {
    for (const [via, s] of servers) {
      for (let i = 0; i < 3; i++) {
        const path = `/indexer/block/v1/blocks?pagination.limit=${4 + i}`;
        const head1 = await fetchRaw(s.url, 'HEAD', path);
        const head2 = await fetchRaw(s.url, 'HEAD', path);
        const get = await fetchRaw(s.url, 'GET', path);
        expect(get.status).to.equal(200);
        expect(head1.headers.etag, `${via} ${path}`).to.match(/^"/).and.equal(get.headers.etag);
        expect(head2.headers.etag, `${via} ${path}`).to.equal(get.headers.etag);
        expect(head1.headers['content-length']).to.equal(String(get.body.length));
        expect(JSON.parse(get.body.toString())).to.have.property('blocks');
      }
    }
  });
});
