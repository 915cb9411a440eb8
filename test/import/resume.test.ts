/**
 * A crawl that resumes (issue #43; docs/follow.md "A crawl that resumes"): `import --from-api`
 * killed (-9) at 20 %, 50 % and 80 % of its requests, or stopped by a source outage past its
 * retries, run again with the same options goes on from what it committed — the source answers
 * only a bounded number of requests twice — and ends with a file serving exactly what an
 * uninterrupted crawl's serves, every route family compared.
 */
import { expect } from 'chai';
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../../src/assets';
import { ImportOptions, runImport } from '../../src/import/run';
import { freeBytes } from '../../src/lib/paths';
import { crawlLoadPath, crawlStagingPath } from '../../src/sources/api/staging';
import type { VmType } from '../../src/lib/vm';
import { openSnapshot } from '../../src/snapshot/open';
import { demoDump, expectSameAnswers, Served, serveSnapshot } from '../helpers/same-answers';
import { eventually, startFollow, statusHeight } from '../helpers/follow';

/** The import module as compiled (this file runs from build/test/import/). */
const RUN = require.resolve('../../src/import/run');

/**
 * A proxy that counts the requests the source answered (a whole answer handed to the socket),
 * and can hold the k-th request to arrive unanswered and call `atK` (which kills the crawler), or
 * answer 503 to every request from the k-th on (an outage).
 */
interface Counting {
  url: string;
  answered: number;
  arrived: number;
  paths: string[];
  killAt?: { k: number; atK: () => void };
  outageFrom?: number;
  /** called as each request arrives, before it is forwarded */
  onArrive?: (n: number) => void;
  close(): Promise<void>;
}

async function countingProxy(target: string): Promise<Counting> {
  const held: ServerResponse[] = [];
  const state: Counting = { url: '', answered: 0, arrived: 0, paths: [], close: async () => undefined };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const n = ++state.arrived;
    state.onArrive?.(n);
    if (state.killAt && n === state.killAt.k) {
      held.push(res);
      state.killAt.atK();
      return;
    }
    if (state.outageFrom !== undefined && n >= state.outageFrom) {
      res.writeHead(503, { 'content-type': 'text/plain' }).end('down');
      return;
    }
    fetch(target + req.url).then(async (r) => {
      const body = Buffer.from(await r.arrayBuffer());
      res.on('finish', () => { state.answered++; state.paths.push(req.url ?? ''); });
      res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'text/plain' }).end(body);
    }, () => { res.writeHead(502).end(); });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () => new Promise<void>((r) => {
    for (const s of held) s.destroy();
    server.close(() => r());
    server.closeAllConnections();
  });
  return state;
}

/** runImport in a child process (so that it can be killed -9): its exit and stderr. */
function importChild(o: ImportOptions): { child: ChildProcess; exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> } {
  const script = `require(${JSON.stringify(RUN)}).runImport(JSON.parse(process.argv[1]))`
    + '.then(() => process.exit(0), (e) => { process.stderr.write(String(e && e.message) + "\\n"); process.exit(1); });';
  const child = spawn(process.execPath, ['-e', script, JSON.stringify(o)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => { stderr += d.toString(); });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal, stderr }));
  });
  return { child, exited };
}

function openSnapshotHeight(file: string): number {
  const s = openSnapshot(file);
  try { return s.meta.height; } finally { s.close(); }
}

function denomsOf(file: string): string[] {
  const s = openSnapshot(file);
  try {
    return s.db.prepare('SELECT denom FROM richlist_denoms ORDER BY denom').pluck().all() as string[];
  } finally {
    s.close();
  }
}

/**
 * The requests every run asks, besides what it has in flight: /status, the newest txs' size
 * (the free-space check) and (EVM) whether internal txs are indexed.
 */
const FIXED = 3;

