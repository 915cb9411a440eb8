import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { crc32, gunzipSync, gzipSync } from 'node:zlib';
import { targetsOf } from '../../bench/targets';
import { acceptsGzip, addVary, gzipEtag, withVary } from '../../src/http/encoding';
import { createRequestListener } from '../../src/serve/routing';
import { loadOpenApi } from '../../src/serve/openapi';
import { RunningServer, listen } from '../../src/serve/server';
import { openSnapshot, Snapshot } from '../../src/snapshot/open';
import { crc32Combine, DeflateBody, isPackedRow, lengthShift, packRow, readPackedRow, unpackRow } from '../../src/wire/packed';
import { DEMO } from '../helpers/serve';
import { appOptions } from '../helpers/app-options';

/**
 * Content coding (docs/response-cache.md#compression) and packed rows
 * (docs/api-contract.md#stored-wire-format): gzip assembled from stored rows, identity inflated,
 * one ETag per representation, HEAD like GET.
 */

describe('packed rows (src/wire/packed.ts)', () => {
  it('combines CRC-32s as zlib computes the CRC of the concatenation', () => {
    for (let i = 0; i < 400; i++) {
      const a = randomBytes(1 + (i * 7919) % 300);
      const b = randomBytes(1 + (i * 104729) % 140_000); // lengths over 2^16 and 2^8 multiples
      expect(crc32Combine(crc32(a), crc32(b), lengthShift(b.length)), `${a.length} + ${b.length}`).to.equal(crc32(Buffer.concat([a, b])));
    }
  });

  it('packs a row that inflates back to the JSON, and tells packed rows from text', () => {
    for (const json of ['{}', '{"a":"é✓ \\u0000"}', JSON.stringify({ big: 'x'.repeat(200_000), n: [1, 2, 3] })]) {
      const row = packRow(json);
      expect(isPackedRow(row)).to.equal(true);
      expect(unpackRow(row).toString()).to.equal(json);
      expect(readPackedRow(row)).to.equal(json);
      expect(isPackedRow(Buffer.from(json))).to.equal(false);
      expect(readPackedRow(json)).to.equal(json);
      expect(readPackedRow(Buffer.from(json))).to.equal(json);
    }
  });

  it('assembles rows and glue into a gzip member and an identity body of the same JSON', () => {
    const rows = Array.from({ length: 60 }, (_, i) => JSON.stringify({ i, s: 'ab✓'.repeat(i * 40), r: randomBytes(i * 3).toString('base64') }));
    const glue = 'g'.repeat(70_000); // a stored block holds at most 65,535 bytes
    const body = new DeflateBody().text('{"txs":[');
    rows.forEach((r, i) => { if (i > 0) body.text(','); body.row(packRow(r)); });
    body.text(`],"pad":"${glue}"}`);
    const want = `{"txs":[${rows.join(',')}],"pad":"${glue}"}`;
    expect(gunzipSync(body.gzip()).toString()).to.equal(want);
    expect(body.identity().toString()).to.equal(want);
    expect(body.length).to.equal(Buffer.byteLength(want));
    expect(new DeflateBody().text('{"x":1}').identity().toString()).to.equal('{"x":1}');
  });
});

describe('Accept-Encoding and Vary (src/http/encoding.ts)', () => {
  it('accepts gzip only where the header does', () => {
    const cases: [string | undefined, boolean][] = [
      [undefined, false], ['', false], ['identity', false], ['br', false], ['deflate, br', false],
      ['gzip', true], ['GZIP', true], ['gzip, deflate, br', true], ['br;q=1.0, gzip;q=0.8, *;q=0.1', true], ['x-gzip', true],
      ['*', true], ['gzip;q=0', false], ['gzip; q=0.000', false], ['*;q=0', false], ['gzip;q=0, *', false], ['br, *;q=0.5', true],
      ['gzip;q=0.001', true],
    ];
    for (const [h, want] of cases) expect(acceptsGzip(h), String(h)).to.equal(want);
  });

  it('names the gzip representation apart and merges Vary tokens once', () => {
    expect(gzipEtag('"abc-def"')).to.equal('"abc-def-gz"');
    expect(addVary(undefined, 'Origin')).to.equal('Origin');
    expect(addVary('Accept-Encoding', 'Origin')).to.equal('Accept-Encoding, Origin');
    expect(addVary('Accept-Encoding, origin', 'Origin')).to.equal('Accept-Encoding, origin');
    expect(withVary(['Access-Control-Allow-Origin', '*'])).to.deep.equal(['Vary', 'Accept-Encoding', 'Access-Control-Allow-Origin', '*']);
    expect(withVary(['Access-Control-Allow-Origin', 'https://a', 'Vary', 'Origin'])).to.deep.equal(['Vary', 'Accept-Encoding, Origin', 'Access-Control-Allow-Origin', 'https://a']);
  });
});

interface Raw { status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }

