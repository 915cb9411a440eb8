/**
 * Import throughput benchmark (bench/import/README.md).
 *
 *   node build/bench/import/run.js [--dump DIR] [--txs N] [--vm wasm] [--work DIR] [--cpu-prof]
 *
 * 1. Generates the chain if DIR has no dump (`indexer-api generate --vm VM --preset scale
 *    [--txs N] --out DIR`, 1M txs by default).
 * 2. `indexer-api import --from-dump DIR --out WORK/import.sqlite --json` under
 *    /usr/bin/time -v (peak RSS; else /proc polling): txs/s and MB/s overall and for the txs
 *    stage, the stage breakdown.
 * 3. The baseline: bench/import/baseline.js inserts the rows that import wrote into the same
 *    tables with bare better-sqlite3 (same pragmas, batches and indexes).
 * 4. With --cpu-prof, a third run under `node --cpu-prof` and its summary
 *    (bench/import/profile-summary.js).
 * Prints a Markdown report and writes it, with the raw numbers, to WORK/report.{md,json}.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { ROOT } from '../../src/assets';
import { summarize } from './profile-summary';

interface Measured { wallSeconds: number; userSeconds: number; sysSeconds: number; maxRssMb: number; stdout: string; stderr: string; code: number | null }

function arg(name: string, fallback?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

/** Runs a command, measuring wall time, CPU time and peak RSS. */
async function measure(cmd: string, args: string[]): Promise<Measured> {
  const useTime = existsSync('/usr/bin/time');
  const started = process.hrtime.bigint();
  const child = useTime ? spawn('/usr/bin/time', ['-v', cmd, ...args]) : spawn(cmd, args);
  let stdout = '';
  let stderr = '';
  let hwmKb = 0;
  child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  const poll = useTime ? undefined : setInterval(() => {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
      if (m) hwmKb = Math.max(hwmKb, Number(m[1]));
    } catch { /* exited */ }
  }, 100);
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  if (poll) clearInterval(poll);
  const wallSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  const num = (re: RegExp): number => Number(re.exec(stderr)?.[1] ?? NaN);
  if (useTime) hwmKb = num(/Maximum resident set size \(kbytes\): (\d+)/);
  return {
    wallSeconds, userSeconds: num(/User time \(seconds\): ([\d.]+)/), sysSeconds: num(/System time \(seconds\): ([\d.]+)/),
    maxRssMb: hwmKb / 1024, stdout, stderr, code,
  };
}

function dirBytes(dir: string): number {
  return readdirSync(dir).reduce((a, f) => a + statSync(join(dir, f)).size, 0);
}

