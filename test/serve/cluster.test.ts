import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { copyFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanEnv, CLI, DEMO, get, getJson, LogLine, ROOT, serveTmp, smallSnapshots, startServe } from '../helpers/serve';

const pidsOf = (lines: LogLine[], msg: string): number[] => lines.filter((l) => l.msg === msg).map((l) => l.pid as number);

describe('serve --workers', function () {
  this.timeout(60_000);

  it('serves from 2 worker processes and exits 0 on SIGTERM once both have stopped', async () => {
    const s = await startServe(['--db', DEMO('wasm'), '--workers', '2']);
    expect(s.stderr).to.match(/on http:\/\/127\.0\.0\.1:\d+ \(2 workers\)\n$/);
    await s.until('2 workers listening', () => pidsOf(s.lines, 'listening').length === 2 || undefined);
    const workers = pidsOf(s.lines, 'listening');
    expect(new Set([...workers, s.proc.pid]).size).to.equal(3);
    for (let i = 0; i < 10; i++) expect((await get(`${s.url}/status`)).status).to.equal(200);
    expect(await s.stop()).to.deep.equal({ code: 0, signal: null });
    expect(pidsOf(s.lines, 'stopped').sort()).to.deep.equal([...workers, s.proc.pid].sort());
  });

  it('restarts a worker that crashed', async () => {
    const s = await startServe(['--db', DEMO('wasm'), '--workers', '2']);
    try {
      await s.until('2 workers listening', () => pidsOf(s.lines, 'listening').length === 2 || undefined);
      const [victim] = pidsOf(s.lines, 'listening');
      process.kill(victim, 'SIGKILL');
      const exited = await s.line('the crash', (l) => l.msg === 'worker exited; restarting it');
      expect(exited).to.include({ pid: victim, signal: 'SIGKILL' });
      await s.until('a third worker listening', () => pidsOf(s.lines, 'listening').length === 3 || undefined);
      for (let i = 0; i < 10; i++) expect((await get(`${s.url}/status`)).status).to.equal(200);
    } finally {
      expect(await s.stop()).to.deep.equal({ code: 0, signal: null });
    }
  });

  it('forwards SIGHUP to every worker (hot swap)', async () => {
    const [first, second] = await smallSnapshots();
    const db = join(serveTmp(), 'cluster.sqlite');
    copyFileSync(first.file, db);
    const s = await startServe(['--db', db, '--workers', '2', '--no-watch']);
    try {
      await s.until('2 workers listening', () => pidsOf(s.lines, 'listening').length === 2 || undefined);
      copyFileSync(second.file, `${db}.incoming`);
      renameSync(`${db}.incoming`, db);
      s.signal('SIGHUP');
      await s.until('both workers swapped', () => pidsOf(s.lines, 'snapshot swapped').length === 2 || undefined);
      expect(new Set(pidsOf(s.lines, 'snapshot swapped'))).to.deep.equal(new Set(pidsOf(s.lines, 'listening')));
      // fresh connections, spread over both workers
      for (let i = 0; i < 10; i++) expect((await getJson<{ height: number }>(`${s.url}/status`)).height).to.equal(second.height);
    } finally {
      expect(await s.stop()).to.deep.equal({ code: 0, signal: null });
    }
  });

  it('refuses to start, with one line and exit 1, on a file that is not a snapshot', () => {
    const bad = join(serveTmp(), 'garbage.sqlite');
    writeFileSync(bad, 'not a snapshot');
    const r = spawnSync(process.execPath, [CLI, 'serve', '--db', bad, '--workers', '2', '--port', '0'], { cwd: ROOT, encoding: 'utf8', env: cleanEnv() });
    expect(r.status).to.equal(1);
    expect(r.stderr).to.equal(`indexer-api: not a SQLite database: ${bad}\n`);
  });
});
