/**
 * `follow` in steady state (bench/README.md "Follow at scale", "Steady state (issue #30)"): a
 * replica K heights behind an API source that grows by one block at a time, so every batch is
 * one block on a warm process — the batch a follower at the chain's tip pays, neither the first
 * after start nor one racing a rich-list refresh.
 *
 *   node build/bench/follow-steady.js --snapshot FULL --work DIR [--back 20] [--skip 4]
 *     [--denoms-file DENOM_CONTRACTS] [--modes none,denoms] [--cli bin/indexer-api[,OTHER]]
 *     [--gap-ms 250] [--cpu-prof DIR]
 *
 * The source is in-process (createRequestListener over FULL, height H) and shows the chain up to a moving
 * height C: /status says C, a page of the block list stops at C (everything else is asked by
 * height or sequence below C by the follower; the NFT state is FULL's, as any API source's is
 * the current one). The replica is `import --from-api --to-height H-K` of that source (with the
 * rich list of --denoms-file's contracts: FULL's ≈ 300k rows at the scale preset). For each
 * --cli and mode (`none`: --richlist-interval 0; `denoms`: --denoms, the refresh at start
 * awaited and no other during the run) follow runs on a fresh copy of the replica; C goes from
 * H-K+1 to H, one height per batch (the next one --gap-ms after the previous batch's log line).
 * Reported: each batch's `applied in N ms` (with the log line's source/base/records/finish
 * split) and the median of the batches after the first --skip. --cpu-prof: the follow process
 * runs under `node --cpu-prof`; the samples between the first timed batch's start and the last
 * batch's end are summed by function (self time) and by file.
 */
import { spawn } from 'node:child_process';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { createRequestListener } from '../src/serve/routing';
import { runImport } from '../src/import/run';
import { loadOpenApi } from '../src/serve/openapi';
import { listen } from '../src/serve/server';
import { openSnapshot, Snapshot } from '../src/snapshot/open';
import { appOptions } from '../test/helpers/app-options';

const argv = process.argv;
const one = (name: string, d?: string): string | undefined => { const i = argv.indexOf(`--${name}`); return i >= 0 ? argv[i + 1] : d; };
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const load = (): string => loadavg()[0].toFixed(2);

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Self time (ms) by function and by file of the samples taken in [fromUs, toUs] (CLOCK_MONOTONIC µs). */
function profileSummary(file: string, fromUs: number, toUs: number): string {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n.callFrame]));
  const fn = new Map<string, number>();
  const files = new Map<string, number>();
  let t = p.startTime;
  let total = 0;
  let idle = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const dt = p.timeDeltas[i];
    t += dt;
    if (t < fromUs || t > toUs) continue;
    const f = byId.get(p.samples[i]);
    if (!f) continue;
    const ms = (p.timeDeltas[i + 1] ?? dt) / 1000;
    if (f.functionName === '(idle)') { idle += ms; continue; }
    total += ms;
    const where = f.url.replace(/^.*\/(node_modules\/[^/]+|build\/|bundle\/)/, '$1');
    const k = `${f.functionName || '(anonymous)'} ${where}:${f.lineNumber + 1}`;
    fn.set(k, (fn.get(k) ?? 0) + ms);
    const fk = f.url === '' ? f.functionName : where;
    files.set(fk, (files.get(fk) ?? 0) + ms);
  }
  const top = (m: Map<string, number>, n: number): string => [...m].sort((a, b) => b[1] - a[1]).slice(0, n)
    .map(([k, ms]) => `    ${ms.toFixed(0).padStart(6)} ms ${(100 * ms / total).toFixed(1).padStart(5)} %  ${k}`).join('\n');
  return `  profile window ${((toUs - fromUs) / 1000).toFixed(0)} ms: on-CPU ${total.toFixed(0)} ms, idle ${idle.toFixed(0)} ms\n`
    + `  by function (self):\n${top(fn, 30)}\n  by file / category:\n${top(files, 20)}\n`;
}

