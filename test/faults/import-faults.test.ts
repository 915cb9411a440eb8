import { expect } from 'chai';
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, statSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../../src/assets';
import { generateDump } from '../../src/generate';
import { openSnapshot } from '../../src/snapshot/open';
import { demoDump } from '../helpers/same-answers';
import { faultPoints, prng } from '../helpers/faults';

const CLI = join(ROOT, 'bin', 'indexer-api');
const sha = (f: string): string => createHash('sha256').update(readFileSync(f)).digest('hex');
const leftovers = (dir: string): string[] => readdirSync(dir).filter((f) => f.includes('.tmp-'));

interface Run { child: ChildProcess; exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> }

function startImport(args: string[]): Run {
  const child = spawn(process.execPath, [CLI, 'import', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => { stderr += d.toString(); });
  return { child, exited: new Promise((done) => child.once('exit', (code, signal) => done({ code, signal, stderr }))) };
}

describe('faults: interrupted and starved imports', function () {
  this.timeout(900_000);
  const work = mkdtempSync(join(tmpdir(), 'indexer-api-faults-import-'));
  const big = join(work, 'big');
  const out = join(work, 'chain.sqlite');
  let fullMs = 0;

  before(async () => {
    await generateDump({ vm: 'wasm', out: big, preset: 'scale', txs: 4_000, seed: 11 });
    spawnSync(process.execPath, [CLI, 'import', '--from-dump', await demoDump('move'), '--out', out, '--quiet'], { encoding: 'utf8' });
    const t0 = Date.now();
    const r = spawnSync(process.execPath, [CLI, 'import', '--from-dump', big, '--out', join(work, 'probe.sqlite'), '--quiet'], { encoding: 'utf8' });
    expect(r.status, r.stderr).to.equal(0);
    fullMs = Date.now() - t0;
    rmSync(join(work, 'probe.sqlite'));
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  it(`SIGKILL at ${faultPoints()} random points: the old snapshot is byte-identical (or the new one complete), no temporary file survives the next run`, async () => {
    const random = prng(Number(process.env.FAULT_SEED ?? 16));
    let killed = 0;
    for (let i = 0; i < faultPoints(); i++) {
      const at = Math.round(random() * fullMs * 1.05);
      const before = sha(out);
      const run = startImport(['--from-dump', big, '--out', out, '--force', '--quiet']);
      await new Promise((r) => setTimeout(r, at));
      run.child.kill('SIGKILL');
      const { signal } = await run.exited;
      if (signal === 'SIGKILL') killed++;
      // Either the old file, byte for byte, or (the kill came after the rename, or never came)
      // the complete new one: never anything in between.
      if (sha(out) !== before) {
        const s = openSnapshot(out, { verify: true });
        expect(s.meta.countTxs, `killed at ${at} ms`).to.equal(4_000);
        s.close();
      }
    }
    console.log(`      ${killed} of ${faultPoints()} runs killed mid-import (points spread over ${fullMs} ms)`);
    const r = spawnSync(process.execPath, [CLI, 'import', '--from-dump', big, '--out', out, '--force', '--quiet'], { encoding: 'utf8' });
    expect(r.status, r.stderr).to.equal(0);
    expect(leftovers(work)).to.deep.equal([]);
    openSnapshot(out, { verify: true }).close();
  });

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`${signal} mid-import: one line says what happened and that the old snapshot is intact`, async () => {
      const before = sha(out);
      const run = startImport(['--from-dump', big, '--out', out, '--force', '--quiet']);
      while (leftovers(work).length === 0) await new Promise((r) => setTimeout(r, 10));
      await new Promise((r) => setTimeout(r, 200));
      run.child.kill(signal);
      const { code, stderr } = await run.exited;
      expect(code).to.equal(signal === 'SIGINT' ? 130 : 143);
      expect(stderr).to.equal(`indexer-api import: interrupted by ${signal}; ${out} is unchanged and the partial file was removed\n`);
      expect(sha(out)).to.equal(before);
      expect(leftovers(work)).to.deep.equal([]);
    });
  }

  it('SIGINT and SIGTERM at random points while the parser threads pack rows: each run exits with its code and its one line, never aborted', async () => {
    // A signal used to exit at once, terminating the parser threads wherever they were; one
    // terminated between creating a row's zlib stream and initialising it aborts the process
    // (Node 20, node_zlib.cc "close before init"). Now the threads finish what they hold first.
    const random = prng(Number(process.env.FAULT_SEED ?? 43));
    const before = sha(out);
    const points = Math.max(8, Math.round(faultPoints() / 4));
    let mid = 0;
    for (let i = 0; i < points; i++) {
      const signal = i % 2 === 0 ? 'SIGINT' : 'SIGTERM';
      const run = startImport(['--from-dump', big, '--out', out, '--force', '--quiet']);
      while (leftovers(work).length === 0) await new Promise((r) => setTimeout(r, 5));
      const at = Math.round(random() * fullMs * 0.6);
      await new Promise((r) => setTimeout(r, at));
      const running = leftovers(work).length > 0;
      run.child.kill(signal);
      const { code, signal: died, stderr } = await run.exited;
      if (running && code !== 0) mid++;
      expect(died, `${signal} at ${at} ms: ${stderr}`).to.equal(null);
      expect(stderr, `${signal} at ${at} ms`).to.not.match(/Assertion failed|FATAL ERROR|Native stack trace/);
      if (code === 0) continue; // it had finished
      expect(code, `${signal} at ${at} ms: ${stderr}`).to.equal(signal === 'SIGINT' ? 130 : 143);
      expect(stderr).to.equal(`indexer-api import: interrupted by ${signal}; ${out} is unchanged and the partial file was removed\n`);
      expect(sha(out)).to.equal(before);
      expect(leftovers(work)).to.deep.equal([]);
    }
    console.log(`      ${mid} of ${points} runs interrupted mid-import`);
    expect(mid, 'most signals land while the import runs').to.be.greaterThan(points / 2);
  });

  it('disk full (a small tmpfs): one line, the old snapshot intact, no temporary file', async function () {
    const mnt = join(work, 'tmpfs');
    mkdirSync(mnt);
    // room for the old snapshot and half of the new one: `out` holds the import of `big` by now
    // (the kill test's last run), so the import must run out of space, whatever the row format's size
    const oldSize = statSync(join(ROOT, 'fixtures', 'demo', 'move.sqlite')).size;
    const size = oldSize + Math.floor(statSync(out).size / 2);
    const m = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', mnt], { encoding: 'utf8' });
    if (m.status !== 0) {
      console.log(`      SKIPPED: cannot mount a tmpfs here (${(m.stderr || m.error?.message || '').trim()}); CI runs as root and mounts it`);
      this.skip();
    }
    try {
      const old = join(mnt, 'chain.sqlite');
      copyFileSync(join(ROOT, 'fixtures', 'demo', 'move.sqlite'), old);
      const before = sha(old);
      const r = spawnSync(process.execPath, [CLI, 'import', '--from-dump', big, '--out', old, '--force', '--quiet'], { encoding: 'utf8' });
      expect(r.status).to.equal(1);
      expect(r.stderr).to.equal(`indexer-api import: no space left on the device of ${mnt} (database or disk is full); ${old} is unchanged and the partial file was removed\n`);
      expect(sha(old)).to.equal(before);
      expect(leftovers(mnt)).to.deep.equal([]);
    } finally {
      spawnSync('umount', [mnt]);
    }
  });
});
