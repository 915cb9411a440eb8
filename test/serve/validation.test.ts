import { expect } from 'chai';
import { createApp } from '../../src/app';
import { loadOpenApi } from '../../src/openapi';
import { RunningServer, startServer } from '../../src/server';
import { openSnapshot, Snapshot } from '../../src/snapshot/open';
import { DEMO, get } from './helpers';

/**
 * createApp remembers which URLs passed request validation (the route tests run with response
 * validation on, which turns that off): the second time a URL comes, it must be answered
 * exactly as the first time, and as an app that validates every request answers it.
 */
const URLS = [
  '/status',
  '/indexer/block/v1/blocks?pagination.limit=2',
  '/indexer/block/v1/blocks?pagination.limit=2&pagination.reverse=false&pagination.count_total=false',
  '/indexer/block/v1/blocks/7',
  '/indexer/block/v1/blocks/abc',
  '/indexer/block/v1/blocks?pagination.limit=0',
  '/indexer/block/v1/blocks?pagination.limit=abc',
  '/indexer/block/v1/blocks?pagination.reverse=maybe',
  '/indexer/tx/v1/txs?pagination.limit=3',
  '/indexer/tx/v1/txs?msgs=cosmos.bank.v1beta1.MsgSend&msgs=/initia.move.v1.MsgExecute&pagination.limit=3',
  '/indexer/tx/v1/txs?msgs=cosmos.bank.v1beta1.MsgSend,initia.move.v1.MsgExecute&pagination.limit=3',
  '/indexer/tx/v1/txs/by_height/12?pagination.limit=2',
  '/indexer/tx/v1/txs/nothex',
  '/indexer/nft/v1/collections?pagination.limit=2',
  '/indexer/nft/v1/tokens/by_collection/0x1?order_by=height',
  '/indexer/nft/v1/tokens/by_collection/0x1?order_by=sideways',
  '/indexer/richlist/v1/umin?pagination.offset=2&pagination.limit=2',
  '/no/such/route',
];

describe('createApp: the OpenAPI validator, remembered per URL and not compiled twice', function () {
  this.timeout(60_000);
  let snapshot: Snapshot;
  let remembering: RunningServer;
  let validating: RunningServer;

  before(async () => {
    snapshot = openSnapshot(DEMO('move'));
    const app = (validationCacheEntries: number) => createApp({
      snapshots: { current: () => snapshot }, openapi: loadOpenApi(), options: { corsOrigin: '*', validationCacheEntries },
    });
    remembering = await startServer(app(4), '127.0.0.1', 0);
    validating = await startServer(app(0), '127.0.0.1', 0);
  });
  after(async () => {
    await remembering.close();
    await validating.close();
    snapshot.close();
  });

  it('answers every URL the second (and third) time exactly as an app that validates every request', async () => {
    // 4 entries for 18 URLs: hits, misses and evictions all happen
    for (let round = 0; round < 3; round++) {
      for (const url of URLS) {
        const a = await get(remembering.url + url);
        const b = await get(validating.url + url);
        expect(a.status, `${url} (round ${round})`).to.equal(b.status);
        expect(a.body, `${url} (round ${round})`).to.equal(b.body);
      }
    }
  });

  it('leaves the OpenAPI meta-schema uncompiled at start-up, yet can still check the document with it', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const mod = require('express-openapi-validator/dist/framework/openapi.schema.validator') as {
      OpenAPISchemaValidator: (new (o: { version: string; validateApiSpec: boolean }) => { validate(doc: unknown): { errors: unknown[] } }) & { deferred?: boolean };
    };
    expect(mod.OpenAPISchemaValidator.deferred).to.equal(true);
    const doc = loadOpenApi();
    expect(new mod.OpenAPISchemaValidator({ version: String(doc.openapi), validateApiSpec: true }).validate(doc).errors).to.deep.equal([]);
  });

  it('answers a URL repeated back to back identically (the entry just stored is used)', async () => {
    for (const url of URLS) {
      const first = await get(remembering.url + url);
      const second = await get(remembering.url + url);
      expect(second.status, url).to.equal(first.status);
      expect(second.body, url).to.equal(first.body);
    }
  });
});
