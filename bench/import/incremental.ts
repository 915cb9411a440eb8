/**
 * Incremental update benchmark (bench/import/README.md, issue #3): the next snapshot from a
 * base holding the first (1 - f) of a chain's blocks plus the last f, against a full import of
 * the whole chain, in the same session.
 *
 *   node build/bench/import/incremental.js --dump DIR --work DIR [--fraction 0.01] [--runs 3]
 *     [--full-runs 1] [--compare]
 *
 * 1. Splits the dump at block floor((1 - f) · blocks) into WORK/base (history up to there, the
 *    collections / tokens created by then, the rich list) and WORK/update (the later blocks,
 *    txs and NFT ↔ tx links, plus the whole current NFT / rich-list state, as a source
 *    delivers it); txs.ndjson is cut by line count (sequences are one per line, ascending).
 * 2. Imports WORK/base (not timed: the prerequisite).
 * 3. Times `import --base base.sqlite --from-dump update --out inc.sqlite --json`, --runs times,
 *    and `import --from-dump DIR --out full.sqlite --json`, --full-runs times.
 * 4. With --compare: bench/import/compare-tables.js-style check that inc.sqlite and
 *    full.sqlite hold the same rows (account ids translated to addresses).
 * Writes WORK/incremental.{md,json}.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { ROOT } from '../../src/assets';
import { tableDiff } from '../../src/snapshot/digest';
import { median } from './measure';

function arg(name: string, fallback?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

const log = (s: string): void => { process.stderr.write(`bench/import/incremental: ${s}\n`); };

function lines(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '') : [];
}

function write(file: string, rows: string[]): void {
  writeFileSync(file, rows.map((r) => r + '\n').join(''));
}

/** Shell pipeline for the big file (head / tail stream it far faster than readline). */
function sh(cmd: string): string {
  const r = spawnSync('sh', ['-c', cmd], { encoding: 'utf8', maxBuffer: 1 << 20 });
  if (r.status !== 0) throw new Error(`${cmd}: ${r.stderr}`);
  return r.stdout;
}

async function split(dump: string, work: string, fraction: number): Promise<{ cut: number; baseTxs: number; newTxs: number; newBlocks: number }> {
  const baseDir = join(work, 'base');
  const updDir = join(work, 'update');
  const done = join(work, `split-${fraction}.json`);
  if (existsSync(done)) return JSON.parse(readFileSync(done, 'utf8')) as { cut: number; baseTxs: number; newTxs: number; newBlocks: number };
  mkdirSync(baseDir, { recursive: true });
  mkdirSync(updDir, { recursive: true });
  const blocks = lines(join(dump, 'blocks.ndjson'));
  const cutIndex = Math.floor(blocks.length * (1 - fraction));
  const parsed = blocks.map((l) => JSON.parse(l) as { height: number; tx_count: number });
  const cut = parsed[cutIndex - 1].height;
  const baseTxs = parsed.slice(0, cutIndex).reduce((a, b) => a + b.tx_count, 0);
  const totalTxs = parsed.reduce((a, b) => a + b.tx_count, 0);
  const meta = JSON.parse(lines(join(dump, 'meta.ndjson'))[0]) as Record<string, unknown>;
  write(join(baseDir, 'meta.ndjson'), [JSON.stringify({ ...meta, height: cut })]);
  write(join(updDir, 'meta.ndjson'), [JSON.stringify(meta)]);
  write(join(baseDir, 'validators.ndjson'), lines(join(dump, 'validators.ndjson')));
  write(join(baseDir, 'blocks.ndjson'), blocks.slice(0, cutIndex));
  write(join(updDir, 'blocks.ndjson'), blocks.slice(cutIndex));
  log(`splitting txs.ndjson at line ${baseTxs} of ${totalTxs}`);
  sh(`head -n ${baseTxs} '${join(dump, 'txs.ndjson')}' > '${join(baseDir, 'txs.ndjson')}'`);
  sh(`tail -n +${baseTxs + 1} '${join(dump, 'txs.ndjson')}' > '${join(updDir, 'txs.ndjson')}'`);
  // The sequence of the last base tx bounds the NFT ↔ tx links.
  const lastBase = sh(`tail -n 1 '${join(baseDir, 'txs.ndjson')}' | head -c 40`);
  const maxSeq = Number(/"sequence":(\d+)/.exec(lastBase)?.[1]);
  if (!Number.isSafeInteger(maxSeq)) throw new Error(`cannot read the last base sequence from ${lastBase}`);
  const links = lines(join(dump, 'token_txs.ndjson'));
  const seqOf = (l: string): number => (JSON.parse(l) as { sequence: number }).sequence;
  write(join(baseDir, 'token_txs.ndjson'), links.filter((l) => seqOf(l) <= maxSeq));
  write(join(updDir, 'token_txs.ndjson'), links.filter((l) => seqOf(l) > maxSeq));
  const cols = lines(join(dump, 'collections.ndjson'));
  const baseCols = cols.filter((l) => (JSON.parse(l) as { height: number }).height <= cut);
  const baseAddrs = new Set(baseCols.map((l) => (JSON.parse(l) as { object_addr: string }).object_addr));
  const tokens = lines(join(dump, 'tokens.ndjson'));
  write(join(baseDir, 'collections.ndjson'), baseCols);
  write(join(baseDir, 'tokens.ndjson'), tokens.filter((l) => {
    const t = JSON.parse(l) as { collection_addr: string; height: number };
    return baseAddrs.has(t.collection_addr) && t.height <= cut;
  }));
  write(join(updDir, 'collections.ndjson'), cols);
  write(join(updDir, 'tokens.ndjson'), tokens);
  for (const k of ['richlist', 'denom_contracts']) {
    const rows = lines(join(dump, `${k}.ndjson`));
    if (rows.length) { write(join(baseDir, `${k}.ndjson`), rows); write(join(updDir, `${k}.ndjson`), rows); }
  }
  const r = { cut, baseTxs, newTxs: totalTxs - baseTxs, newBlocks: blocks.length - cutIndex };
  writeFileSync(done, JSON.stringify(r));
  return r;
}

