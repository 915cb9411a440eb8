import { expect } from 'chai';
import { copyFileSync, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startServer } from '../../src/index';
import { corruptPages, publishCopy } from '../helpers/faults';
import { DEMO, eventually } from '../helpers/serve';

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

interface Ready { status: string; snapshot_id?: string; height?: number; message?: string }

async function ready(url: string): Promise<{ status: number; body: Ready }> {
  const r = await fetch(`${url}/ready`);
  return { status: r.status, body: await r.json() as Ready };
}

/** The JSON log lines this process writes to stdout while `during` runs (the library logs there). */
async function stdoutLines(during: () => Promise<void>): Promise<Record<string, unknown>[]> {
  const text: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const t = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    if (t.startsWith('{')) { text.push(t); return true; }
    return (write as (c: string | Uint8Array, ...r: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stdout.write;
  try {
    await during();
    await new Promise((r) => setTimeout(r, 50)); // error lines are written on the next turn
  } finally {
    process.stdout.write = write;
  }
  return text.join('').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
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
      // the first server's own (its snapshot and its commit probe)
      const before = openFiles().filter((f) => f === first.db).length;
      const err = await startServer({ demo: 'wasm', port: first.port }).then(() => undefined, (e: NodeJS.ErrnoException) => e);
      expect(err?.code).to.equal('EADDRINUSE');
      expect(err?.message).to.equal(`startServer: port ${first.port}: address 127.0.0.1:${first.port} is already in use`);
      expect(openFiles().filter((f) => f === first.db)).to.have.length(before);
    } finally {
      await first.close();
    }
  });

  describe('the server `serve` runs (one assembly, src/serve/assembly.ts)', () => {
    it('sees a batch another writer commits to the file (the commit watch of `serve` under `follow`)', async () => {
      const db = join(dir, 'followed.sqlite');
      copyFileSync(DEMO('wasm'), db);
      const writer = new Database(db);
      writer.pragma('journal_mode = WAL'); // how `follow` writes: readers keep their snapshot meanwhile
      const srv = await startServer({ db });
      try {
        const before = await ready(srv.url);
        expect(before.body.height).to.equal(400);
        const etag = (await fetch(`${srv.url}/indexer/block/v1/blocks/5`)).headers.get('etag');
        const statusEtag = (await fetch(`${srv.url}/status`)).headers.get('etag');
        writer.transaction(() => {
          const set = writer.prepare('UPDATE meta SET value = ? WHERE key = ?');
          set.run('401', 'height');
          set.run('library-test-batch', 'snapshot_id');
        })();
        const after = await eventually('the committed batch served', async () => {
          const r = await ready(srv.url);
          return r.body.snapshot_id === 'library-test-batch' ? r : undefined;
        });
        expect(after.body.height).to.equal(401);
        // ETags follow the data (docs/response-cache.md): /status changed, block 5 did not
        expect((await fetch(`${srv.url}/status`)).headers.get('etag'), 'the ETag of an answer the batch changed').to.not.equal(statusEtag);
        expect((await fetch(`${srv.url}/indexer/block/v1/blocks/5`)).headers.get('etag'), 'the ETag of an answer it did not change').to.equal(etag);
      } finally {
        await srv.close();
        writer.close();
      }
    });

    it('takes a damaged file out of rotation (/ready 503, one error line naming it) and serves a good file renamed over it (watch: true)', async () => {
      const db = join(dir, 'damaged.sqlite');
      copyFileSync(DEMO('wasm'), db);
      corruptPages(db, 20, 0.5);
      const srv = await startServer({ db, watch: true, logLevel: 'warn' });
      try {
        expect((await ready(srv.url)).status).to.equal(200);
        const lines = await stdoutLines(async () => {
          let met = 0;
          for (let h = 1; h <= 400 && met === 0; h++) {
            for (const path of [`/indexer/block/v1/blocks/${h}`, `/indexer/tx/v1/txs/by_height/${h}`]) {
              const r = await fetch(srv.url + path);
              await r.arrayBuffer();
              if (r.status === 503) met++;
              else expect(r.status, path).to.equal(200);
            }
          }
          expect(met, 'a request met the damage').to.be.above(0);
          const r = await ready(srv.url);
          expect(r.status).to.equal(503);
          expect(r.body.message).to.match(/damaged/);
        });
        const errors = lines.filter((l) => l.level === 'error');
        expect(errors, JSON.stringify(lines)).to.have.length(1);
        expect(errors[0]).to.include({ file: db, code: 'SQLITE_CORRUPT' });
        expect(String(errors[0].msg)).to.match(/damaged/);

        publishCopy(DEMO('wasm'), db);
        await eventually('the good file swapped in', async () => (await ready(srv.url)).status === 200 || undefined);
        expect((await fetch(`${srv.url}/indexer/block/v1/blocks/200`)).status).to.equal(200);
      } finally {
        await srv.close();
      }
    });
  });
});
