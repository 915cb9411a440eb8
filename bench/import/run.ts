/**
 * Import throughput benchmark (bench/import/README.md).
 *
 *   node build/bench/import/run.js [--dump DIR] [--txs N] [--vm wasm] [--work DIR] [--runs 3]
 *     [--parse-threads N] [--cpu-prof]
 *
 * 1. Generates the chain if DIR has no dump (`indexer-api generate --vm VM --preset scale
 *    [--txs N] --out DIR`, 1M txs by default).
 * 2. `indexer-api import --from-dump DIR --out WORK/import.sqlite --json`, --runs times, each
 *    under /usr/bin/time -v (peak RSS; else /proc polling): txs/s and MB/s overall and for the
 *    txs stage, the stage breakdown, and the medians.
 * 3. The baseline: bench/import/baseline.js inserts the rows that import wrote into the same
 *    tables with bare better-sqlite3 (same pragmas, one transaction, same indexes).
 * 4. With --cpu-prof, one more run under `node --cpu-prof` and the summary of each thread's
 *    profile (bench/import/profile-summary.js).
 * Prints a Markdown report and writes it, with the raw numbers, to WORK/report.{md,json}. The
 * load average before each run is in the report: on a shared machine it explains most spread.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { ROOT } from '../../src/assets';
import { measure, Measured, median } from './measure';
import { summarize } from './profile-summary';

interface Summary { records: Record<string, number>; stages: { name: string; rows: number; seconds: number }[]; seconds: number }
/** One import: measured, its --json summary, the load average before it, stage sums. */
interface Run extends Measured { load: number; summary: Summary; txStage: number; loadStages: number }

const LOAD_STAGES = ['meta', 'validators', 'blocks', 'txs', 'collections', 'tokens', 'token_txs', 'richlist', 'denom_contracts'];

function arg(name: string, fallback?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
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
  const runs = Number(arg('runs', '3'));
  const threads = arg('parse-threads');
  const importArgs = ['import', '--from-dump', dump, '--out', out, '--force', '--json', ...(threads ? ['--parse-threads', threads] : [])];

  const imports: Run[] = [];
  for (let i = 0; i < runs; i++) {
    const load = loadavg()[0];
    log(`import ${i + 1}/${runs} (load ${load.toFixed(1)}): node bin/indexer-api ${importArgs.join(' ')}`);
    const m = await measure(process.execPath, [cli, ...importArgs]);
    if (m.code !== 0) throw new Error(`import failed: ${m.stderr}`);
    const summary = JSON.parse(m.stdout) as Summary;
    const stage = (names: string[]): number => summary.stages.filter((s) => names.includes(s.name)).reduce((a, s) => a + s.seconds, 0);
    imports.push({ ...m, stdout: '', stderr: '', load, summary, txStage: stage(['txs']), loadStages: stage(LOAD_STAGES) });
  }
  const nTx = imports[0].summary.records.txs;

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
    const profArgs = importArgs.map((a) => (a === out ? join(work, 'profiled.sqlite') : a === '--json' ? '--quiet' : a));
    spawnSync(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${profDir}`, cli, ...profArgs], { stdio: 'inherit' });
    // One profile per thread (CPU.<date>.<time>.<pid>.<thread>.<n>.cpuprofile): the main thread first.
    const profs = readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile')).sort((x, y) => Number(x.split('.')[4]) - Number(y.split('.')[4]));
    profile = profs.map((f, i) => `${i === 0 ? 'main thread' : `parser thread ${i}`}\n${summarize(join(profDir, f), 25)}`).join('\n');
  }

  const mb = bytes / 1e6;
  const r = (x: number, d = 0): string => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
  const med = (f: (x: Run) => number): number => median(imports.map(f));
  const row = (label: string, x: { wall: number; cpu: number; rss: number; txStage: number; loadStages: number; load: number }): string =>
    `| ${label} | ${r(x.load, 1)} | ${r(x.wall, 1)} | ${r(x.cpu, 1)} | ${r(nTx / x.wall)} | ${r(mb / x.wall, 1)} | ${r(x.loadStages, 1)} | ${r(x.txStage, 1)} | ${r(nTx / x.txStage)} | ${r(x.rss)} |`;
  const facts = (x: Run): { wall: number; cpu: number; rss: number; txStage: number; loadStages: number; load: number } =>
    ({ wall: x.wallSeconds, cpu: x.userSeconds + x.sysSeconds, rss: x.maxRssMb, txStage: x.txStage, loadStages: x.loadStages, load: x.load });
  const mid = imports.slice().sort((x, y) => x.wallSeconds - y.wallSeconds)[Math.floor(imports.length / 2)];
  const report = [
    `## import benchmark: ${vm}, ${nTx} txs, dump ${r(mb)} MB (${new Date().toISOString()})`,
    '',
    `machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}, ${r(totalmem() / 2 ** 30, 1)} GiB RAM, node ${process.version}; parse threads: ${threads ?? 'default (one per CPU)'}`,
    '',
    '| import --from-dump | load avg | wall s | CPU s | txs/s | MB/s | load stages s | txs stage s | txs/s (txs stage) | peak RSS MB |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...imports.map((x, i) => row(`run ${i + 1}`, facts(x))),
    row('**median**', { wall: med((x) => x.wallSeconds), cpu: med((x) => x.userSeconds + x.sysSeconds), rss: med((x) => x.maxRssMb),
      txStage: med((x) => x.txStage), loadStages: med((x) => x.loadStages), load: med((x) => x.load) }),
    '',
    '| baseline: bare better-sqlite3 insert of the same rows | wall s | CPU s | txs/s | MB/s (row bytes) | peak RSS MB |',
    '|---|---:|---:|---:|---:|---:|',
    `| read + insert | ${r(b.insertSeconds, 1)} | | ${r(nTx / b.insertSeconds)} | ${r(b.bytes / 1e6 / b.insertSeconds, 1)} | |`,
    `| of which reading the rows back | ${r(b.readSeconds, 1)} | | | | |`,
    `| insert only (read + insert − reading) | ${r(b.insertSeconds - b.readSeconds, 1)} | | ${r(nTx / (b.insertSeconds - b.readSeconds))} | | |`,
    `| the same indexes after the load | ${r(b.indexSeconds, 1)} | | | | |`,
    `| whole process | ${r(base.wallSeconds, 1)} | ${r(base.userSeconds + base.sysSeconds, 1)} | | | ${r(base.maxRssMb)} |`,
    '',
    'import stages of the median run (s): ' + mid.summary.stages.map((s) => `${s.name} ${s.seconds.toFixed(1)}`).join(', '),
    '',
    ...(profile ? ['```', profile.trim(), '```'] : []),
  ].join('\n');
  process.stdout.write(report + '\n');
  writeFileSync(join(work, 'report.md'), report + '\n');
  writeFileSync(join(work, 'report.json'), JSON.stringify({ vm, txs: nTx, dumpBytes: bytes, imports, baseline: { ...base, stdout: undefined, stderr: undefined, ...b } }, null, 2));
}

main().catch((e: Error) => {
  process.stderr.write(`bench/import: ${e.message}\n`);
  process.exit(1);
});
