import { expect } from 'chai';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FollowState } from '../../src/follow/follower';
import { createFollowMetrics, followReadiness, listenMetrics } from '../../src/follow/metrics';

/** The sample lines of `name` (without # HELP / # TYPE). */
function samples(text: string, name: string): string[] {
  return text.split('\n').filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
}

describe('follow --metrics-port (src/follow/metrics.ts, prom-client)', () => {
  let server: Server | undefined;
  afterEach(() => { server?.close(); server = undefined; });

  it('serves the follower state read at each scrape, with HELP / TYPE and the Node process metrics', async () => {
    const now = 1_700_000_100_000;
    const state: FollowState = { sourceHeight: 120, height: 100, newestBlockMs: now - 7_500, behindSinceMs: now - 3_000, batches: 4, failures: 2, failing: 0 };
    server = await listenMetrics(createFollowMetrics(state, () => now), 0, '127.0.0.1');
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const r = await fetch(`${url}/metrics`);
    expect(r.status).to.equal(200);
    expect(r.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
    expect(r.headers.get('cache-control')).to.equal('no-store');
    const text = await r.text();
    const want: [string, string, string][] = [
      ['indexer_api_follow_source_height', 'gauge', '120'],
      ['indexer_api_follow_height', 'gauge', '100'],
      ['indexer_api_follow_lag_blocks', 'gauge', '20'],
      ['indexer_api_follow_lag_seconds', 'gauge', '3'],
      ['indexer_api_follow_newest_block_age_seconds', 'gauge', '7.5'],
      ['indexer_api_follow_batches_total', 'counter', '4'],
      ['indexer_api_follow_failures_total', 'counter', '2'],
    ];
    for (const [name, type, value] of want) {
      expect(text, name).to.contain(`# TYPE ${name} ${type}\n`);
      expect(samples(text, name), name).to.deep.equal([`${name} ${value}`]);
    }
    expect(text).to.match(/^process_resident_memory_bytes \d+/m);

    // the next scrape reads the state again: caught up, one more batch
    Object.assign(state, { sourceHeight: 130, height: 130, behindSinceMs: undefined, batches: 5 });
    const again = await (await fetch(`${url}/metrics`)).text();
    expect(samples(again, 'indexer_api_follow_lag_blocks')).to.deep.equal(['indexer_api_follow_lag_blocks 0']);
    expect(samples(again, 'indexer_api_follow_lag_seconds')).to.deep.equal(['indexer_api_follow_lag_seconds 0']);
    expect(samples(again, 'indexer_api_follow_batches_total')).to.deep.equal(['indexer_api_follow_batches_total 5']);
  });

  it('answers 404 off /metrics and names the port it cannot listen on', async () => {
    const state: FollowState = { sourceHeight: 0, height: 0, newestBlockMs: 0, batches: 0, failures: 0, failing: 0 };
    server = await listenMetrics(createFollowMetrics(state), 0, '127.0.0.1');
    const port = (server.address() as AddressInfo).port;
    expect((await fetch(`http://127.0.0.1:${port}/`)).status).to.equal(404);
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(samples(text, 'indexer_api_follow_newest_block_age_seconds')).to.deep.equal(['indexer_api_follow_newest_block_age_seconds 0']);
    let err: Error | undefined;
    await listenMetrics(createFollowMetrics(state), port, '127.0.0.1').catch((e: Error) => { err = e; });
    expect(err?.message).to.match(new RegExp(`^--metrics-port ${port}: .*EADDRINUSE`));
  });

  it('says how long the follower has not advanced: a gauge, and /ready 503 past --max-stall with the last failure', async () => {
    let now = 1_700_000_000_000;
    const state: FollowState = { sourceHeight: 50, height: 40, newestBlockMs: now, batches: 3, failures: 0, failing: 0, lastSuccessMs: now };
    server = await listenMetrics(createFollowMetrics(state, () => now), 0, '127.0.0.1', followReadiness(state, 60_000, () => now));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const scrape = async (): Promise<string> => (await fetch(`${url}/metrics`)).text();
    expect(samples(await scrape(), 'indexer_api_follow_stalled_seconds')).to.deep.equal(['indexer_api_follow_stalled_seconds 0']);
    let r = await fetch(`${url}/ready`);
    expect(r.status).to.equal(200);
    expect(await r.json()).to.deep.equal({ status: 'following', height: 40, source_height: 50, stalled_seconds: 0, consecutive_failures: 0 });
    expect((await fetch(`${url}/health`)).status).to.equal(200);

    // the source fails: 45 s without advancing is under --max-stall, 75 s is over
    Object.assign(state, { failing: 4, failures: 4, lastError: 'GET http://src/status: connection refused (nothing listens at that address and port)' });
    now += 45_000;
    expect(samples(await scrape(), 'indexer_api_follow_stalled_seconds')).to.deep.equal(['indexer_api_follow_stalled_seconds 45']);
    expect(samples(await scrape(), 'indexer_api_follow_consecutive_failures')).to.deep.equal(['indexer_api_follow_consecutive_failures 4']);
    r = await fetch(`${url}/ready`);
    expect(r.status).to.equal(200);
    expect(await r.json()).to.include({ stalled_seconds: 45, last_failure: state.lastError });
    now += 30_000;
    r = await fetch(`${url}/ready`);
    expect(r.status).to.equal(503);
    const body = (await r.json()) as Record<string, unknown>;
    expect(body).to.include({ code: 14, stalled_seconds: 75, height: 40 });
    expect(String(body.message)).to.equal(`follow has not advanced for 75 s (over --max-stall 60 s): 4 failures in a row, the last: ${state.lastError}`);

    // a poll succeeds again
    Object.assign(state, { failing: 0, lastSuccessMs: now, lastError: undefined });
    expect((await fetch(`${url}/ready`)).status).to.equal(200);
    expect(samples(await scrape(), 'indexer_api_follow_stalled_seconds')).to.deep.equal(['indexer_api_follow_stalled_seconds 0']);
  });
});
