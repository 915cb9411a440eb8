/**
 * The fixture kit's figures (docs/ci.md): what a cut costs and how small and stable it is, how
 * fast a test gets a server, what the package weighs.
 *
 *   node build/bench/fixture-kit.js [--runs 5]
 *
 * - cut: `runCut --from-snapshot fixtures/demo/<vm>.sqlite` for two accounts (one with NFTs, one
 *   with a single tx), wall time median of --runs, the fixture's size, and whether every run gave
 *   the same bytes;
 * - startServer: in-process, from the call to the resolved promise (ready), then close(); median
 *   of 3 × --runs, on the Wasm demo;
 * - serve --port 0: from spawn() of `node bin/indexer-api serve --port 0 --workers 1` to the
 *   first stdout line, median of --runs;
 * - package: `npm pack --dry-run --json` sizes.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { runCut } from '../src/commands/import';
import { startServer } from '../src/index';
import { openDatabase } from '../src/sqlite';
import { pickAccounts } from '../test/helpers/fixture-accounts';

const ROOT = resolve(__dirname, '..', '..');
const DEMO = (vm: string): string => join(ROOT, 'fixtures', 'demo', `${vm}.sqlite`);
const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 5;

const median = (xs: number[]): number => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const ms = (t0: bigint): number => Number(process.hrtime.bigint() - t0) / 1e6;


function firstLine(): Promise<number> {
  const t0 = process.hrtime.bigint();
  const proc = spawn(process.execPath, [join(ROOT, 'bin', 'indexer-api'), 'serve', '--db', DEMO('wasm'), '--port', '0', '--workers', '1'], { stdio: ['ignore', 'pipe', 'ignore'] });
  return new Promise((done, fail) => {
    proc.once('exit', (code) => fail(new Error(`serve exited ${code}`)));
    createInterface({ input: proc.stdout }).once('line', (line) => {
      const t = ms(t0);
      if (!line.startsWith('listening http://')) fail(new Error(`first line: ${line}`));
      proc.removeAllListeners('exit');
      proc.once('exit', () => done(t));
      proc.kill('SIGTERM');
    });
  });
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'indexer-api-bench-kit-'));
  try {
    console.log(`fixture kit, ${RUNS} runs each (medians; shared 2-core machine, other jobs running)\n`);
    console.log('| demo | source size | cut wall (median) | fixture size | txs kept / all | same bytes every run |');
    console.log('|---|---|---|---|---|---|');
    for (const vm of ['move', 'wasm', 'evm']) {
      const accounts = pickAccounts(DEMO(vm));
      const times: number[] = [];
      const bytes: Buffer[] = [];
      for (let i = 0; i < RUNS; i++) {
        const out = join(dir, `${vm}-${i}.sqlite`);
        const t0 = process.hrtime.bigint();
        await runCut({ fromSnapshot: DEMO(vm), accounts, out, force: true, quiet: true, json: false });
        times.push(ms(t0));
        bytes.push(readFileSync(out));
      }
      const db = openDatabase(join(dir, `${vm}-0.sqlite`), { readonly: true });
      const kept = db.prepare('SELECT count(*) FROM txs').pluck().get() as number;
      db.close();
      const big = openDatabase(DEMO(vm), { readonly: true });
      const all = big.prepare('SELECT count(*) FROM txs').pluck().get() as number;
      big.close();
      console.log(`| ${vm} | ${(statSync(DEMO(vm)).size / 2 ** 20).toFixed(1)} MiB | ${(median(times) / 1000).toFixed(2)} s (min ${(Math.min(...times) / 1000).toFixed(2)}, max ${(Math.max(...times) / 1000).toFixed(2)}) | ${(bytes[0].length / 1024).toFixed(0)} KiB | ${kept} / ${all} | ${bytes.every((b) => b.equals(bytes[0])) ? 'yes' : 'NO'} |`);
    }

    const ready: number[] = [];
    const closing: number[] = [];
    for (let i = 0; i < RUNS * 3; i++) {
      const t0 = process.hrtime.bigint();
      const s = await startServer({ db: DEMO('wasm') });
      ready.push(ms(t0));
      const t1 = process.hrtime.bigint();
      await s.close();
      closing.push(ms(t1));
    }
    console.log(`\nstartServer({ db: wasm demo }) ready: median ${median(ready).toFixed(1)} ms (first ${ready[0].toFixed(1)} ms, loads the modules; min ${Math.min(...ready).toFixed(1)}, max ${Math.max(...ready).toFixed(1)}); close(): median ${median(closing).toFixed(1)} ms`);

    const lines: number[] = [];
    for (let i = 0; i < RUNS; i++) lines.push(await firstLine());
    console.log(`serve --port 0 --workers 1, spawn → first stdout line: median ${median(lines).toFixed(0)} ms (min ${Math.min(...lines).toFixed(0)}, max ${Math.max(...lines).toFixed(0)})`);

    const pack = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' });
    const [p] = JSON.parse(pack.stdout) as { size: number; unpackedSize: number; entryCount: number }[];
    console.log(`npm pack: ${(p.size / 2 ** 20).toFixed(1)} MiB tarball, ${(p.unpackedSize / 2 ** 20).toFixed(1)} MiB unpacked, ${p.entryCount} files`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e: Error) => { console.error(e); process.exit(1); });