function get(base: string, path: string, headers: Record<string, string>, method = 'GET'): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(base + path, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

for (const vm of ['wasm', 'evm', 'move'] as const) {
  describe(`gzip and identity answers (${vm} demo)`, function () {
    this.timeout(60_000);
    let snapshot: Snapshot;
    let server: RunningServer;
    before(async () => {
      snapshot = openSnapshot(DEMO(vm));
      server = await listen(createRequestListener({ snapshots: { current: () => snapshot }, openapi: loadOpenApi(), options: appOptions({ corsOrigin: '*' }) }), '127.0.0.1', 0);
    });
    after(async () => {
      await server.close();
      snapshot.close();
    });

    it('stores every JSON row packed, and no holder JSON (rendered from its columns)', () => {
      for (const t of ['blocks', 'txs', 'collections', 'nfts', ...(vm === 'evm' ? ['evm_txs', 'evm_internal_txs'] : [])]) {
        const rows = snapshot.db.prepare(`SELECT json FROM ${t} LIMIT 50`).pluck().all() as Buffer[];
        expect(rows.length, t).to.be.greaterThan(0);
        for (const r of rows) expect(Buffer.isBuffer(r) && isPackedRow(r), t).to.equal(true);
      }
      const holders = snapshot.db.prepare('SELECT json FROM richlist').pluck().all() as string[];
      if (vm === 'evm') expect(holders.length).to.be.greaterThan(0); // the Move and Wasm demos have no rich list
      expect(holders.every((j) => j === '')).to.equal(true);
    });

    for (const family of targetsOf(DEMO(vm)).families.filter((f) => f.path !== '/status')) {
      it(`${family.path}: gzip is the identity JSON compressed, with its own ETag; HEAD and 304 per representation`, async () => {
        const id = await get(server.url, family.path, {});
        const gz = await get(server.url, family.path, { 'Accept-Encoding': 'gzip, deflate, br' });
        expect(id.status).to.equal(200);
        expect(gz.status).to.equal(200);
        expect(id.headers['content-encoding']).to.equal(undefined);
        expect(gz.headers['content-encoding']).to.equal('gzip');
        expect(gunzipSync(gz.body).equals(id.body), 'gunzip(gzip) = identity').to.equal(true);
        expect(Number(gz.headers['content-length'])).to.equal(gz.body.length);
        expect(id.headers.vary).to.equal('Accept-Encoding');
        expect(gz.headers.vary).to.equal('Accept-Encoding');
        const idTag = id.headers.etag as string;
        const gzTag = gz.headers.etag as string;
        expect(gzTag).to.equal(gzipEtag(idTag));
        // HEAD: the GET's headers, no body
        for (const [enc, ref] of [[{}, id], [{ 'Accept-Encoding': 'gzip' }, gz]] as const) {
          const head = await get(server.url, family.path, enc, 'HEAD');
          expect(head.status).to.equal(200);
          expect(head.body.length).to.equal(0);
          for (const h of ['etag', 'content-length', 'content-encoding', 'vary', 'content-type']) expect(head.headers[h], `HEAD ${h}`).to.equal(ref.headers[h]);
        }
        // a validator matches only its own representation
        expect((await get(server.url, family.path, { 'Accept-Encoding': 'gzip', 'If-None-Match': gzTag })).status).to.equal(304);
        expect((await get(server.url, family.path, { 'If-None-Match': idTag })).status).to.equal(304);
        expect((await get(server.url, family.path, { 'If-None-Match': gzTag })).status).to.equal(200);
        expect((await get(server.url, family.path, { 'Accept-Encoding': 'gzip', 'If-None-Match': idTag })).status).to.equal(200);
        // gzip refused by q=0: identity
        const refused = await get(server.url, family.path, { 'Accept-Encoding': 'gzip;q=0, br' });
        expect(refused.headers['content-encoding']).to.equal(undefined);
        expect(refused.body.equals(id.body)).to.equal(true);
      });
    }

    it('a 100-tx page goes gzip at under a third of its identity bytes; /status (not made of rows) stays identity', async () => {
      const path = '/indexer/tx/v1/txs?pagination.limit=100';
      const id = await get(server.url, path, {});
      const gz = await get(server.url, path, { 'Accept-Encoding': 'gzip' });
      expect(gz.body.length * 3, `${gz.body.length} vs ${id.body.length}`).to.be.lessThan(id.body.length);
      const status = await get(server.url, '/status', { 'Accept-Encoding': 'gzip' });
      expect(status.headers['content-encoding']).to.equal(undefined);
      expect(JSON.parse(status.body.toString())).to.have.property('chain_id');
    });

    it('a list with no rows stays identity (gzip would only add bytes); one row is enough for gzip', async () => {
      for (const path of ['/indexer/tx/v1/txs/by_height/999999999', '/indexer/tx/v1/txs?msgs=no.such.Msg', '/indexer/nft/v1/collections/by_name/no-such-name-at-all']) {
        const r = await get(server.url, path, { 'Accept-Encoding': 'gzip' });
        expect(r.status, path).to.equal(200);
        expect(r.headers['content-encoding'], path).to.equal(undefined);
        const body = r.body.toString();
        expect(body, path).to.match(/^\{"\w+":\[\],"pagination":\{"previous_key":null,"next_key":null,"total":"0"\}\}$/);
        expect(gzipSync(body).length, 'gzip of the empty list is larger').to.be.greaterThan(body.length);
      }
      const one = await get(server.url, '/indexer/tx/v1/txs?pagination.limit=1', { 'Accept-Encoding': 'gzip' });
      expect(one.headers['content-encoding']).to.equal('gzip');
    });
  });
}
