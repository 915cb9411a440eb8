import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { growingStatus } from '../../src/serve/growth';
import { openSnapshot } from '../../src/snapshot/open';
import { demoCuts, differences, eventually, startFollow, statusHeight } from '../helpers/follow';
import { CLI, cleanEnv, DEMO, get, ROOT, startServe } from '../helpers/serve';
import { freePort } from '../support/net';

/**
 * A growing demo chain (`serve --start-height H --block-ms MS`, issue #37): /status starts at H
 * and says one block more every MS up to the file's height, with no-store and no ETag; every
 * other answer is the whole file's; a `follow` of it reads the chain block by block and ends
 * equal to a fresh import of the whole chain. Real processes on 127.0.0.1.
 */
describe('serve --start-height: a growing demo chain', function () {
  this.timeout(240_000);

  it('renders /status once per block, capping every height it shows, and hands back the file\'s own at the top', () => {
    const s = openSnapshot(DEMO('evm'));
    try {
      let now = 1_000_000;
      const status = growingStatus({ startHeight: 390, blockMs: 1000 }, () => now);
      const at = (): Record<string, number> => JSON.parse(status(s) as string) as Record<string, number>;
      expect(s.meta.height).to.equal(400);
      expect(s.meta.internalTxHeight).to.equal(400);
      expect(at()).to.include({ height: 390, internal_tx_height: 390, rich_list_height: 390 });
      const first = status(s);
      now += 999;
      expect(status(s)).to.equal(first, 'the same block: the same string');
      now += 1;
      expect(at().height).to.equal(391);
      now += 8_500;
      expect(at().height).to.equal(399);
      now += 1_000;
      expect(status(s), 'grown to the file: /status is the file\'s own').to.equal(undefined);
      // keys in /status order, as the file's own answer
      now -= 5_000;
      expect(Object.keys(at())).to.deep.equal(Object.keys(JSON.parse(s.status) as object));
    } finally { s.close(); }
  });

  it('serves /status growing one block per --block-ms (no-store, no ETag) while every other answer is the whole file\'s', async () => {
    const s = await startServe(['--demo', 'evm', '--start-height', '395', '--block-ms', '300']);
    try {
      const first = await get(`${s.url}/status`);
      const h0 = (JSON.parse(first.body) as { height: number }).height;
      expect(h0).to.be.within(395, 397);
      expect(first.headers['cache-control']).to.equal('no-store');
      expect(first.headers.etag).to.equal(undefined);
      const later = await eventually('a block later', 10_000, async () => {
        const h = (JSON.parse((await get(`${s.url}/status`)).body) as { height: number }).height;
        return h > h0 ? h : undefined;
      });
      expect(later).to.be.at.most(400);
      // the rest is the whole file: block 400 is there, the list's total counts it
      expect((await get(`${s.url}/indexer/block/v1/blocks/400`)).status).to.equal(200);
      expect((JSON.parse((await get(`${s.url}/indexer/block/v1/blocks?pagination.limit=1`)).body) as { pagination: { total: string } }).pagination.total).to.equal('400');
      expect(s.lines.some((l) => /^growing demo chain/.test(l.msg) && l.from === 395 && l.to === 400 && l.block_ms === 300)).to.equal(true);
      // grown to the top: the file's own /status, cached and revalidated as usual
      await eventually('the top', 10_000, async () => ((JSON.parse((await get(`${s.url}/status`)).body) as { height: number }).height === 400 ? true : undefined));
      const top = await get(`${s.url}/status`);
      expect(top.headers.etag).to.be.a('string');
    } finally {
      await s.stop();
    }
  });

  it('follow of a growing demo chain reads it block by block and ends equal to a fresh import of the whole chain', async () => {
    const { full } = await demoCuts();
    const tmp = mkdtempSync(join(tmpdir(), 'indexer-api-growth-'));
    const src = await startServe(['--demo', 'wasm', '--start-height', '380', '--block-ms', '1000', '--no-explorer']);
    const db = join(tmp, 'replica.sqlite');
    const follow = startFollow(['--db', db, '--from-api', src.url, '--interval', '100ms']);
    try {
      await follow.until('the first import', /following api .* from height 3[89]\d/);
      await follow.until('height 400', /heights \d+\.\.400 /);
      expect(await follow.stop('SIGTERM')).to.deep.equal({ code: 0, signal: null });
      // after the first batch (what grew during the first import) one or two heights per batch:
      // the chain grew under it a block a second
      const batches = [...follow.stderr.matchAll(/heights (\d+)\.\.(\d+) /g)].map((m) => Number(m[2]) - Number(m[1]) + 1);
      expect(batches.length, follow.stderr).to.be.at.least(5);
      expect(Math.max(...batches.slice(1)), follow.stderr).to.be.at.most(2);
      expect(await statusHeight(src.url)).to.equal(400);
      expect(differences(db, full)).to.deep.equal([]);
    } finally {
      await follow.stop('SIGKILL');
      await src.stop();
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('make demo-live (scripts/demo-live.sh): the source grows, follow keeps the replica up, its explorer answers; Ctrl-C stops all three and removes the replica', async () => {
    const port = await freePort();
    // The chain grows for 50 s (heights 350..400, a block a second): on a loaded runner the first
    // import and the replica's start took longer than a shorter growth (15 × 400 ms), so the
    // replica was already at the top and never a block further.
    const proc = spawn('bash', [join(ROOT, 'scripts', 'demo-live.sh')], {
      cwd: ROOT, env: { ...cleanEnv(), DEMO: 'wasm', PORT: String(port), START: '350', BLOCK_MS: '1000' }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    proc.stderr.setEncoding('utf8').on('data', (t: string) => { err += t; });
    proc.stdout.resume();
    const exited = new Promise<number | null>((done) => proc.once('exit', (code) => done(code)));
    try {
      const url = `http://127.0.0.1:${port}`;
      const h0 = await eventually('the replica served', 60_000, async () => statusHeight(url));
      expect(h0, 'the replica served before the chain reached its top').to.be.below(400);
      const later = await eventually('the replica a block further', 30_000, async () => { const h = await statusHeight(url); return h > h0 ? h : undefined; });
      expect(later).to.be.within(351, 400);
      const page = await get(`${url}/`, { accept: 'text/html' });
      expect(page.status).to.equal(200);
      expect(page.body).to.contain('indexer-api explorer');
      const source = /\((http:\/\/127\.0\.0\.1:\d+)\/status\)/.exec(err)?.[1] as string;
      const replica = /follow appends each block to (\S+)\/replica\.sqlite/.exec(err)?.[1] as string;
      expect(source).to.be.a('string');
      expect(existsSync(replica)).to.equal(true);
      proc.kill('SIGINT');
      expect(await exited).to.equal(130);
      expect(existsSync(replica), 'the replica is removed').to.equal(false);
      for (const u of [url, source]) {
        let answered = true;
        try { await fetch(`${u}/health`); } catch { answered = false; }
        expect(answered, `${u} stopped`).to.equal(false);
      }
    } finally {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await exited;
    }
  });

  /** The child process of `parent` whose command line contains `word` (Linux /proc). */
  function childWith(parent: number, word: string): number | undefined {
    for (const task of readdirSync(`/proc/${parent}/task`)) {
      for (const pid of readFileSync(`/proc/${parent}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter((p) => p !== '')) {
        if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(word)) return Number(pid);
      }
    }
    return undefined;
  }

  it('make demo-live on a busy port: one line naming it, exit 1, before anything is started or imported', async () => {
    const busy = createServer();
    await new Promise<void>((done) => busy.listen(0, '127.0.0.1', done));
    const port = (busy.address() as { port: number }).port;
    try {
      const started = Date.now();
      const r = spawnSync('bash', [join(ROOT, 'scripts', 'demo-live.sh')], { cwd: ROOT, env: { ...cleanEnv(), DEMO: 'wasm', PORT: String(port) }, encoding: 'utf8', timeout: 30_000 });
      expect(r.status, r.stderr).to.equal(1);
      expect(r.stderr).to.equal(`demo-live: port ${port} on 127.0.0.1 is in use (another server?): stop what holds it, or pick another, e.g. make demo-live PORT=9000\n`);
      expect(r.stdout).to.equal('');
      // no import ran: a node start to probe the port, nothing more
      expect(Date.now() - started).to.be.below(5_000);
    } finally {
      busy.close();
    }
  });

  it('make demo-live: any one of its processes stopping stops the demo, with one line naming it', async () => {
    const port = await freePort();
    const proc = spawn('bash', [join(ROOT, 'scripts', 'demo-live.sh')], {
      cwd: ROOT, env: { ...cleanEnv(), DEMO: 'wasm', PORT: String(port), START: '390', BLOCK_MS: '400' }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    proc.stderr.setEncoding('utf8').on('data', (t: string) => { err += t; });
    proc.stdout.resume();
    const exited = new Promise<number | null>((done) => proc.once('exit', (code) => done(code)));
    try {
      const url = `http://127.0.0.1:${port}`;
      await eventually('the replica served', 60_000, async () => statusHeight(url));
      const source = /\((http:\/\/127\.0\.0\.1:\d+)\/status\)/.exec(err)?.[1] as string;
      const replica = /follow appends each block to (\S+)\/replica\.sqlite/.exec(err)?.[1] as string;
      // the source stopping (before: the follower logged "connection refused" forever)
      const sourcePid = childWith(proc.pid as number, '--start-height');
      expect(sourcePid, 'the source process').to.be.a('number');
      process.kill(sourcePid as number, 'SIGTERM');
      expect(await exited).to.equal(1);
      // the banner, then the one line of the stop
      const lines = err.split('\n').filter((l) => l.startsWith('demo-live: ') && !l.includes(' demo chain grows '));
      expect(lines, err).to.have.length(1);
      expect(lines[0]).to.match(/^demo-live: the source \(serve --start-height\) stopped \(exit status 0\), so the demo stops/);
      expect(existsSync(replica), 'the replica is removed').to.equal(false);
      for (const u of [url, source]) {
        let answered = true;
        try { await fetch(`${u}/health`); } catch { answered = false; }
        expect(answered, `${u} stopped`).to.equal(false);
      }
    } finally {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await exited;
    }
  });

  it('refuses what it cannot grow, as usage errors (exit 2)', () => {
    const run = (args: string[]): { code: number | null; err: string } => {
      const r = spawnSync(process.execPath, [CLI, 'serve', ...args, '--get', '/status'], { cwd: ROOT, env: cleanEnv(), encoding: 'utf8' });
      return { code: r.status, err: r.stderr.split('\n')[0] };
    };
    expect(run(['--db', DEMO('move'), '--db', DEMO('wasm'), '--start-height', '10'])).to.deep.equal({ code: 2, err: 'indexer-api: --start-height grows one chain from one file, not 2 --db files' });
    expect(run(['--block-ms', '100'])).to.deep.equal({ code: 2, err: 'indexer-api: --block-ms goes with --start-height (the height a growing demo chain starts at)' });
    expect(run(['--start-height', '0'])).to.deep.include({ code: 2 });
    expect(run(['--demo', 'move', '--start-height', '10', '--block-ms', '5'])).to.deep.include({ code: 2 });
  });
});
