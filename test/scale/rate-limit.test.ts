import { expect } from 'chai';
import { publishSnapshot } from '../../src/publish/publish';
import type { Outcome, Plan } from '../support/burst-client';
import { Host, netnsUnavailable } from '../support/netns';
import { NGINX } from '../support/nginx';
import { converged, HAPROXY, ScaleLab } from '../support/scale-lab';
import { DEMO } from '../helpers/serve';

/**
 * Per-client fairness at the load balancer (docs/scaling.md#per-client-rate-limits): 2 replicas
 * behind deploy/haproxy.cfg, then behind deploy/nginx-upstream.conf, each run as shipped with only
 * its limit lowered, and clients in their own network namespaces (their own source addresses).
 * A client over its limit gets 429 in the API's error shape with Retry-After while the clients
 * beside it get every answer; the limit follows the client behind a trusted proxy (the
 * X-Forwarded-For it sets) and not a header an untrusted client makes up. Needs root, iproute2,
 * nginx, haproxy (scripts/ci-scale.sh); TEST_REQUIRE_SCALE=1 makes a missing one a failure.
 */
const missing = netnsUnavailable() ?? (!HAPROXY ? 'haproxy is not installed' : !NGINX ? 'nginx is not installed' : undefined);
const required = process.env.TEST_REQUIRE_SCALE === '1';
const PATH = '/indexer/block/v1/blocks?pagination.limit=2';

const count = (o: Outcome, status: number): number => o.statuses.filter((s) => s === status).length;

/** Every refusal is a 429 in the API's one error shape, with a Retry-After in whole seconds. */
function expectRefusals(o: Outcome, who: string): void {
  expect(o.errors, who).to.deep.equal([]);
  expect(o.statuses.filter((s) => s !== 200 && s !== 429), `${who}: ${JSON.stringify(o.statuses)}`).to.deep.equal([]);
  const r = o.firstRefusal;
  expect(r, `${who} was never refused: ${JSON.stringify(o.statuses)}`).to.not.equal(undefined);
  if (!r) return;
  expect(r.status, who).to.equal(429);
  expect(r.headers['content-type'], who).to.match(/^application\/json/);
  expect(String(r.headers['retry-after']), who).to.match(/^[1-9][0-9]*$/);
  const body = JSON.parse(r.body) as Record<string, unknown>;
  expect(Object.keys(body), who).to.deep.equal(['code', 'message', 'details']);
  expect(body.code, who).to.equal(8);
  expect(body.message, who).to.match(/too many requests/);
  expect(body.details, who).to.deep.equal([]);
}

function expectAllServed(o: Outcome, who: string): void {
  expect(o.errors, who).to.deep.equal([]);
  expect(o.statuses, who).to.deep.equal(o.statuses.map(() => 200));
}

