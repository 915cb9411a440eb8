/**
 * A source that fails is a warning (issue #37): `follow`'s lines for a bad record, a refused
 * connection and an answer that is not JSON are at level warn — an operator filtering for
 * warnings sees a follower that stopped advancing — and say what failed in words, without
 * "failed after 1 attempts". `follow --metrics-port` says how long it has not advanced:
 * indexer_api_follow_stalled_seconds, and /ready 503 past --max-stall. A real `follow` process
 * reads a real indexer-api source through a proxy the test breaks in each way.
 */
import { expect } from 'chai';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { metric } from '../helpers/serve';
import { demoCuts, eventually, FollowProcess, growingSource, GrowingSource, startFollow } from '../helpers/follow';

type Mode = 'pass' | 'not JSON' | 'bad record';

/** A proxy in front of `target` on a fixed port, which the test can break and stop. */
class Proxy {
  mode: Mode = 'pass';
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly target: string) {}

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      void (async () => {
        if (this.mode === 'not JSON') {
          res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>maintenance</body></html>');
          return;
        }
        const r = await fetch(this.target + req.url);
        let body = await r.text();
        // a tx whose gas is no number: the importer's validation refuses the record
        if (this.mode === 'bad record' && (req.url ?? '').startsWith('/indexer/tx/v1/txs?')) body = body.replace(/"gas_used":"\d+"/, '"gas_used":"lots"');
        res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' }).end(body);
      })().catch(() => res.destroy());
    });
    server.on('connection', (s) => { this.sockets.add(s); s.on('close', () => this.sockets.delete(s)); });
    await new Promise<void>((done) => server.listen(this.port, '127.0.0.1', done));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Stops listening: the next connection is refused. */
  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    for (const sock of this.sockets) sock.destroy();
    await new Promise<void>((done) => (s ? s.close(() => done()) : done()));
  }
}

interface Line { level: string; msg: string }

function linesOf(f: FollowProcess): Line[] {
  return f.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Line);
}

describe('follow: a failing source is a warning; --metrics-port says how long follow has not advanced', function () {
  this.timeout(180_000);
  let tmp: string;
  let src: GrowingSource | undefined;
  let proxy: Proxy | undefined;
  let follow: FollowProcess | undefined;
  before(() => { tmp = mkdtempSync(join(tmpdir(), 'indexer-api-failing-source-')); });
  after(async () => {
    await follow?.stop('SIGKILL');
    await proxy?.stop();
    await src?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('not JSON, a bad record, a refused connection: one warn line each (in words), /ready 503 past --max-stall, then 200 when it answers again', async () => {
    const { at, full } = await demoCuts();
    const db = join(tmp, 'chain.sqlite');
    copyFileSync(at.get(250) as string, db);
    src = await growingSource(at.get(250) as string);
    proxy = new Proxy(src.url);
    await proxy.start();
    // --timeout 5000: a request stuck on a loaded machine fails in 5 s, not the default 30 s
    const f = startFollow(['--db', db, '--from-api', `http://127.0.0.1:${proxy.port}`, '--interval', '100ms', '--max-backoff', '300ms', '--timeout', '5000',
      '--metrics-port', '0', '--max-stall', '2s', '--richlist-interval', '0', '--collections-audit-interval', '0']);
    follow = f;
    const ops = (await f.until('the metrics line', /metrics on (http:\/\/[\d.:]+)\/metrics/))[1];
    const ready = async (): Promise<{ status: number; body: Record<string, unknown> }> => {
      const r = await fetch(`${ops}/ready`);
      return { status: r.status, body: (await r.json()) as Record<string, unknown> };
    };
    await eventually('caught up', 30_000, async () => ((await ready()).body.source_height === 250 ? true : undefined));
    expect(await ready()).to.deep.include({ status: 200 });

    // a line that does not come fails with follow's log (what it said instead)
    const warned = async (what: string, re: RegExp): Promise<Line> => eventually(what, 60_000, async () => linesOf(f).find((l) => re.test(l.msg)))
      .catch((e: Error) => { throw new Error(`${e.message}; follow's log ends: ${f.stderr.slice(-3000)}`); });
    proxy.mode = 'not JSON';
    // the poll in flight at the flip may fail on its second request (the block at our height), not /status
    const notJson = await warned('not JSON', /^follow: GET http:\/\/127\.0\.0\.1:\d+\/\S+: not JSON \(failure \d+;/);
    expect(notJson.level).to.equal('warn');

    proxy.mode = 'bad record';
    src.show(at.get(320) as string);
    const bad = await warned('a bad record', /^follow: bad record: /);
    expect(bad.level).to.equal('warn');
    expect(bad.msg).to.contain('gas_used');

    await proxy.stop();
    const refused = await warned('a refused connection', /connection refused/);
    expect(refused.level).to.equal('warn');
    expect(refused.msg).to.match(/^follow: GET http:\/\/127\.0\.0\.1:\d+\/status: connection refused \(nothing listens at that address and port\) \(failure \d+/);
    // every failure a warning, none counted in "attempts", no errno
    const failures = linesOf(f).filter((l) => /\(failure \d+/.test(l.msg));
    expect(failures.length).to.be.at.least(3);
    expect(failures.filter((l) => l.level !== 'warn')).to.deep.equal([]);
    expect(f.stderr).to.not.match(/attempts|ECONNREFUSED/);

    // not advanced for longer than --max-stall (2 s): /ready 503 with why; the gauge says how long
    const out = await eventually('/ready 503', 30_000, async () => { const r = await ready(); return r.status === 503 ? r : undefined; });
    expect(String(out.body.message)).to.match(/^follow has not advanced for \d+ s \(over --max-stall 2 s\): \d+ failures in a row, the last: GET .*connection refused/);
    expect(out.body).to.include({ code: 14, height: 250 });
    const text = await (await fetch(`${ops}/metrics`)).text();
    expect(metric(text, 'indexer_api_follow_stalled_seconds')).to.be.greaterThan(2);
    expect(metric(text, 'indexer_api_follow_consecutive_failures')).to.be.at.least(1);

    // the source answers again: one info line, caught up, ready
    proxy.mode = 'pass';
    src.show(full);
    await proxy.start();
    const again = await warned('answers again', /answers again after \d+ failures/);
    expect(again.level).to.equal('info');
    await eventually('height 400', 60_000, async () => ((await ready()).body.height === 400 ? true : undefined));
    const back = await ready();
    expect(back.status).to.equal(200);
    expect(back.body).to.include({ status: 'following', stalled_seconds: 0, consecutive_failures: 0 });
    expect(await f.stop('SIGTERM')).to.deep.equal({ code: 0, signal: null });
  });
});
