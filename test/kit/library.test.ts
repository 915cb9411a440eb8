import { expect } from 'chai';
import { copyFileSync, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../../src/index';
import { DEMO } from '../serve/helpers';

/** Files this process holds open. */
function openFiles(): string[] {
  return readdirSync('/proc/self/fd').map((fd) => { try { return readlinkSync(`/proc/self/fd/${fd}`); } catch { return ''; } });
}

function canListen(port: number): Promise<boolean> {
  return new Promise((done) => {
    const s = createServer();
    s.once('error', () => done(false));
    s.listen(port, '127.0.0.1', () => s.close(() => done(true)));
  });
}

describe('library: startServer() gives a test a real API in-process', function () {
  this.timeout(60_000);
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), 'indexer-api-kit-')); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('serves a snapshot file on a free port, ready when the promise resolves, in this process', async () => {
    const db = join(dir, 'chain.sqlite');
    copyFileSync(DEMO('wasm'), db);
    const srv = await startServer({ db, port: 0 });
    try {
      expect(srv.url).to.equal(`http://127.0.0.1:${srv.port}`);
      expect(srv.port).to.be.above(0);
      expect(srv.db).to.equal(db);
      expect(openFiles()).to.include(db);
      const status = await (await fetch(`${srv.url}/status`)).json() as { chain_id: string; height: number };
      expect(status.chain_id).to.equal('miniwasm-demo-1');
      const blocks = await (await fetch(`${srv.url}/indexer/block/v1/blocks?pagination.limit=2`)).json() as { blocks: { height: string }[] };
      expect(blocks.blocks.map((b) => Number(b.height))).to.deep.equal([status.height, status.height - 1]);
    } finally {
      await srv.close();
    }
  });

  it('close() releases the snapshot file and the port, and may be called twice', async () => {
    const db = join(dir, 'released.sqlite');
    copyFileSync(DEMO('move'), db);
    const srv = await startServer({ db });
    expect(await canListen(srv.port)).to.equal(false);
    await srv.close();
    await srv.close();
    expect(openFiles()).to.not.include(db);
    expect(await canListen(srv.port)).to.equal(true);
    await fetch(`${srv.url}/status`).then(() => expect.fail('still answering after close()'), () => undefined);
  });

  it('serves each bundled demo by name, several at once on different ports', async () => {
    const servers = await Promise.all((['move', 'wasm', 'evm'] as const).map((demo) => startServer({ demo })));
    try {
      expect(new Set(servers.map((s) => s.port)).size).to.equal(3);
      const chains = await Promise.all(servers.map(async (s) => ((await (await fetch(`${s.url}/status`)).json()) as { chain_id: string }).chain_id));
      expect(chains).to.deep.equal(['minimove-demo-1', 'miniwasm-demo-1', 'minievm-demo-1']);
    } finally {
      await Promise.all(servers.map((s) => s.close()));
    }
  });

  it('rejects a bad snapshot, a missing one and bad options with a message naming the value, leaving nothing open', async () => {
    const bad = join(dir, 'not-sqlite.sqlite');
    writeFileSync(bad, 'hello');
    const before = openFiles().length;
    const failures: [Parameters<typeof startServer>[0], RegExp][] = [
      [{ db: bad }, /not-sqlite\.sqlite/],
      [{ db: join(dir, 'missing.sqlite') }, /missing\.sqlite/],
      [{}, /pass db: 'file.sqlite' or demo/],
      [{ demo: 'cosmos' as 'move' }, /demo must be one of move, wasm, evm, got "cosmos"/],
      [{ demo: 'move', db: bad }, /db or demo, not both/],
      [{ demo: 'move', port: 70000 }, /port must be 0\.\.65535, got 70000/],
    ];
    for (const [opts, message] of failures) {
      const err = await startServer(opts).then(() => undefined, (e: Error) => e);
      expect(err?.message, JSON.stringify(opts)).to.match(message);
    }
    expect(openFiles().length).to.equal(before);
  });

  it('rejects a port in use and closes the snapshot it opened', async () => {
    const first = await startServer({ demo: 'wasm' });
    try {
      const err = await startServer({ demo: 'wasm', port: first.port }).then(() => undefined, (e: NodeJS.ErrnoException) => e);
      expect(err?.code).to.equal('EADDRINUSE');
      expect(openFiles().filter((f) => f === first.db)).to.have.length(1);
    } finally {
      await first.close();
    }
  });
});
