/**
 * A replica of several chains (issue #31) while `follow` grows one of them: the followed chain's
 * batches are seen on its own path (its /ready, /status, its answers equal a fresh server's over
 * the same file), and they never empty another chain's cached answers — the other chain's polls
 * stay response-cache hits and its conditional GETs 304s across every batch. A real `serve`
 * (`--workers 1`) and a real `follow` process.
 */
import { expect } from 'chai';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequestListener } from '../../src/serve/routing';
import { loadOpenApi } from '../../src/serve/openapi';
import { listen } from '../../src/serve/server';
import { openSnapshot } from '../../src/snapshot/open';
import { appOptions } from '../helpers/app-options';
import { DEMO, get, metric, startServe, type ServeProcess } from '../helpers/serve';
import { demoCuts, eventually, growingSource, startFollow, type FollowProcess, type GrowingSource } from '../helpers/follow';

const WASM = 'miniwasm-demo-1';
const MOVE = 'minimove-demo-1';

describe('follow beside a replica of several chains', function () {
  this.timeout(300_000);
  let dir: string;
  let src: GrowingSource;
  let serve: ServeProcess | undefined;
  let follow: FollowProcess | undefined;
  let cuts: Map<number, string>;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'indexer-api-follow-chains-'));
    cuts = (await demoCuts()).at;
    src = await growingSource(cuts.get(150) as string);
  });
  after(async () => {
    await follow?.stop('SIGTERM');
    await serve?.stop();
    await src?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('batches of one chain are served on its path and leave the other chain\'s cached answers and ETags valid', async () => {
    const db = join(dir, 'wasm.sqlite');
    copyFileSync(cuts.get(150) as string, db);
    serve = await startServe(['--db', db, '--db', DEMO('move'), '--workers', '1', '--commit-poll-ms', '20', '--log-level', 'warn']);
    const other = [
      `${serve.url}/${MOVE}/indexer/tx/v1/txs?pagination.limit=5`,
      `${serve.url}/${MOVE}/status`,
      `${serve.url}/${MOVE}/indexer/block/v1/blocks?pagination.limit=3`,
    ];
    const etags = new Map<string, string>();
    for (const u of other) for (let i = 0; i < 3; i++) etags.set(u, (await get(u)).headers.etag as string);
    const metrics = async (): Promise<string> => (await get(`${serve?.url}/metrics`)).body;
    const flushesBefore = metric(await metrics(), 'indexer_api_response_cache_flushes_total') ?? 0;
    follow = startFollow(['--db', db, '--from-api', src.url, '--interval', '100ms', '--batch-blocks', '20']);
    for (const h of [250, 320]) {
      src.show(cuts.get(h) as string);
      await eventually(`${WASM} at ${h}`, 120_000, async () => {
        const r = await get(`${serve?.url}/${WASM}/ready`);
        return r.status === 200 && (JSON.parse(r.body) as { height: number }).height === h ? true : undefined;
      });
      // the other chain: every poll a hit, every conditional GET a 304 with the same ETag
      const hitsBefore = metric(await metrics(), 'indexer_api_response_cache_hits_total') ?? 0;
      for (const u of other) {
        const r = await get(u, { 'if-none-match': etags.get(u) as string });
        expect(r.status, `${u} after ${WASM} reached ${h}`).to.equal(304);
        expect((await get(u)).headers.etag, u).to.equal(etags.get(u));
      }
      expect((metric(await metrics(), 'indexer_api_response_cache_hits_total') ?? 0) - hitsBefore, `hits after ${WASM} reached ${h}`).to.equal(2 * other.length);
      // the followed chain answers what a fresh server over its file answers
      const snapshot = openSnapshot(db);
      const fresh = await listen(createRequestListener({ snapshots: { current: () => snapshot }, openapi: loadOpenApi(), options: appOptions({ corsOrigin: '', logError: () => undefined }) }), '127.0.0.1', 0);
      try {
        for (const p of ['/status', '/indexer/tx/v1/txs?pagination.limit=5', '/indexer/block/v1/blocks?pagination.limit=3']) {
          const [a, b] = await Promise.all([get(`${serve.url}/${WASM}${p}`), get(fresh.url + p)]);
          expect({ status: a.status, body: a.body, etag: a.headers.etag }, p).to.deep.equal({ status: b.status, body: b.body, etag: b.headers.etag });
        }
      } finally {
        await fresh.close();
        snapshot.close();
      }
    }
    // the followed chain's batches flushed nothing (its records named what changed; the other part untouched)
    expect(metric(await metrics(), 'indexer_api_response_cache_flushes_total') ?? 0).to.equal(flushesBefore);
    expect(metric(await metrics(), 'indexer_api_snapshot_height', `chain_id="${WASM}"`)).to.equal(320);
  });
});