(missing && !required ? describe.skip : describe)(`scale-out: per-client rate limits at the load balancer${missing ? ` (skipped: ${missing})` : ''}`, function () {
  this.timeout(240_000);
  let lab: ScaleLab | undefined;
  let hostile: Host;
  let polite: Host[];
  let spoofer: Host;
  let cdn: Host;
  after(async () => { await lab?.stop(); });

  before(async () => {
    if (missing) throw new Error(`TEST_REQUIRE_SCALE=1 but ${missing}`);
    lab = await ScaleLab.start({ replicas: 2, pullIntervalMs: 5_000 });
    const published = await publishSnapshot({ db: DEMO('wasm'), to: lab.dir, keep: 3, compress: 'auto' });
    await Promise.all(lab.replicas.map((_r, i) => lab!.startReplica(i)));
    await converged(lab, published.manifest.height, Date.now(), 30_000);
    hostile = lab.net.addHost('hostile');
    polite = [lab.net.addHost('polite1'), lab.net.addHost('polite2')];
    spoofer = lab.net.addHost('spoofer');
    cdn = lab.net.addHost('cdn');
  });

  /**
   * Side by side: the hostile client as fast as it can, 2 polite clients under the limit, a client
   * that sends a new X-Forwarded-For with every request; then a trusted CDN forwarding for a
   * hostile and a polite client at once, both from the CDN's one address.
   */
  async function scenario(url: string, hostileCount: number, politePlan: Omit<Plan, 'url'>): Promise<void> {
    const l = lab as ScaleLab;
    const fast = { url: url + PATH, concurrency: 4, pauseMs: 0 };
    const [h, p1, p2, s] = await Promise.all([
      l.client(hostile, { ...fast, count: hostileCount }),
      l.client(polite[0], { url: url + PATH, ...politePlan }),
      l.client(polite[1], { url: url + PATH, ...politePlan }),
      l.client(spoofer, { ...fast, count: hostileCount, forwardedFor: Array.from({ length: hostileCount }, (_v, i) => `198.18.${i >> 8}.${i & 255}`) }),
    ]);
    expectRefusals(h, 'hostile client');
    expect(count(h, 429), `hostile: ${JSON.stringify(h.statuses)}`).to.be.greaterThan(hostileCount / 2);
    expectAllServed(p1, 'polite client 1');
    expectAllServed(p2, 'polite client 2');
    // an untrusted client's X-Forwarded-For is ignored: it is limited on its own address
    expectRefusals(s, 'client rotating X-Forwarded-For');
    expect(count(s, 429)).to.be.greaterThan(hostileCount / 2);

    const [viaHostile, viaPolite] = await Promise.all([
      l.client(cdn, { ...fast, count: hostileCount, forwardedFor: ['203.0.113.7'] }),
      l.client(cdn, { url: url + PATH, ...politePlan, forwardedFor: ['203.0.113.8'] }),
    ]);
    expectRefusals(viaHostile, 'hostile client behind the CDN');
    expect(count(viaHostile, 429)).to.be.greaterThan(hostileCount / 2);
    expectAllServed(viaPolite, 'polite client behind the CDN');
    process.stderr.write(`      (hostile ${count(h, 200)} served / ${count(h, 429)} refused; polite ${p1.statuses.length + p2.statuses.length} served; `
      + `spoofer ${count(s, 429)} refused; behind the CDN: hostile ${count(viaHostile, 429)} refused, polite ${viaPolite.statuses.length} served)\n`);
  }

  it('HAProxy (deploy/haproxy.cfg, RATE_LIMIT=20 per 10 s): the client over its limit gets 429, the others every answer', async () => {
    const l = lab as ScaleLab;
    await l.startHaproxy(2, { host: l.net.hostAddr, env: { RATE_LIMIT: '20', RATE_LIMIT_PERIOD_S: '10', TRUSTED_PROXIES: `192.0.2.1/32 ${cdn.addr}/32` } });
    try {
      // the polite clients: 12 requests in ~3.6 s, under 20 per 10 s
      await scenario(l.url, 100, { count: 12, concurrency: 1, pauseMs: 300 });
    } finally {
      await l.stopHaproxy();
    }
  });

  it('nginx (deploy/nginx-upstream.conf, rate=2r/s burst=5): the client over its limit gets 429, the others every answer', async () => {
    const l = lab as ScaleLab;
    const b = await l.startNginxBalancer({
      host: l.net.hostAddr,
      edit: (conf) => {
        const edited = conf.replace('rate=10r/s', 'rate=2r/s').replace('burst=50', 'burst=5')
          .replace('# set_real_ip_from 192.0.2.0/24;', `set_real_ip_from ${cdn.addr};`)
          .replace('# real_ip_header X-Forwarded-For;', 'real_ip_header X-Forwarded-For;')
          .replace('# real_ip_recursive on;', 'real_ip_recursive on;');
        expect(edited.match(/^\s*(set_real_ip_from|real_ip_header|real_ip_recursive|limit_req zone=.*burst=5|limit_req_zone .*rate=2r\/s)/gm)).to.have.length(5);
        return edited;
      },
    });
    try {
      // the polite clients: one request every 700 ms, under 2 a second
      await scenario(b.url, 100, { count: 8, concurrency: 1, pauseMs: 700 });
    } finally {
      await b.stop();
    }
  });
});
