/**
 * `follow` and `serve` start in any order (issue #37): a serve checking its file at start holds
 * a read lock on it for as long as the check reads (≈7 s per GB: 40 minutes at 100 GB), and
 * follow's switch of the file to WAL mode needs it alone. Follow waits for it — saying so at
 * info, naming what it waits for — instead of exiting "database is locked" after SQLite's 5 s.
 * The check is made slow with the documented test hook INDEXER_TEST_CHECK_PASSES (the check run
 * N times in one read transaction: a file N times the size), so no gigabyte file is written.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { quickCheck } from '../../src/snapshot/quick-check';
import { CLI, cleanEnv, ROOT, ServeProcess } from '../helpers/serve';
import { demoCuts, eventually, FollowProcess, growingSource, GrowingSource, startFollow, statusHeight } from '../helpers/follow';

/** The check slowed to last at least about `ms` on this machine now (its fastest pass measured first). */
function passesFor(file: string, ms: number): number {
  quickCheck(file);
  let one = Infinity;
  for (let i = 0; i < 5; i++) {
    const t = process.hrtime.bigint();
    quickCheck(file);
    one = Math.min(one, Number(process.hrtime.bigint() - t) / 1e6);
  }
  return Math.ceil(ms / Math.max(0.5, one));
}

/** `p`, or a rejection naming `what` after `ms` (a line that never comes fails the test instead of hanging it). */
function within<T>(what: string, ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, fail) => { timer = setTimeout(() => fail(new Error(`no ${what} within ${ms} ms`)), ms); });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** `serve --db FILE` with its start-up check made `passes` times as long; resolves once it listens (the check then runs). */
async function serveListening(file: string, passes: number): Promise<ServeProcess> {
  const proc = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--workers', '1', '--db', file, '--commit-poll-ms', '50'], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...cleanEnv(), INDEXER_TEST_CHECK_PASSES: String(passes) },
  });
  const s = new ServeProcess(proc);
  const listening = await s.line('listening', (l) => l.msg === 'listening');
  s.url = String(listening.url);
  return s;
}

/** follow's log lines as JSON objects (its stderr off a terminal). */
function followLines(f: FollowProcess): Record<string, unknown>[] {
  return f.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('follow and serve start in any order, on a file whose start-up check is slow', function () {
  this.timeout(180_000);
  let tmp: string;
  let src: GrowingSource | undefined;
  before(() => { tmp = mkdtempSync(join(tmpdir(), 'indexer-api-start-order-')); });
  after(async () => { await src?.close(); rmSync(tmp, { recursive: true, force: true }); });

  it('serve first (checking for ~8 s): follow waits for the lock, says so at info, then follows; serve serves every batch', async () => {
    const { at, full } = await demoCuts();
    const db = join(tmp, 'serve-first.sqlite');
    copyFileSync(at.get(320) as string, db);
    src = await growingSource(full);
    const passes = passesFor(db, 8_000);
    const serve = await serveListening(db, passes);
    let follow: FollowProcess | undefined;
    try {
      follow = startFollow(['--db', db, '--from-api', src.url, '--interval', '100ms']);
      await within('waiting line from follow', 30_000, follow.until('the waiting line', /waiting for .*another process is reading it/));
      const waiting = followLines(follow).find((l) => /waiting for/.test(String(l.msg)));
      expect(waiting).to.include({ level: 'info' });
      expect(String(waiting?.msg)).to.contain(db).and.contain('start-up check').and.contain('WAL mode');
      // it waited for serve's check, not for nothing: the check was still running when it said so
      expect(serve.lines.some((l) => l.msg === 'snapshot verified'), 'serve still checking').to.equal(false);
      await within('end of the check', 120_000, serve.line('the check passed', (l) => l.msg === 'snapshot verified'));
      await within('switch to WAL', 30_000, follow.until('the switch', /is in WAL mode now \(waited/));
      await eventually('serve at the source height', 60_000, async () => (await statusHeight(serve.url)) === 400 || undefined);
      expect(follow.proc.exitCode, follow.stderr).to.equal(null);
      expect(await follow.stop('SIGTERM'), follow.stderr).to.deep.equal({ code: 0, signal: null });
      expect(follow.stderr).to.match(/stopped at height 400/);
    } finally {
      await follow?.stop('SIGKILL');
      await serve.stop();
      await src.close();
      src = undefined;
    }
  });

  it('follow first: serve started on the file follow writes checks it and serves every batch', async () => {
    const { at, full } = await demoCuts();
    const db = join(tmp, 'follow-first.sqlite');
    copyFileSync(at.get(250) as string, db);
    src = await growingSource(at.get(320) as string);
    const follow = startFollow(['--db', db, '--from-api', src.url, '--interval', '100ms']);
    let serve: ServeProcess | undefined;
    try {
      await within('the following line', 30_000, follow.until('following', /following api .* from height 250/));
      serve = await serveListening(db, passesFor(db, 2_000));
      await within('end of the check', 120_000, serve.line('the check passed', (l) => l.msg === 'snapshot verified'));
      await eventually('serve at 320', 60_000, async () => (await statusHeight((serve as ServeProcess).url)) === 320 || undefined);
      src.show(full);
      await eventually('serve at 400', 60_000, async () => (await statusHeight((serve as ServeProcess).url)) === 400 || undefined);
      expect(follow.stderr).to.not.match(/waiting for/);
      expect(await follow.stop('SIGTERM'), follow.stderr).to.deep.equal({ code: 0, signal: null });
    } finally {
      await follow.stop('SIGKILL');
      await serve?.stop();
      await src.close();
      src = undefined;
    }
  });
});
