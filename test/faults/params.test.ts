import { expect } from 'chai';
import fc from 'fast-check';
import { Agent, request } from 'node:http';
import { DEMO, ServeProcess, startServe } from '../helpers/serve';

/**
 * Property: whatever value a parameter gets, the server answers — never a 5xx, never a hang.
 * Each parameter gets RUNS generated values (strings of every kind, numbers of every size,
 * the classic troublemakers), sent to a real server over the EVM demo (every route exists).
 */
const RUNS = Number(process.env.FAULT_PARAM_RUNS ?? 1000);
const HANG_MS = 5_000;

/** route template → the parameter written as {x} there, or as ?name=x */
const CASES: [string, string][] = [
  ['/indexer/block/v1/blocks/{x}', 'height'],
  ['/indexer/block/v1/blocks?pagination.limit={x}', 'pagination.limit'],
  ['/indexer/block/v1/blocks?pagination.offset={x}', 'pagination.offset'],
  ['/indexer/block/v1/blocks?pagination.key={x}', 'pagination.key'],
  ['/indexer/block/v1/blocks?pagination.reverse={x}', 'pagination.reverse'],
  ['/indexer/block/v1/blocks?pagination.count_total={x}', 'pagination.count_total'],
  ['/indexer/tx/v1/txs/{x}', 'tx_hash'],
  ['/indexer/tx/v1/txs/by_account/{x}', 'account'],
  ['/indexer/tx/v1/txs/by_height/{x}', 'height'],
  ['/indexer/tx/v1/txs?msgs={x}', 'msgs'],
  ['/indexer/tx/v1/txs/by_account/init1f5hlg0rtejh5qdvn8xcq9dafxkzg02uakq0uq4?is_signer={x}', 'is_signer'],
  ['/indexer/tx/v1/evm-txs/{x}', 'tx_hash'],
  ['/indexer/tx/v1/evm-internal-txs/by_account/{x}', 'account'],
  ['/indexer/nft/v1/collections/{x}', 'collection_addr'],
  ['/indexer/nft/v1/collections/by_name/{x}', 'name'],
  ['/indexer/nft/v1/txs/0x62fc8788fd4809c9c6ba207d7d7012a0463ab044/{x}', 'token_id'],
  ['/indexer/richlist/v1/{x}', 'denom'],
];

const value = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary-ascii', maxLength: 200 }),
  fc.string({ maxLength: 4000 }),
  fc.integer().map(String),
  fc.bigInt().map(String),
  fc.double().map(String),
  fc.nat().map((n) => `0x${n.toString(16)}`),
  fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), minLength: 1, maxLength: 130 }),
  fc.constantFrom('', ' ', '-1', '0', '00', '1e400', '9'.repeat(40), 'null', 'undefined', 'true', 'NaN', '%', '%00', '..', '../..', '/', '\\', "'", '"', ';', '*', '0x', 'init1', 'evm/', 'A'.repeat(64), 'a,b,,c'),
);

function send(agent: Agent, url: string): Promise<number> {
  return new Promise((done, fail) => {
    const req = request(url, { agent }, (res) => {
      res.resume();
      res.on('end', () => done(res.statusCode ?? 0));
    });
    req.setTimeout(HANG_MS, () => { req.destroy(new Error(`no answer within ${HANG_MS} ms: ${url.slice(0, 200)}`)); });
    req.on('error', fail);
    req.end();
  });
}

describe('faults: generated values for every parameter (fast-check)', function () {
  this.timeout(600_000);
  let s: ServeProcess;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  before(async () => { s = await startServe(['--db', DEMO('evm'), '--log-level', 'warn', '--cache-entries', '0']); });
  after(async () => { agent.destroy(); await s.stop(); });

  for (const [template, name] of CASES) {
    it(`${template.replace('{x}', `<${name}>`)}: ${RUNS} values, 0 5xx, 0 hangs`, async () => {
      const statuses = new Map<number, number>();
      await fc.assert(fc.asyncProperty(value, async (v) => {
        const status = await send(agent, s.url + template.replace('{x}', encodeURIComponent(v)));
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        return status < 500;
      }), { numRuns: RUNS, seed: Number(process.env.FAULT_SEED ?? 16) });
      expect([...statuses.values()].reduce((a, b) => a + b, 0)).to.equal(RUNS);
    });
  }
});
