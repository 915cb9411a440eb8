/**
 * One error shape for every error (API-CONTRACT §4): the gRPC-gateway body
 * {"code": <gRPC code>, "message": "...", "details": []}, as application/json.
 */
import { expect } from 'chai';
import { makeTestApp } from '../helpers/app';

describe('error responses', () => {
  it('answers 400, 404, 405 and unknown routes with {code, message, details: []} as application/json', async () => {
    const t = await makeTestApp('move');
    const cases: { method: 'get' | 'post' | 'put' | 'delete'; path: string; status: number; code: number }[] = [
      { method: 'get', path: '/indexer/block/v1/blocks/abc', status: 400, code: 3 },
      { method: 'get', path: '/indexer/tx/v1/txs?pagination.limit=5000', status: 400, code: 3 },
      { method: 'get', path: '/indexer/nft/v1/collections/0xzz', status: 400, code: 3 },
      { method: 'get', path: '/indexer/block/v1/blocks/99999', status: 404, code: 5 },
      { method: 'get', path: `/indexer/tx/v1/txs/${'F'.repeat(64)}`, status: 404, code: 5 },
      { method: 'get', path: `/indexer/nft/v1/collections/0x${'1'.repeat(64)}`, status: 404, code: 5 },
      { method: 'get', path: '/indexer/no/such/route', status: 404, code: 5 },
      { method: 'post', path: '/status', status: 405, code: 12 },
      { method: 'put', path: '/indexer/block/v1/blocks/1', status: 405, code: 12 },
      { method: 'delete', path: '/indexer/tx/v1/txs', status: 405, code: 12 },
    ];
    for (const c of cases) {
      const what = `${c.method.toUpperCase()} ${c.path}`;
      const res = await t.api[c.method](c.path);
      expect(res.status, what).to.equal(c.status);
      expect(res.headers['content-type'], what).to.match(/^application\/json/);
      expect(Object.keys(res.body), what).to.deep.equal(['code', 'message', 'details']);
      expect(res.body.code, what).to.equal(c.code);
      expect(res.body.message, what).to.be.a('string').and.not.equal('');
      expect(res.body.details, what).to.deep.equal([]);
    }
    const named = await t.api.get('/indexer/block/v1/blocks/abc');
    expect(named.body.message).to.contain('height').and.contain('abc');
  });
});
