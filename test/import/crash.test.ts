import { expect } from 'chai';
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../../src/assets';
import { cleanStaleTemps, runImport } from '../../src/commands/import';
import { generateDump } from '../../src/generate';
import { openSnapshot } from '../../src/snapshot/open';
import { demoDump } from './helpers/serve';

const CLI = join(ROOT, 'bin', 'indexer-api');
const sha = (f: string): string => createHash('sha256').update(readFileSync(f)).digest('hex');
const temps = (dir: string): string[] => readdirSync(dir).filter((f) => f.includes('.tmp-'));

function startImport(args: string[]): { child: ChildProcess; exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> } {
  const child = spawn(process.execPath, [CLI, 'import', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => { stderr += d.toString(); });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal, stderr }));
  });
  return { child, exited };
}

async function untilTempExists(dir: string, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (temps(dir).length === 0) {
    if (Date.now() > end) throw new Error('the import never created its temporary file');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('import crash safety', function () {
  this.timeout(300_000);
  const work = mkdtempSync(join(tmpdir(), 'indexer-api-import-crash-'));
  const big = join(work, 'big');
  const out = join(work, 'chain.sqlite');
  let fullSeconds = 0;

  before(async () => {
    await generateDump({ vm: 'wasm', out: big, preset: 'scale', txs: 20_000, seed: 7 });
    // A complete previous snapshot that every interrupted run must leave as it was.
    await runImport({ fromDump: await demoDump('wasm'), out, force: false, quiet: true, json: false });
    const t0 = Date.now();
    const probe = join(work, 'timing.sqlite');
    await runImport({ fromDump: big, out: probe, force: false, quiet: true, json: false });
    fullSeconds = (Date.now() - t0) / 1000;
    rmSync(probe);
  });

  after(() => rmSync(work, { recursive: true, force: true }));

  it('SIGKILL at random moments (5 times): the previous --out still opens verified; the next run removes the leftovers', async () => {
    const before = sha(out);
    const moments: number[] = [];
    for (let i = 0; i < 5; i++) {
      // Spread over the whole run (load, index, check, rename), incl. right at the start.
      const at = Math.round(((i + Math.random()) / 5) * fullSeconds * 1000 * 1.1);
      moments.push(at);
      const run = startImport(['--from-dump', big, '--out', out, '--force', '--quiet']);
      await new Promise((r) => setTimeout(r, at));
      run.child.kill('SIGKILL');
      const { signal } = await run.exited;
      // A run can finish before its kill: then --out is the new snapshot, which must open too.
      const s = openSnapshot(out, { verify: true });
      const count = s.meta.countTxs;
      s.close();
      if (signal === 'SIGKILL') expect(sha(out) === before || count === 20_000, `killed at ${at} ms`).to.equal(true);
    }
    // The next run (here: the demo again) cleans what the killed ones left, then succeeds.
    const r = spawnSync(process.execPath, [CLI, 'import', '--from-dump', await demoDump('wasm'), '--out', out, '--force', '--quiet'], { encoding: 'utf8' });
    expect(r.status, r.stderr).to.equal(0);
    expect(temps(work), `kills at ${moments.join(', ')} ms`).to.deep.equal([]);
    openSnapshot(out, { verify: true }).close();
  });

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`${signal} mid-import removes the temporary file, exits ${signal === 'SIGINT' ? 130 : 143}, --out untouched`, async () => {
      const before = sha(out);
      const run = startImport(['--from-dump', big, '--out', out, '--force', '--quiet']);
      await untilTempExists(work, 10_000);
      await new Promise((r) => setTimeout(r, 300));
      run.child.kill(signal);
      const { code } = await run.exited;
      expect(code).to.equal(signal === 'SIGINT' ? 130 : 143);
      expect(temps(work)).to.deep.equal([]);
      expect(sha(out)).to.equal(before);
    });
  }

  it('a temporary file of a live import is not touched by the cleaner; one of a dead pid is', () => {
    const live = join(work, `.chain.sqlite.tmp-${process.pid}-0badcafe`);
    const dead = join(work, '.chain.sqlite.tmp-999999999-deadbeef');
    const deadJournal = `${dead}-journal`;
    const other = join(work, '.other.sqlite.tmp-999999999-deadbeef');
    for (const f of [live, dead, deadJournal, other]) writeFileSync(f, 'x');
    expect(cleanStaleTemps(out).sort()).to.deep.equal(['.chain.sqlite.tmp-999999999-deadbeef', '.chain.sqlite.tmp-999999999-deadbeef-journal']);
    expect(temps(work).sort()).to.deep.equal(['.chain.sqlite.tmp-' + process.pid + '-0badcafe', '.other.sqlite.tmp-999999999-deadbeef'].sort());
    rmSync(live);
    rmSync(other);
  });

  it('--json prints one summary object on stdout, --quiet prints nothing', async () => {
    const dump = await demoDump('move');
    const o1 = join(work, 'json.sqlite');
    const r = spawnSync(process.execPath, [CLI, 'import', '--from-dump', dump, '--out', o1, '--json'], { encoding: 'utf8' });
    expect(r.status, r.stderr).to.equal(0);
    expect(r.stderr).to.equal('');
    const summary = JSON.parse(r.stdout) as { out: string; records: Record<string, number>; stages: { name: string; rows: number; seconds: number }[]; seconds: number };
    expect(summary.out).to.equal(o1);
    expect(summary.records.txs).to.equal(3000);
    expect(summary.stages.map((s) => s.name)).to.include.members(['meta', 'blocks', 'txs', 'indexes', 'integrity check']);
    expect(summary.stages.find((s) => s.name === 'txs')?.rows).to.equal(3000);
    const q = spawnSync(process.execPath, [CLI, 'import', '--from-dump', dump, '--out', o1, '--force', '--quiet'], { encoding: 'utf8' });
    expect(q.status, q.stderr).to.equal(0);
    expect(q.stdout + q.stderr).to.equal('');
  });
});
