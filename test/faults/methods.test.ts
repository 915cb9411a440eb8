import { expect } from 'chai';
import { request } from 'node:http';
import { connect } from 'node:net';
import { DEMO, ServeProcess, startServe } from '../helpers/serve';

/** Every route (the OpenAPI paths with sample values, the ops and Swagger ones). */
const HASH = 'A'.repeat(64);
const ADDR = '0x' + '1'.repeat(40);
const ROUTES = [
  '/status', '/health', '/ready', '/metrics', '/swagger', '/swagger/doc.json',
  '/indexer/block/v1/avg_blocktime', '/indexer/block/v1/blocks', '/indexer/block/v1/blocks/5',
  '/indexer/tx/v1/txs', `/indexer/tx/v1/txs/by_account/${ADDR}`, '/indexer/tx/v1/txs/by_height/5', `/indexer/tx/v1/txs/${HASH}`,
  '/indexer/tx/v1/evm-txs', `/indexer/tx/v1/evm-txs/by_account/${ADDR}`, '/indexer/tx/v1/evm-txs/by_height/5', `/indexer/tx/v1/evm-txs/0x${'a'.repeat(64)}`,
  '/indexer/tx/v1/evm-internal-txs', '/indexer/tx/v1/evm-internal-txs/by_height/5', `/indexer/tx/v1/evm-internal-txs/by_account/${ADDR}`,
  `/indexer/tx/v1/evm-internal-txs/0x${'a'.repeat(64)}`,
  '/indexer/nft/v1/collections', `/indexer/nft/v1/collections/by_account/${ADDR}`, '/indexer/nft/v1/collections/by_name/x',
  `/indexer/nft/v1/collections/${ADDR}`, `/indexer/nft/v1/tokens/by_account/${ADDR}`, `/indexer/nft/v1/tokens/by_collection/${ADDR}`,
  `/indexer/nft/v1/txs/${ADDR}/1`, '/indexer/richlist/v1/uinit',
];
const METHODS = ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'];

function send(url: string, method: string): Promise<{ status: number; type: string; allow: string; body: string }> {
  return new Promise((done, fail) => {
    const req = request(url, { method, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (s: string) => { body += s; });
      res.on('end', () => done({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), allow: String(res.headers.allow), body }));
    });
    req.on('error', fail);
    req.end();
  });
}

describe('faults: every method on every route', function () {
  this.timeout(120_000);
  let s: ServeProcess;
  before(async () => { s = await startServe(['--db', DEMO('evm'), '--log-level', 'warn']); });
  after(async () => { await s.stop(); });

  for (const path of ROUTES) {
    it(`${path}: ${METHODS.join(', ')} answer 405 with the JSON error, before and after a GET`, async () => {
      const seen: string[] = [];
      for (const round of ['before', 'after']) {
        if (round === 'after') expect((await send(s.url + path, 'GET')).status).to.be.below(500);
        for (const method of METHODS) {
          const r = await send(s.url + path, method);
          seen.push(`${round} ${method} ${r.status} ${r.type}`);
          expect(r.status, `${round} GET: ${method}`).to.equal(405);
          expect(r.type).to.match(/^application\/json/);
          expect(r.allow).to.equal('GET, HEAD');
          expect(JSON.parse(r.body)).to.deep.equal({ code: 12, message: `method not allowed: ${method} ${path}`, details: [] });
        }
      }
    });
  }
});

describe('faults: unusual request lines and huge values', function () {
  this.timeout(60_000);
  let s: ServeProcess;
  before(async () => { s = await startServe(['--db', DEMO('wasm'), '--log-level', 'warn']); });
  after(async () => { await s.stop(); });

  /** One raw request on a fresh connection; the whole answer. */
  function raw(text: string): Promise<string> {
    const u = new URL(s.url);
    return new Promise((done, fail) => {
      const sock = connect(Number(u.port), u.hostname, () => sock.end(text));
      let out = '';
      sock.setEncoding('utf8').on('data', (d: string) => { out += d; });
      sock.on('error', fail);
      sock.on('close', () => done(out));
    });
  }

  it('answers an absolute-form request line (GET http://host/status HTTP/1.1) as its path', async () => {
    const origin = await raw('GET /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    for (const target of [`${s.url}/status`, 'http://example.com/status', `${s.url}/indexer/block/v1/blocks?pagination.limit=1`]) {
      const text = await raw(`GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expect(text.split('\r\n')[0], target).to.equal('HTTP/1.1 200 OK');
      if (target.endsWith('/status')) expect(text.slice(text.indexOf('\r\n\r\n'))).to.equal(origin.slice(origin.indexOf('\r\n\r\n')));
    }
  });

  it('answers a 7 KB bad value (the URL limit allows no more) with a short 400 that names it', async () => {
    const r = await send(`${s.url}/indexer/block/v1/blocks?pagination.limit=${'9'.repeat(7000)}x`, 'GET');
    expect(r.status).to.equal(400);
    expect(r.body.length).to.be.below(600);
    expect(JSON.parse(r.body).message).to.match(/^invalid value for pagination\.limit: 9{100}… \(/);
  });
});
