import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { SCHEMA_VERSION } from '../../src/snapshot/schema';
import { cleanEnv, CLI, DEMO, ROOT } from '../helpers/serve';

/** `serve --port 0 …args`; resolves with stdout's first line once it is there. */
function serveFirstLine(args: string[]): Promise<{ first: string; stderr: () => string; stop(): Promise<number | null>; closeStdout(): void }> {
  const proc = spawn(process.execPath, [CLI, 'serve', '--port', '0', ...args], { cwd: ROOT, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.setEncoding('utf8').on('data', (s: string) => { stderr += s; });
  const exited = new Promise<number | null>((done) => proc.once('exit', (code) => done(code)));
  const lines = createInterface({ input: proc.stdout });
  return new Promise((resolve, reject) => {
    proc.once('exit', (code) => reject(new Error(`serve exited (${code}) before its first line: ${stderr}`)));
    lines.once('line', (first) => resolve({
      first,
      stderr: () => stderr,
      stop: async () => { proc.kill('SIGTERM'); return exited; },
      closeStdout: () => { lines.close(); proc.stdout.destroy(); },
    }));
  });
}

/** Waits until /ready answers 200 (the start-up quick check runs while the server listens). */
async function ready(url: string): Promise<void> {
  const until = Date.now() + 30_000;
  for (;;) {
    const res = await fetch(`${url}/ready`);
    await res.arrayBuffer();
    if (res.status === 200) break;
    if (Date.now() > until) throw new Error(`${url}/ready still answers ${res.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Waits (up to 30 s) until stderr holds `text`. The primary prints "serving … on URL" once every
 * worker has told it that it serves; /ready answering 200 from one worker says nothing about the
 * other, so on a busy machine (make test runs files in parallel) the line can come a while later.
 */
async function stderrHas(stderr: () => string, text: string): Promise<void> {
  const until = Date.now() + 30_000;
  while (!stderr().includes(text) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
}

async function status(url: string): Promise<{ chain_id: string }> {
  const res = await fetch(`${url}/status`);
  expect(res.status).to.equal(200);
  return await res.json() as { chain_id: string };
}

describe('serve --port 0: the first line of stdout names the free port the kernel picked', function () {
  this.timeout(60_000);

  for (const workers of ['1', '2']) {
    it(`prints "listening http://127.0.0.1:PORT" first, and serves there (--workers ${workers})`, async () => {
      const s = await serveFirstLine(['--db', DEMO('evm'), '--workers', workers]);
      try {
        const m = /^listening (http:\/\/127\.0\.0\.1:(\d+))$/.exec(s.first);
        expect(m, s.first).to.not.equal(null);
        expect(Number(m?.[2])).to.be.above(0);
        expect((await status(m?.[1] as string)).chain_id).to.equal('minievm-demo-1');
        // "serving … on URL" (stderr) is printed once the start-up quick check passed: /ready 200
        await ready(m?.[1] as string);
        await stderrHas(s.stderr, `on ${m?.[1]}`);
        expect(s.stderr()).to.include(`on ${m?.[1]}`);
      } finally {
        expect(await s.stop()).to.equal(0);
      }
    });
  }

  it('still writes the held log lines when it never listens (a cluster whose workers cannot open the file)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'indexer-api-listen-'));
    try {
      // a SQLite file with this build's user_version passes the primary's header check before
      // forking; the workers then fail to open it (no meta table)
      const bad = join(dir, 'no-meta.sqlite');
      const db = new Database(bad);
      db.pragma(`user_version = ${SCHEMA_VERSION}`);
      db.exec('CREATE TABLE t (a INTEGER)');
      db.close();
      const r = spawnSync(process.execPath, [CLI, 'serve', '--db', bad, '--workers', '2', '--port', '0'], { cwd: ROOT, encoding: 'utf8', env: cleanEnv() });
      expect(r.status).to.equal(1);
      const lines = r.stdout.split('\n').filter((l) => l !== '');
      expect(lines.some((l) => l.startsWith('listening'))).to.equal(false);
      const msgs = lines.map((l) => (JSON.parse(l) as { msg: string }).msg);
      expect(msgs.filter((m) => m === 'worker started')).to.have.length(2);
      expect(msgs[msgs.length - 1]).to.equal('stopped');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps serving after the reader of stdout went away (`serve --port 0 | head -n1`)', async () => {
    const s = await serveFirstLine(['--demo', 'wasm', '--workers', '1']);
    try {
      const url = s.first.slice('listening '.length);
      s.closeStdout();
      // each request logs a line to the closed pipe
      for (let i = 0; i < 5; i++) expect((await status(url)).chain_id).to.equal('miniwasm-demo-1');
      await new Promise((r) => setTimeout(r, 100));
      expect((await status(url)).chain_id).to.equal('miniwasm-demo-1');
    } finally {
      expect(await s.stop()).to.equal(0);
    }
  });
});