async function main(): Promise<void> {
  const snapshot = one('snapshot');
  if (!snapshot) throw new Error('--snapshot FILE is required');
  const work = one('work', '/tmp/indexer-bench-follow-steady') as string;
  const back = Number(one('back', '20'));
  const skip = Number(one('skip', '4'));
  const gapMs = Number(one('gap-ms', '250'));
  const modes = (one('modes', 'none,denoms') as string).split(',');
  const clis = (one('cli', resolve(__dirname, '..', '..', 'bin', 'indexer-api')) as string).split(',');
  const profDir = one('cpu-prof');
  const denomsFile = one('denoms-file');
  const denoms = denomsFile ? readFileSync(denomsFile, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { contract: string }).contract) : [];
  if (modes.includes('denoms') && denoms.length === 0) throw new Error('mode denoms needs --denoms-file (denom_contracts.ndjson of the generated chain)');
  mkdirSync(work, { recursive: true });

  const full = openSnapshot(snapshot);
  const top = full.meta.height;
  const status = JSON.parse(full.status) as Record<string, unknown>;
  let cap = top;
  const at = (h: number): Snapshot => ({
    ...full, meta: { ...full.meta, height: h },
    status: JSON.stringify({ ...status, height: h, internal_tx_height: Math.min(Number(status.internal_tx_height ?? h), h) }),
  });
  let cur: Snapshot = full;
  const app = createRequestListener({ snapshots: { current: () => cur }, openapi: loadOpenApi(), options: appOptions({ corsOrigin: '', logError: () => undefined }) });
  // A page of the block list ends at the shown height (the follower asks for 1000 after its tip).
  const front = (req: IncomingMessage, res: ServerResponse): void => {
    const u = req.url ?? '';
    if (u.startsWith('/indexer/block/v1/blocks?')) {
      const url = new URL(u, 'http://x');
      const k = url.searchParams.get('pagination.key');
      const after = k ? (JSON.parse(Buffer.from(k, 'base64').toString('utf8')) as { height?: number }).height : undefined;
      const lim = Number(url.searchParams.get('pagination.limit') ?? '100');
      if (after !== undefined) {
        url.searchParams.set('pagination.limit', String(Math.max(1, Math.min(lim, cap - after))));
        req.url = url.pathname + url.search;
      }
    }
    app(req, res);
  };
  const src = await listen(front, '127.0.0.1', 0);
  const replica = join(work, `replica-${top - back}${denoms.length ? '-denoms' : ''}.sqlite`);
  if (!existsSync(replica)) {
    process.stdout.write(`crawling the replica at ${top - back} (${denoms.length} denoms)…\n`);
    await runImport({ fromApi: src.url, toHeight: top - back, denoms: denoms.length ? denoms : undefined, out: replica, force: true, quiet: true, json: false });
  }
  const rows = (openSnapshot(replica).db.prepare('SELECT count(*) FROM richlist').pluck().get() as number);
  process.stdout.write(`source ${snapshot}: height ${top}, ${full.meta.countTxs} txs; replica at ${top - back} with ${rows} rich-list rows; `
    + `${back} one-block batches per run, median over batches ${skip + 1}..${back}\n`);

  const summary: string[] = [];
  /** mode → per --cli, the steady batches' ms (same heights in each) */
  const steadyOf = new Map<string, number[][]>();
  for (const cli of clis) {
    for (const mode of modes) {
      const db = join(work, 'live.sqlite');
      for (const ext of ['', '-wal', '-shm']) rmSync(db + ext, { force: true });
      copyFileSync(replica, db);
      await new Promise<void>((r) => spawn('sync').on('exit', () => r()));
      cap = top - back;
      cur = at(cap);
      const args = ['follow', '--db', db, '--from-api', src.url, '--interval', '100ms', '--collections-audit-interval', '0',
        ...(mode === 'denoms' ? ['--denoms', denoms.join(','), '--richlist-interval', '10m'] : ['--richlist-interval', '0'])];
      let profPath: string | undefined;
      if (profDir) {
        profPath = join(profDir, `${mode}-${clis.indexOf(cli)}`);
        rmSync(profPath, { recursive: true, force: true });
        mkdirSync(profPath, { recursive: true });
      }
      const node = profPath ? ['--cpu-prof', '--cpu-prof-interval', '200', '--cpu-prof-dir', profPath] : [];
      const follow = spawn(process.execPath, [...node, cli, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
      let log = '';
      follow.stderr.setEncoding('utf8').on('data', (s: string) => { log += s; });
      const waitFor = async (re: RegExp, what: string): Promise<RegExpExecArray> => {
        for (let i = 0; i < 1200; i++) {
          const m = re.exec(log);
          if (m) return m;
          if (follow.exitCode !== null) throw new Error(`follow exited (${follow.exitCode}) before ${what}:\n${log}`);
          await sleep(25);
        }
        throw new Error(`no ${what} in 30 s:\n${log}`);
      };
      await waitFor(/following /, 'start');
      if (mode === 'denoms') await waitFor(/rich list at height/, 'the rich-list refresh at start');
      await sleep(500);
      const ms: number[] = [];
      const lines: string[] = [];
      let fromUs = 0;
      let toUs = 0;
      for (let k = 1; k <= back; k++) {
        const h = top - back + k;
        if (k === skip + 1) fromUs = Number(process.hrtime.bigint() / 1000n);
        cap = h;
        cur = at(h);
        const m = await waitFor(new RegExp(`heights ${h}\\.\\.${h} \\(1 blocks, (\\d+) txs\\) applied in (\\d+) ms (\\([^)]*\\))[^;\\n]*;[^;\\n]*(;[^\\n]*)?`), `the batch of ${h}`);
        toUs = Number(process.hrtime.bigint() / 1000n);
        ms.push(Number(m[2]));
        lines.push(`height ${h}, ${m[1]} txs: ${m[2]} ms ${m[3]}${(m[4] ?? '').replace(/"}$/, '')}`);
        await sleep(gapMs);
      }
      follow.kill('SIGINT');
      await new Promise<void>((r) => (follow.exitCode !== null ? r() : follow.on('exit', () => r())));
      const steady = ms.slice(skip);
      steadyOf.set(mode, [...(steadyOf.get(mode) ?? []), steady]);
      const l = load();
      const head = `${cli} mode ${mode}: steady batch median ${median(steady)} ms (min ${Math.min(...steady)}, max ${Math.max(...steady)}, n ${steady.length}); all: ${ms.join(' ')}; load ${l}`;
      summary.push(head);
      process.stdout.write(`${head}\n`);
      if (argv.includes('--verbose')) for (const x of lines) process.stdout.write(`  ${x}\n`);
      if (profPath) {
        const f = readdirSync(profPath).find((x) => x.endsWith('.cpuprofile'));
        if (f) process.stdout.write(profileSummary(join(profPath, f), fromUs, toUs));
      }
    }
  }
  // two builds: the median of the per-height ratios (the same block in both)
  for (const [mode, [a, b]] of steadyOf) {
    if (b === undefined) continue;
    summary.push(`mode ${mode}: second --cli ÷ first, median of the per-height ratios ${median(a.map((x, i) => b[i] / Math.max(1, x))).toFixed(2)}`);
  }
  process.stdout.write(`\n${summary.join('\n')}\n`);
  await src.close();
  full.close();
}

main().catch((e: Error) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
