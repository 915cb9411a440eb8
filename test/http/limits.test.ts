import { expect } from 'chai';
import { once } from 'node:events';
import { connect, Socket } from 'node:net';
import { DEMO, get, ServeProcess, startServe } from '../helpers/serve';

/** Connects to the server behind `url`. */
async function open(url: string): Promise<Socket> {
  const u = new URL(url);
  const sock = connect(Number(u.port), u.hostname);
  await once(sock, 'connect');
  return sock;
}

/** Everything the server sends until it closes the connection. */
function readAll(sock: Socket): Promise<string> {
  return new Promise((done) => {
    let text = '';
    sock.setEncoding('utf8').on('data', (s: string) => { text += s; });
    sock.on('error', () => {});
    sock.on('close', () => done(text));
  });
}

describe('serve: request limits', function () {
  this.timeout(60_000);

  describe('defaults', () => {
    let s: ServeProcess;
    before(async () => { s = await startServe(['--db', DEMO('wasm')]); });
    after(async () => { await s.stop(); });

    it('answers 414 with the JSON error to a URL longer than 8192 bytes', async () => {
      const r = await get(`${s.url}/status?x=${'a'.repeat(9000)}`);
      expect(r.status).to.equal(414);
      expect(JSON.parse(r.body)).to.deep.equal({ code: 3, message: 'request URL is 9010 bytes, the limit is 8192', details: [] });
      expect(r.headers['cache-control']).to.equal('no-store');
    });

    it('answers 431 with the JSON error to headers larger than 16 KiB, and closes the connection', async () => {
      const sock = await open(s.url);
      const reply = readAll(sock);
      sock.write(`GET /status HTTP/1.1\r\nHost: test\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`);
      const text = await reply;
      expect(text).to.match(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
      expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).to.deep.equal({ code: 3, message: 'request headers are too large', details: [] });
    });

    it('answers 414, not 431, to a 20 KiB query string (the request line alone is past --max-header-size): the target\'s own limit wins', async () => {
      const r = await get(`${s.url}/status?x=${'a'.repeat(20 * 1024)}`);
      expect(r.status).to.equal(414);
      expect(JSON.parse(r.body)).to.deep.equal({ code: 3, message: `request URL is ${'/status?x='.length + 20 * 1024} bytes, the limit is 8192`, details: [] });
      // sent in two writes, the line cut before its end: what arrived is enough to say 414
      const sock = await open(s.url);
      const reply = readAll(sock);
      sock.write(`GET /status?x=${'a'.repeat(10_000)}`);
      await new Promise((done) => setTimeout(done, 50));
      sock.write(`${'a'.repeat(10_000)} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n`);
      const text = await reply;
      expect(text).to.match(/^HTTP\/1\.1 414 URI Too Long\r\n/);
      expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)).message).to.equal(`request URL is ${'/status?x='.length + 20_000} bytes, the limit is 8192`);
      // past both limits together Node's parser stops it: still 414, read from the bytes it saw
      const huge = await get(`${s.url}/status?x=${'a'.repeat(100 * 1024)}`);
      expect(huge.status).to.equal(414);
      expect(JSON.parse(huge.body).message).to.match(/^request URL is (more than )?\d+ bytes, the limit is 8192$/);
    });

    it('still serves normal requests', async () => {
      expect((await get(`${s.url}/status`)).status).to.equal(200);
    });
  });

  it('applies --max-url-length and --max-header-size', async () => {
    const s = await startServe(['--db', DEMO('wasm'), '--max-url-length', '100', '--max-header-size', '4096']);
    try {
      expect((await get(`${s.url}/status?x=${'a'.repeat(80)}`)).status).to.equal(200);
      expect((await get(`${s.url}/status?x=${'a'.repeat(100)}`)).status).to.equal(414);
      const r = await get(`${s.url}/status`, { 'X-Big': 'b'.repeat(5000) });
      expect(r.status).to.equal(431);
      expect(JSON.parse(r.body)).to.include({ code: 3 });
      // a target within --max-url-length whose headers overflow: 431
      expect((await get(`${s.url}/status?x=${'a'.repeat(50)}`, { 'X-Big': 'b'.repeat(5000) })).status).to.equal(431);
    } finally {
      await s.stop();
    }
  });

  it('disconnects a client that sends its headers byte by byte beyond --headers-timeout-ms (408)', async () => {
    const s = await startServe(['--db', DEMO('wasm'), '--headers-timeout-ms', '300', '--request-timeout-ms', '600']);
    try {
      const sock = await open(s.url);
      const reply = readAll(sock);
      let closed = false;
      sock.on('close', () => { closed = true; });
      const request = `GET /status HTTP/1.1\r\nHost: test\r\nX-Slow: ${'s'.repeat(400)}\r\n\r\n`;
      let sent = 0;
      // One byte every 20 ms: the whole request would take 8 s.
      while (!closed && sent < request.length) {
        sock.write(request[sent++]);
        await new Promise((r) => setTimeout(r, 20));
      }
      const text = await reply;
      expect(sent).to.be.lessThan(request.length);
      expect(text).to.match(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).to.deep.equal({ code: 1, message: 'request not received in time', details: [] });
      expect((await get(`${s.url}/status`)).status).to.equal(200);
    } finally {
      await s.stop();
    }
  });

  it('closes an idle keep-alive connection after --keep-alive-timeout-ms and says so in Keep-Alive', async () => {
    const s = await startServe(['--db', DEMO('wasm'), '--keep-alive-timeout-ms', '1000']);
    try {
      const sock = await open(s.url);
      const reply = readAll(sock);
      sock.write('GET /status HTTP/1.1\r\nHost: test\r\n\r\n');
      const text = await reply; // resolves only when the server closes the idle connection
      expect(text).to.match(/^HTTP\/1\.1 200 OK\r\n/);
      expect(text).to.match(/\r\nKeep-Alive: timeout=1\r\n/);
    } finally {
      await s.stop();
    }
  });
});
