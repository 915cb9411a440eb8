import { expect } from 'chai';
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../../src/assets';
import { runImport } from '../../src/import/run';
import { cleanStaleTemps } from '../../src/snapshot/store';
import { generateDump } from '../../src/generate';
import { openSnapshot } from '../../src/snapshot/open';
import { demoDump } from '../helpers/same-answers';

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

  it('import --base: SIGKILL at random moments and SIGINT / SIGTERM leave --out (= --base) as it was; the base copy is cleaned', async () => {
    // The big chain up to half its blocks as the base, the rest as the update.
    const lines = (f: string): string[] => readFileSync(join(big, f), 'utf8').split('\n').filter((l) => l !== '');
    const blocks = lines('blocks.ndjson');
    const half = Math.floor(blocks.length / 2);
    const baseTxs = blocks.slice(0, half).reduce((a, l) => a + (JSON.parse(l) as { tx_count: number }).tx_count, 0);
    const txs = lines('txs.ndjson');
    const maxSeq = (JSON.parse(txs[baseTxs - 1]) as { sequence: number }).sequence;
    const links = lines('token_txs.ndjson');
    const seqOf = (l: string): number => (JSON.parse(l) as { sequence: number }).sequence;
    const part = (name: string, files: Record<string, string[]>): string => {
      const dir = join(work, name);
      mkdirSync(dir, { recursive: true });
      for (const [f, rows] of Object.entries(files)) writeFileSync(join(dir, f), rows.map((r) => r + '\n').join(''));
      return dir;
    };
    const baseDir = part('half-base', {
      'meta.ndjson': lines('meta.ndjson'), 'validators.ndjson': lines('validators.ndjson'), 'blocks.ndjson': blocks.slice(0, half),
      'txs.ndjson': txs.slice(0, baseTxs), 'token_txs.ndjson': links.filter((l) => seqOf(l) <= maxSeq),
    });
    const update = part('half-update', {
      'blocks.ndjson': blocks.slice(half), 'txs.ndjson': txs.slice(baseTxs), 'token_txs.ndjson': links.filter((l) => seqOf(l) > maxSeq),
      'collections.ndjson': lines('collections.ndjson'), 'tokens.ndjson': lines('tokens.ndjson'),
    });
    const chain = join(work, 'half.sqlite');
    await runImport({ fromDump: baseDir, out: chain, force: false, quiet: true, json: false });
    const before = sha(chain);
    const t0 = Date.now();
    const probe = join(work, 'half-probe.sqlite');
    await runImport({ base: chain, fromDump: update, out: probe, force: false, quiet: true, json: false });
    const seconds = (Date.now() - t0) / 1000;
    rmSync(probe);
    const args = ['--base', chain, '--from-dump', update, '--out', chain, '--force', '--quiet'];
    for (let i = 0; i < 4; i++) {
      const at = Math.round(((i + Math.random()) / 4) * seconds * 1000 * 1.1);
      const run = startImport(args);
      await new Promise((r) => setTimeout(r, at));
      run.child.kill('SIGKILL');
      const { signal } = await run.exited;
      const s = openSnapshot(chain, { verify: true });
      const count = s.meta.countTxs;
      s.close();
      if (signal === 'SIGKILL') expect(sha(chain) === before || count === txs.length, `killed at ${at} ms`).to.equal(true);
      // A run that finished made the update the new base: start again from the old one.
      if (sha(chain) !== before) await runImport({ fromDump: baseDir, out: chain, force: true, quiet: true, json: false });
    }
    const now = sha(chain);
    cleanStaleTemps(chain); // what the kills left (their pids are gone), so a new temp file is noticed
    expect(temps(work).filter((f) => f.startsWith('.half.sqlite'))).to.deep.equal([]);
    for (const sig of ['SIGINT', 'SIGTERM'] as const) {
      const run = startImport(args);
      await untilTempExists(work, 10_000);
      await new Promise((r) => setTimeout(r, 200));
      run.child.kill(sig);
      const { code } = await run.exited;
      expect(code, sig).to.equal(sig === 'SIGINT' ? 130 : 143);
      expect(temps(work).filter((f) => f.startsWith('.half.sqlite')), sig).to.deep.equal([]);
      expect(sha(chain), sig).to.equal(now);
    }
    // And the update then applies.
    const r = spawnSync(process.execPath, [CLI, 'import', ...args], { encoding: 'utf8' });
    expect(r.status, r.stderr).to.equal(0);
    expect(temps(work).filter((f) => f.startsWith('.half.sqlite'))).to.deep.equal([]);
    const s = openSnapshot(chain, { verify: true });
    expect(s.meta.countTxs).to.equal(txs.length);
    s.close();
  });

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
