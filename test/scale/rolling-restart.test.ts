import { expect } from 'chai';
import { Agent, request } from 'node:http';
import { netnsUnavailable } from '../support/netns';
import { NGINX } from '../support/nginx';
import { clientLoad, converged, HAPROXY, httpGet, ScaleLab } from '../support/scale-lab';
import { chainVersions, Version } from '../helpers/pull';

/**
 * A rolling restart of an HAProxy fleet (issue #42), the procedure of docs/scaling.md#rolling-restart
 * step by step: 2 replicas pulling from an origin, HAProxy (deploy/haproxy.cfg) in front, clients
 * under load — plain GETs, and wallets revalidating their activity page with the ETag they hold.
 * Each replica in turn: drain (runtime API `set server … state drain`, then its sessions reach 0),
 * restart (SIGTERM, exit 0, started again: its file unchanged, the recorded check is taken), ready
 * (/ready 200, `check.how` "recorded"), back (`set server … state ready`, then HAProxy reports it
 * UP), the next. No request fails; every revalidation stays a 304 through the restarts (the ETag
 * is decided from the file's versions: the same on every replica and after a restart).
 */
const missing = netnsUnavailable() ?? (!HAPROXY ? 'haproxy is not installed' : !NGINX ? 'nginx is not installed' : undefined);
const required = process.env.TEST_REQUIRE_SCALE === '1';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** One GET with headers over `agent`: status and ETag. */
function getWith(url: string, headers: Record<string, string>, agent: Agent): Promise<{ status: number; etag?: string }> {
  return new Promise((done, fail) => {
    const req = request(url, { headers, agent, timeout: 10_000 }, (res) => {
      res.resume();
      res.on('end', () => done({ status: res.statusCode ?? 0, etag: res.headers.etag }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', fail);
    req.end();
  });
}

/** Polls `test` every 50 ms until it returns a value; rejects after `ms`. */
async function until<T>(what: string, ms: number, test: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await test();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(50);
  }
}

(missing && !required ? describe.skip : describe)(`scale-out: a rolling restart of 2 replicas behind HAProxy${missing ? ` (skipped: ${missing})` : ''}`, function () {
  this.timeout(240_000);
  let lab: ScaleLab | undefined;
  after(async () => { await lab?.stop(); });

  it('drain, restart, ready, back, one replica after the other: no request fails, every revalidation stays a 304', async () => {
    if (missing) throw new Error(`TEST_REQUIRE_SCALE=1 but ${missing}`);
    const v: Version[] = await chainVersions();
    lab = await ScaleLab.start({ replicas: 2, pullIntervalMs: 60_000 });
    await lab.publish(v[1].file);
    await Promise.all(lab.replicas.map((_r, i) => lab!.startReplica(i)));
    await converged(lab, v[1].height, Date.now(), 30_000);
    // deploy/haproxy.cfg names 3 servers: behind 2 replicas, replica1 and replica3 are the first
    await lab.startHaproxy();
    const t0 = Date.now();
    // wallets: the activity pages of a few accounts, with the ETags they hold (taken through HAProxy)
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    const txs = JSON.parse((await httpGet(`${lab.url}/indexer/tx/v1/txs?pagination.limit=20`, 5_000)).body) as { txs: { tx: { body: { messages: { sender?: string; from_address?: string }[] } } }[] };
    const accounts = [...new Set(txs.txs.map((t) => t.tx.body.messages[0]?.sender ?? t.tx.body.messages[0]?.from_address).filter((a): a is string => !!a))].slice(0, 5);
    expect(accounts.length, 'accounts').to.be.greaterThan(0);
    const held = new Map<string, string>();
    for (const a of accounts) {
      const path = `/indexer/tx/v1/txs/by_account/${a}?pagination.reverse=true&pagination.limit=10`;
      const r = await getWith(lab.url + path, { 'accept-encoding': 'gzip' }, agent);
      expect(r.status).to.equal(200);
      held.set(path, r.etag as string);
    }
    const polls = { notModified: 0, other: [] as string[] };
    let polling = true;
    const wallets = (async () => {
      for (let i = 0; polling; i++) {
        const [path, etag] = [...held][i % held.size];
        try {
          const r = await getWith(lab!.url + path, { 'accept-encoding': 'gzip', 'if-none-match': etag }, agent);
          if (r.status === 304) polls.notModified++;
          else polls.other.push(`${Date.now() - t0} ms: ${r.status} ${path}`);
        } catch (e) {
          polls.other.push(`${Date.now() - t0} ms: ${(e as Error).message} ${path}`);
        }
      }
    })();
    const load = clientLoad(lab.url, 4, ['/status', '/indexer/block/v1/blocks?pagination.limit=5', '/indexer/tx/v1/txs?pagination.limit=5']);
    const steps: string[] = [];
    try {
      await sleep(1_000);
      for (let i = 0; i < lab.replicas.length; i++) {
        const servers = lab.serverLines(i);
        const state = async (): Promise<{ status: string; sessions: number }[]> => {
          const all = await lab!.haproxyServers();
          return servers.map((s) => all.get(s) ?? { status: 'missing', sessions: -1 });
        };
        // 1. drain: HAProxy sends the replica no new request; wait until none is in flight there
        let t = Date.now();
        for (const s of servers) expect(await lab.haproxyCommand(`set server replicas/${s} state drain`)).to.match(/^\s*$/);
        await until(`replica ${i} drained`, 10_000, async () => ((await state()).every((s) => s.status === 'DRAIN' && s.sessions === 0) ? true : undefined));
        const drainedMs = Date.now() - t;
        // 2. restart: SIGTERM, it exits 0 (nothing was sent to it), started again on the same file
        t = Date.now();
        const old = lab.replicas[i].proc!;
        old.signal('SIGTERM');
        const exit = await old.exited;
        expect(exit.code, `replica ${i} exited cleanly`).to.equal(0);
        const exitMs = Date.now() - t;
        t = Date.now();
        await lab.startReplica(i);
        // 3. ready: /ready 200; the unchanged file's recorded check was taken (no page read again)
        const check = await until(`replica ${i} ready`, 30_000, async () => {
          const r = await httpGet(`${lab!.replicaUrl(i)}/ready`, 1_000).catch(() => undefined);
          return r?.status === 200 ? (JSON.parse(r.body) as { check?: { state: string; how: string } }).check ?? {} : undefined;
        });
        const readyMs = Date.now() - t;
        expect(check, `replica ${i}: its unchanged file not read again`).to.include({ state: 'passed', how: 'recorded' });
        // 4. back: in rotation again; the next replica only once HAProxy reports this one UP
        t = Date.now();
        for (const s of servers) expect(await lab.haproxyCommand(`set server replicas/${s} state ready`)).to.match(/^\s*$/);
        await until(`replica ${i} back in rotation`, 10_000, async () => ((await state()).every((s) => s.status === 'UP') ? true : undefined));
        steps.push(`replica ${i} (${servers.join(', ')}): drained ${drainedMs} ms, exited ${exitMs} ms after SIGTERM, /ready 200 ${readyMs} ms after the start, UP ${Date.now() - t} ms after ready`);
        await sleep(1_000);
      }
    } finally {
      polling = false;
      await wallets;
      agent.destroy();
      const report = await load.stop();
      if (report.failures.length) process.stderr.write(`      failures: ${JSON.stringify(report.failures.slice(0, 5).map((f) => ({ ...f, at: f.at - t0 })))}\n      haproxy log:\n${lab.haproxyLog}\n`);
      expect(report.failures, JSON.stringify(report.failures.slice(0, 5))).to.deep.equal([]);
      expect(report.ok).to.be.greaterThan(100);
    }
    expect(polls.other, 'every revalidation a 304').to.deep.equal([]);
    expect(polls.notModified).to.be.greaterThan(50);
    process.stderr.write(`      (rolling restart: ${steps.join('; ')}; ${polls.notModified} revalidations, all 304)\n`);
  });
});