async function main(): Promise<void> {
  const vm = arg('vm', 'wasm') as string;
  const txs = arg('txs');
  const work = resolve(arg('work', '/tmp/indexer-api-bench-import') as string);
  const dump = resolve(arg('dump', join(work, `${vm}-${txs ?? '1000000'}`)) as string);
  mkdirSync(work, { recursive: true });
  const cli = join(ROOT, 'bin', 'indexer-api');
  const log = (s: string): void => { process.stderr.write(`bench/import: ${s}\n`); };

  if (!existsSync(join(dump, 'meta.ndjson'))) {
    const gen = ['generate', '--vm', vm, '--preset', 'scale', ...(txs ? ['--txs', txs] : []), '--out', dump, '--quiet'];
    log(`generating: node bin/indexer-api ${gen.join(' ')}`);
    const g = spawnSync(process.execPath, [cli, ...gen], { stdio: 'inherit' });
    if (g.status !== 0) throw new Error('generate failed');
  }
  const bytes = dirBytes(dump);
  const out = join(work, 'import.sqlite');

  log(`import: node bin/indexer-api import --from-dump ${dump} --out ${out} --force --json`);
  const imp = await measure(process.execPath, [cli, 'import', '--from-dump', dump, '--out', out, '--force', '--json']);
  if (imp.code !== 0) throw new Error(`import failed: ${imp.stderr}`);
  const summary = JSON.parse(imp.stdout) as { records: Record<string, number>; stages: { name: string; rows: number; seconds: number }[]; seconds: number };
  const nTx = summary.records.txs;
  const txStage = summary.stages.find((s) => s.name === 'txs')?.seconds ?? NaN;
  const loadSeconds = summary.stages.filter((s) => ['meta', 'validators', 'blocks', 'txs', 'collections', 'tokens', 'token_txs', 'richlist', 'denom_contracts'].includes(s.name))
    .reduce((a, s) => a + s.seconds, 0);

  const baseOut = join(work, 'baseline.sqlite');
  log(`baseline: node build/bench/import/baseline.js ${out} ${baseOut}`);
  const base = await measure(process.execPath, [join(ROOT, 'build', 'bench', 'import', 'baseline.js'), out, baseOut]);
  if (base.code !== 0) throw new Error(`baseline failed: ${base.stderr}`);
  const b = JSON.parse(base.stdout) as { rows: number; bytes: number; txs: number; readSeconds: number; insertSeconds: number; indexSeconds: number };

  let profile = '';
  if (process.argv.includes('--cpu-prof')) {
    const profDir = join(work, 'cpu-prof');
    mkdirSync(profDir, { recursive: true });
    for (const f of readdirSync(profDir)) if (f.endsWith('.cpuprofile')) spawnSync('rm', ['-f', join(profDir, f)]);
    log(`profile: node --cpu-prof --cpu-prof-dir=${profDir} bin/indexer-api import ...`);
    spawnSync(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${profDir}`, cli, 'import', '--from-dump', dump, '--out', join(work, 'profiled.sqlite'), '--force', '--quiet'], { stdio: 'inherit' });
    const prof = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
    if (prof) profile = summarize(join(profDir, prof), 25);
  }

  const mb = bytes / 1e6;
  const r = (x: number, d = 0): string => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
  const report = [
    `## import benchmark: ${vm}, ${nTx} txs, dump ${r(mb)} MB (${new Date().toISOString()})`,
    '',
    `machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}, ${r(totalmem() / 2 ** 30, 1)} GiB RAM, node ${process.version}`,
    '',
    '| run | wall s | CPU s (user+sys) | txs/s (wall) | MB/s (wall) | peak RSS MB |',
    '|---|---:|---:|---:|---:|---:|',
    `| import --from-dump (whole command) | ${r(imp.wallSeconds, 1)} | ${r(imp.userSeconds + imp.sysSeconds, 1)} | ${r(nTx / imp.wallSeconds)} | ${r(mb / imp.wallSeconds, 1)} | ${r(imp.maxRssMb)} |`,
    `| import: load stages only (meta … token_txs) | ${r(loadSeconds, 1)} | | ${r(nTx / loadSeconds)} | ${r(mb / loadSeconds, 1)} | |`,
    `| import: txs stage only | ${r(txStage, 1)} | | ${r(nTx / txStage)} | | |`,
    `| baseline: bare better-sqlite3 insert of the same rows (read + insert) | ${r(b.insertSeconds, 1)} | | ${r(nTx / b.insertSeconds)} | ${r(b.bytes / 1e6 / b.insertSeconds, 1)} | ${r(base.maxRssMb)} |`,
    `| baseline: of which reading the rows back | ${r(b.readSeconds, 1)} | | | | |`,
    `| baseline: same indexes after the load | ${r(b.indexSeconds, 1)} | | | | |`,
    `| baseline: whole process | ${r(base.wallSeconds, 1)} | ${r(base.userSeconds + base.sysSeconds, 1)} | ${r(nTx / base.wallSeconds)} | | |`,
    '',
    'import stages (s): ' + summary.stages.map((s) => `${s.name} ${s.seconds.toFixed(1)}`).join(', '),
    '',
    ...(profile ? ['```', profile.trim(), '```'] : []),
  ].join('\n');
  process.stdout.write(report + '\n');
  writeFileSync(join(work, 'report.md'), report + '\n');
  writeFileSync(join(work, 'report.json'), JSON.stringify({ vm, txs: nTx, dumpBytes: bytes, import: { ...imp, stdout: undefined, stderr: undefined, summary }, baseline: { ...base, stdout: undefined, stderr: undefined, ...b } }, null, 2));
}

main().catch((e: Error) => {
  process.stderr.write(`bench/import: ${e.message}\n`);
  process.exit(1);
});
