import { expect } from 'chai';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { openFollowSource } from '../../src/sources/registry';
import { HttpClient } from '../../src/sources/http';
import { resolveHttp } from '../../src/sources/options';

/**
 * A real HTTP/1.1 server on 127.0.0.1 that closes a keep-alive connection 100 ms after its last
 * answer and announces no keep-alive timeout (as a reverse proxy or a Go server with an idle
 * timeout does): a client whose event loop is busy across that close — follow writing a batch
 * synchronously — still has the dead connection in its pool when it sends the next request.
 */
function closingServer(idleMs: number): Promise<{ server: Server; url: string; connections: () => number }> {
  let connections = 0;
  const server = createServer((sock: Socket) => {
    connections++;
    let buf = '';
    let idle: NodeJS.Timeout | undefined;
    sock.on('error', () => undefined);
    sock.on('data', (d) => {
      clearTimeout(idle);
      buf += d.toString('latin1');
      for (let end = buf.indexOf('\r\n\r\n'); end >= 0; end = buf.indexOf('\r\n\r\n')) {
        buf = buf.slice(end + 4);
        const body = '{"height":7,"rich_list_height":7,"block":{"hash":"AB"}}';
        sock.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
        idle = setTimeout(() => sock.destroy(), idleMs);
      }
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, connections: () => connections,
  })));
}

/** Keeps the event loop busy, as a batch written in one synchronous SQLite transaction does. */
function busy(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) { /* blocked */ }
}

describe('a source that closes idle keep-alive connections (src/sources/http.ts, #22)', () => {
  let server: Server | undefined;
  afterEach(() => { server?.close(); server = undefined; });

  it('HttpClient without retries: every GET after the server closed the pooled connection still answers', async () => {
    const s = await closingServer(100);
    server = s.server;
    const http = new HttpClient(s.url, resolveHttp({ retries: 0, concurrency: 1 }));
    const failures: string[] = [];
    for (let i = 0; i < 10; i++) {
      await http.get('/status');
      busy(300);
      await http.get('/status').catch((e: Error) => failures.push(e.message));
    }
    expect(failures).to.deep.equal([]);
    // the dead connections were noticed and replaced, not merely lucky timing
    expect(http.stats.resent).to.be.greaterThan(0);
    expect(s.connections()).to.be.greaterThan(10);
  });

  it('follow --from-api: the /status poll after a long synchronous batch does not fail', async () => {
    const s = await closingServer(100);
    server = s.server;
    const src = openFollowSource({ fromApi: s.url, vmType: 'wasm', bech32Prefix: 'init', db: '/nonexistent/chain.sqlite', http: resolveHttp({}), statusVersion: 'dev', statusCommit: 'unknown' });
    try {
      // each poll: the source's height, its hash at ours; then the batch is written (busy)
      const failures: string[] = [];
      for (let i = 0; i < 10; i++) {
        await src.head().catch((e: Error) => failures.push(e.message));
        await src.hashAt(7).catch((e: Error) => failures.push(e.message));
        busy(300);
      }
      expect(failures).to.deep.equal([]);
    } finally {
      await src.close();
    }
  });

  it('a server that resets every connection still fails the GET (resent once, not retried forever)', async () => {
    const server2 = createServer((sock) => { sock.on('error', () => undefined); sock.on('data', () => sock.resetAndDestroy()); });
    server = server2;
    await new Promise<void>((r) => server2.listen(0, '127.0.0.1', r));
    const http = new HttpClient(`http://127.0.0.1:${(server2.address() as AddressInfo).port}`, resolveHttp({ retries: 0 }));
    const err = await http.get('/status').then(() => undefined, (e: Error) => e);
    // one attempt: no count ("failed after 1 attempts"), and the reason in words, not an errno
    expect(err?.message).to.match(/\/status: connection reset by the server$/);
    expect(http.stats.resent).to.equal(1);
  });
});