interface Timed { wall: number; load: number; stages: { name: string; seconds: number }[] }

async function importTimed(args: string[]): Promise<Timed> {
  const load = loadavg()[0];
  const started = process.hrtime.bigint();
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'indexer-api'), 'import', ...args, '--force', '--json']);
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr.on('data', (d: Buffer) => { err += d.toString(); });
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  const wall = Number(process.hrtime.bigint() - started) / 1e9;
  if (code !== 0) throw new Error(`import ${args.join(' ')} failed (${String(code)}): ${err}`);
  const summary = JSON.parse(out) as { stages: { name: string; seconds: number }[] };
  return { wall, load, stages: summary.stages };
}

async function main(): Promise<void> {
  const dump = resolve(arg('dump') ?? '');
  if (!existsSync(join(dump, 'meta.ndjson'))) throw new Error('--dump DIR: a dump directory (see bench/import/README.md)');
  const work = resolve(arg('work', '/tmp/indexer-api-bench-incremental') as string);
  const fraction = Number(arg('fraction', '0.01'));
  const runs = Number(arg('runs', '3'));
  const fullRuns = Number(arg('full-runs', '1'));
  mkdirSync(work, { recursive: true });
  const s = await split(dump, work, fraction);
  log(`base: blocks ≤ ${s.cut} (${s.baseTxs} txs); update: ${s.newBlocks} blocks, ${s.newTxs} txs`);
  const base = join(work, 'base.sqlite');
  if (!existsSync(base)) {
    log('importing the base');
    await importTimed(['--from-dump', join(work, 'base'), '--out', base, '--quiet']);
  }
  const inc: Timed[] = [];
  for (let i = 0; i < runs; i++) {
    inc.push(await importTimed(['--base', base, '--from-dump', join(work, 'update'), '--out', join(work, 'inc.sqlite'), '--quiet']));
    log(`incremental run ${i + 1}: ${inc[i].wall.toFixed(1)} s`);
  }
  const full: Timed[] = [];
  for (let i = 0; i < fullRuns; i++) {
    full.push(await importTimed(['--from-dump', dump, '--out', join(work, 'full.sqlite'), '--quiet']));
    log(`full run ${i + 1}: ${full[i].wall.toFixed(1)} s`);
  }
  let compared = 'not compared (pass --compare)';
  if (process.argv.includes('--compare')) {
    const diff = tableDiff(join(work, 'inc.sqlite'), join(work, 'full.sqlite'), true);
    compared = diff.length === 0 ? 'every table identical (account ids translated to addresses)' : `DIFFERENT: ${diff.join(', ')}`;
    log(compared);
  }
  const mi = median(inc.map((r) => r.wall));
  const mf = median(full.map((r) => r.wall));
  const stageMedians = (rs: Timed[]): string => {
    const names = rs[0].stages.map((x) => x.name);
    return names.map((n) => `${n} ${median(rs.map((r) => r.stages.find((x) => x.name === n)?.seconds ?? 0)).toFixed(1)}`).join(', ');
  };
  const md = [
    `Dump ${dump}: base = blocks ≤ ${s.cut} (${s.baseTxs} txs), update = ${s.newBlocks} blocks / ${s.newTxs} txs (${(fraction * 100).toFixed(1)} %).`,
    '',
    '| import | runs | load avg | wall s (each) | median s |',
    '|---|---:|---:|---|---:|',
    `| incremental (--base + update) | ${runs} | ${inc.map((r) => r.load.toFixed(1)).join(' / ')} | ${inc.map((r) => r.wall.toFixed(1)).join(' / ')} | ${mi.toFixed(1)} |`,
    `| full import of the whole chain | ${fullRuns} | ${full.map((r) => r.load.toFixed(1)).join(' / ')} | ${full.map((r) => r.wall.toFixed(1)).join(' / ')} | ${mf.toFixed(1)} |`,
    '',
    `Ratio incremental / full: **${(mi / mf).toFixed(3)}**.`,
    '',
    `Incremental stages (median s): ${stageMedians(inc)}.`,
    '',
    `Full stages (median s): ${stageMedians(full)}.`,
    '',
    `Check: ${compared}.`,
  ].join('\n');
  writeFileSync(join(work, 'incremental.md'), md + '\n');
  writeFileSync(join(work, 'incremental.json'), JSON.stringify({ split: s, incremental: inc, full, compared }, null, 1));
  process.stdout.write(md + '\n');
}

main().catch((e: Error) => {
  process.stderr.write(`bench/import/incremental: ${e.message}\n`);
  process.exit(1);
});