describe('import --from-api resumes (kill -9, outage)', function () {
  this.timeout(600_000);
  const work = mkdtempSync(join(tmpdir(), 'indexer-api-resume-'));
  const served: Served[] = [];
  after(async () => {
    for (const s of served) await s.close();
    rmSync(work, { recursive: true, force: true });
  });

  /** The demo chain of `vm` served on 127.0.0.1, and the options of a crawl of it in small pages (many of them). */
  const set = new Map<VmType, { src: Served; options: (out: string, url: string) => ImportOptions }>();
  async function setUp(vm: VmType): Promise<{ src: Served; options: (out: string, url: string) => ImportOptions }> {
    let s = set.get(vm);
    if (!s) { s = await serveDemo(vm); set.set(vm, s); }
    return s;
  }

  async function serveDemo(vm: VmType): Promise<{ src: Served; options: (out: string, url: string) => ImportOptions }> {
    const dump = await demoDump(vm);
    const file = join(work, `${vm}-source.sqlite`);
    await runImport({ fromDump: dump, out: file, force: false, quiet: true, json: false });
    const src = await serveSnapshot(file);
    served.push(src);
    const denomContracts = join(dump, 'denom_contracts.ndjson');
    return {
      src,
      options: (out, url) => ({
        fromApi: url, out, force: false, quiet: true, json: false, concurrency: CONCURRENCY, crawlPage: 100, retries: 1, backoffMs: 5,
        denoms: denomsOf(file), denomContracts: existsSync(denomContracts) ? denomContracts : undefined,
      }),
    };
  }

  const CONCURRENCY = 3;
  /**
   * Asked twice at most: per worker, the request it was waiting on and what it had been answered
   * but not yet committed with it (a tx page waits for the two probes that check it), and FIXED.
   */
  const BOUND = 3 * CONCURRENCY + FIXED;

  for (const vm of ['wasm', 'evm'] as VmType[]) {
    const at = vm === 'wasm' ? '20 %, 50 %, 80 % of its requests and amid its tx pages' : '50 % of its requests';
    it(`${vm} demo: killed -9 at ${at}, each run again ends serving what an uninterrupted crawl serves; at most ${BOUND} requests asked twice`, async () => {
      const { src, options } = await setUp(vm);
      const proxy = await countingProxy(src.url);
      try {
        const whole = join(work, `${vm}-whole.sqlite`);
        const w = importChild(options(whole, proxy.url));
        const wr = await w.exited;
        expect(wr.code, wr.stderr).to.equal(0);
        const total = proxy.answered;
        expect(total, 'requests of a whole crawl').to.be.greaterThan(100);
        expect(existsSync(crawlStagingPath(whole)), 'staging removed after success').to.equal(false);
        // the middle of the tx pages (the sequence search's 1-row probes excluded)
        const txPages = proxy.paths.map((p, i) => [p, i] as const).filter(([p]) => p.startsWith('/indexer/tx/v1/txs?pagination.limit=100&'));
        expect(txPages.length, 'tx pages of 100').to.be.greaterThan(10);
        const amidTxs = txPages[Math.floor(txPages.length / 2)][1] / total;
        const fractions = vm === 'wasm' ? [0.2, 0.5, 0.8, amidTxs] : [0.5];
        for (const f of fractions) {
          const out = join(work, `${vm}-resumed-${f}.sqlite`);
          proxy.answered = 0;
          proxy.arrived = 0;
          proxy.paths = [];
          const k = Math.round(total * f);
          const first = importChild(options(out, proxy.url));
          proxy.killAt = { k, atK: () => { first.child.kill('SIGKILL'); } };
          const fr = await first.exited;
          proxy.killAt = undefined;
          expect(fr.signal, `killed at request ${k}`).to.equal('SIGKILL');
          expect(existsSync(out)).to.equal(false);
          expect(existsSync(crawlStagingPath(out)), 'the crawl so far is kept').to.equal(true);
          const before = proxy.answered;
          const again = importChild(options(out, proxy.url));
          const ar = await again.exited;
          expect(ar.code, ar.stderr).to.equal(0);
          // answered in both runs, less what a whole crawl is answered
          const twice = proxy.answered - total;
          expect(twice, `killed at ${f * 100} % (request ${k} of ${total}): requests answered twice`).to.be.at.most(BOUND);
          if (process.env.RESUME_REPORT) process.stderr.write(`${vm} killed at request ${k} of ${total} (${proxy.paths[k - 1]?.slice(0, 40)}): ${twice} answered twice\n`);
          expect(proxy.answered - before, 'the resumed run asked less than a whole crawl').to.be.below(total - k + BOUND + 1);
          expect(existsSync(crawlStagingPath(out))).to.equal(false);
          await expectSameAnswers(whole, out, 4000);
        }
      } finally {
        await proxy.close();
      }
    });
  }

  /** A file's size with its -wal and -journal (0 when missing). */
  const sizeOf = (f: string): number => [f, `${f}-wal`, `${f}-journal`].reduce((n, x) => n + (existsSync(x) ? statSync(x).size : 0), 0);

  it('the staging shrinks as the load commits its txs: at the load\'s last commit it holds none of the tx pages', async () => {
    const { src, options } = await setUp('wasm');
    const out = join(work, 'shrink.sqlite');
    const staging = crawlStagingPath(out);
    const sizes: { before: number; after: number; load: number }[] = [];
    await runImport({
      ...options(out, src.url), loadCheckpointTxs: 200,
      transform: (source) => {
        const rl = source.resumableLoad;
        expect(rl, 'a crawl staged for a resumable load').to.not.equal(undefined);
        return { ...source, resumableLoad: rl && { ...rl, loaded: (t: number) => {
          const before = sizeOf(staging);
          rl.loaded(t);
          sizes.push({ before, after: sizeOf(staging), load: sizeOf(crawlLoadPath(out)) });
        } } };
      },
    });
    expect(sizes.length, 'commits of the load').to.be.greaterThan(5);
    if (process.env.RESUME_REPORT) process.stderr.write(`staging and load after each commit: ${JSON.stringify(sizes)}\n`);
    // it falls at every commit that let tx pages go (the last one has none left to let go, or one page)
    for (const [i, c] of sizes.slice(0, -1).entries()) expect(c.after, `staging after commit ${i + 1} of ${sizes.length}`).to.be.below(c.before);
    // the tx pages are most of the demo staging: after the last commit it is well under what it was after the first
    const last = sizes[sizes.length - 1].after;
    expect(last, `staging ${sizes[0].after} bytes after the first commit, ${last} after the last`).to.be.below(sizes[0].after * 0.6);
    expect(existsSync(staging)).to.equal(false);
    expect(existsSync(crawlLoadPath(out))).to.equal(false);
  });

  it('killed -9 amid the load (its staging already shrunk): run again, it goes on from the load\'s last commit without asking the source anything, and serves what an uninterrupted crawl serves; a finished load not yet renamed is put in place', async () => {
    const { src, options } = await setUp('wasm');
    const proxy = await countingProxy(src.url);
    try {
      const whole = join(work, 'load-whole.sqlite');
      await runImport(options(whole, proxy.url));
      const out = join(work, 'load-killed.sqlite');
      const staging = crawlStagingPath(out);
      const first = importChild({ ...options(out, proxy.url), loadCheckpointTxs: 100 });
      // killed once the load has committed and the staging let txs go (it shrank)
      let peak = 0;
      let killed = false;
      const timer = setInterval(() => {
        const n = sizeOf(staging);
        if (existsSync(crawlLoadPath(out)) && peak > 0 && n < peak * 0.9) { killed = true; first.child.kill('SIGKILL'); }
        peak = Math.max(peak, n);
      }, 5);
      const fr = await first.exited;
      clearInterval(timer);
      expect(killed && fr.signal, 'killed amid the load').to.equal('SIGKILL');
      expect(existsSync(out)).to.equal(false);
      expect(existsSync(crawlLoadPath(out)), 'the load so far is kept').to.equal(true);
      proxy.answered = 0;
      const again = importChild({ ...options(out, proxy.url), loadCheckpointTxs: 100, quiet: false });
      const ar = await again.exited;
      expect(ar.code, ar.stderr).to.equal(0);
      expect(ar.stderr).to.include('resuming the load kept in');
      expect(proxy.answered, 'requests of the resumed run').to.equal(0);
      expect(existsSync(staging)).to.equal(false);
      expect(existsSync(crawlLoadPath(out))).to.equal(false);
      await expectSameAnswers(whole, out, 4000);

      // killed after the load's last commit, before its rename (a finished file where the load
      // was kept): the next run checks it and puts it in place, asking nothing
      const out2 = join(work, 'load-finished.sqlite');
      const second = importChild({ ...options(out2, proxy.url), loadCheckpointTxs: 100 });
      let peak2 = 0;
      const timer2 = setInterval(() => {
        const n = sizeOf(crawlStagingPath(out2));
        if (existsSync(crawlLoadPath(out2)) && peak2 > 0 && n < peak2 * 0.9) second.child.kill('SIGKILL');
        peak2 = Math.max(peak2, n);
      }, 5);
      const sr = await second.exited;
      clearInterval(timer2);
      expect(sr.signal, 'killed amid the load').to.equal('SIGKILL');
      rmSync(`${crawlLoadPath(out2)}-journal`, { force: true });
      copyFileSync(whole, crawlLoadPath(out2));
      proxy.answered = 0;
      const third = importChild(options(out2, proxy.url));
      const tr = await third.exited;
      expect(tr.code, tr.stderr).to.equal(0);
      expect(proxy.answered, 'requests of the run that found the finished load').to.equal(0);
      expect(existsSync(crawlStagingPath(out2))).to.equal(false);
      expect(existsSync(crawlLoadPath(out2))).to.equal(false);
      await expectSameAnswers(whole, out2, 4000);
    } finally {
      await proxy.close();
    }
  });

  it('a source outage past the retries: the error says the crawl is kept; the same command goes on from it', async () => {
    const { src, options } = await setUp('wasm');
    const proxy = await countingProxy(src.url);
    try {
      const whole = join(work, 'outage-whole.sqlite');
      await runImport(options(whole, proxy.url));
      const total = proxy.answered;
      proxy.answered = 0;
      proxy.arrived = 0;
      const out = join(work, 'outage.sqlite');
      proxy.outageFrom = Math.round(total * 0.4);
      let err: Error | undefined;
      try { await runImport(options(out, proxy.url)); } catch (e) { err = e as Error; }
      expect(err?.message).to.include('HTTP 503');
      expect(err?.message).to.include(`the crawl so far is kept in ${crawlStagingPath(out)}: the next run of this import goes on from it`);
      expect(existsSync(out)).to.equal(false);
      proxy.outageFrom = undefined;
      const before = proxy.answered;
      await runImport(options(out, proxy.url));
      expect(before, 'answered before the outage').to.be.greaterThan(0);
      expect(proxy.answered - total, 'requests answered twice').to.be.at.most(BOUND);
      await expectSameAnswers(whole, out, 4000);
      expect(readdirSync(work).filter((f) => f.endsWith('.crawl'))).to.deep.equal([]);
    } finally {
      await proxy.close();
    }
  });

  /** A tmpfs of `size` at `dir` (root only: the test is skipped, saying so, where it cannot be mounted); its unmount. */
  function tmpfs(dir: string, size: string, ctx: Mocha.Context): () => void {
    mkdirSync(dir, { recursive: true });
    const m = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { encoding: 'utf8' });
    if (m.status !== 0) {
      console.log(`      SKIPPED: cannot mount a tmpfs here (${(m.stderr || m.error?.message || '').trim()})`);
      ctx.skip();
    }
    return () => { spawnSync('umount', [dir]); };
  }

  it('an import that cannot fit says so before it reads the txs, with the free space and the estimate, and exits 1', async function () {
    const { src } = await setUp('wasm');
    const mnt = join(work, 'small');
    const umount = tmpfs(mnt, '1m', this);
    try {
      // (not spawnSync: the source is served by this process)
      const child = spawn(process.execPath, [join(ROOT, 'bin', 'indexer-api'), 'import', '--from-api', src.url, '--out', join(mnt, 'chain.sqlite'), '--quiet'],
        { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr?.on('data', (d: Buffer) => { stderr += d.toString(); });
      const status = await new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      const r = { status, stderr };
      expect(r.status, r.stderr).to.equal(1);
      expect(r.stderr).to.match(/^indexer-api import: --out \S+chain\.sqlite: [\d.]+ MB free on the device of \S+, the crawl of 3000 txs in \d+ blocks \(its staging and the snapshot; \d+ bytes a tx, from the newest txs' mean size of \d+ bytes\) needs about [\d.]+ MB: free some space or name a path on another device/);
      expect(r.stderr.split('\n').filter(Boolean)).to.have.length(1);
    } finally {
      umount();
    }
  });

  it('a disk that fills up amid the crawl: the error says so and that the crawl is kept; with room again the same command goes on from it', async function () {
    const { src, options } = await setUp('wasm');
    const mnt = join(work, 'fills');
    const umount = tmpfs(mnt, '64m', this);
    const proxy = await countingProxy(src.url);
    try {
      const whole = join(work, 'disk-whole.sqlite');
      await runImport(options(whole, proxy.url));
      const total = proxy.answered;
      proxy.answered = 0;
      const out = join(mnt, 'chain.sqlite');
      const ballast = join(mnt, 'ballast');
      // amid the tx pages: the rest of the tmpfs taken (a file of its free bytes, less a page or two)
      proxy.onArrive = (n) => {
        if (n === 60) writeFileSync(ballast, Buffer.alloc(Math.max(0, (freeBytes(mnt) ?? 0) - 8192)));
      };
      proxy.arrived = 0;
      let err: Error | undefined;
      try { await runImport(options(out, proxy.url)); } catch (e) { err = e as Error; }
      proxy.onArrive = undefined;
      expect(err?.message).to.match(/^no space left on the device of /);
      expect(err?.message).to.include(`the crawl so far is kept in ${crawlStagingPath(out)}: the next run of this import goes on from it`);
      rmSync(ballast);
      const before = proxy.answered;
      expect(before).to.be.greaterThan(40);
      await runImport(options(out, proxy.url));
      expect(proxy.answered - total, 'requests answered twice').to.be.at.most(BOUND);
      await expectSameAnswers(whole, out, 4000);
    } finally {
      await proxy.close();
      umount();
    }
  });

  it('follow on a missing --db, killed -9 amid its first import, run again goes on from the kept crawl and then follows', async () => {
    const { src } = await setUp('wasm');
    const proxy = await countingProxy(src.url);
    const db = join(work, 'followed.sqlite');
    const args = ['--db', db, '--from-api', proxy.url, '--interval', '500ms', '--concurrency', '3', '--richlist-interval', '0', '--collections-audit-interval', '0'];
    try {
      const first = startFollow(args);
      proxy.killAt = { k: 250, atK: () => { first.proc.kill('SIGKILL'); } };
      const fr = await first.exited;
      proxy.killAt = undefined;
      expect(fr.signal).to.equal('SIGKILL');
      expect(existsSync(db)).to.equal(false);
      expect(existsSync(crawlStagingPath(db)), 'the first import\'s crawl is kept').to.equal(true);
      const answered = proxy.answered;
      const again = startFollow(args);
      try {
        await again.until('the resumed crawl', /resuming the crawl of .* carried over \d+ blocks, \d+ txs/);
        const height = await statusHeight(src.url);
        await eventually('the followed file at the source\'s height', 120_000, async () => existsSync(db)
          && openSnapshotHeight(db) === height);
      } finally {
        await again.stop();
      }
      expect(answered).to.be.greaterThan(200);
      expect(existsSync(crawlStagingPath(db))).to.equal(false);
      const whole = join(work, 'follow-whole.sqlite');
      await runImport({ fromApi: src.url, out: whole, force: false, quiet: true, json: false, concurrency: 3 });
      await expectSameAnswers(whole, db, 4000);
    } finally {
      await proxy.close();
    }
  });

  it('a kept crawl of another chain is not continued: the error names both chains', async () => {
    const wasm = await setUp('wasm');
    const evm = await setUp('evm');
    const proxy = await countingProxy(wasm.src.url);
    try {
      const out = join(work, 'other-chain.sqlite');
      proxy.outageFrom = 40;
      await runImport(wasm.options(out, proxy.url)).catch(() => undefined);
      expect(existsSync(crawlStagingPath(out))).to.equal(true);
      let err: Error | undefined;
      // the same options, another source
      try { await runImport(wasm.options(out, evm.src.url)); } catch (e) { err = e as Error; }
      expect(err?.message).to.match(/serves chain "[^"]+", the crawl kept in .* is of chain "[^"]+"/);
      expect(err?.message).to.include(`${evm.src.snapshot.meta.chainId}`);
      expect(err?.message).to.include(`${wasm.src.snapshot.meta.chainId}`);
    } finally {
      await proxy.close();
    }
  });
});
