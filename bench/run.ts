import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Captured } from './bare';
import { defaultTool, hasTaskset, LoadResult, LoadTool, runLoad } from './load';
import { capture, cpuSecondsOf, Running, rssOf, startBare, startOurs, stopAll } from './servers';
import { Target, targetsOf } from './targets';

/**
 * `make bench` (node build/bench/run.js): serve benchmarks on 1M-tx snapshots — see
 * bench/README.md for what each section measures and the results.
 *
 *   node build/bench/run.js [--runs 3] [--seconds 10] [--warmup 2] [--connections 50]
 *     [--only families,deep,rss,workers,cold-start] [--tool wrk|autocannon] [--data DIR]
 *     [--wasm-1m FILE] [--wasm-10k FILE] [--evm-1m FILE] [--evm-10k FILE]
 *     [--serve-args "--cache-bytes 0"]   (extra `serve` options for our server)
 *     [--rotate]   (families, deep: every request a URL never seen — `&bench_r=<n>` appended, n
 *                   counting up — so neither the response cache nor the validation memo hits)
 *
 * Missing snapshots are generated and imported into --data (default $TMPDIR/indexer-api-bench;
 * the two 1M-tx ones take several minutes and ~5 GB each).
 */

const ROOT = resolve(__dirname, '..', '..');
const SECTIONS = ['families', 'deep', 'rss', 'workers', 'cold-start'] as const;

interface Options {
  runs: number; seconds: number; warmup: number; connections: number; tool: LoadTool;
  only: Set<string>; data: string; wasm1m: string; wasm10k: string; evm1m: string; evm10k: string;
  serveArgs: string[];
  rotate: boolean;
}

function options(argv: string[]): Options {
  const opt = (name: string, fallback: string): string => {
    const i = argv.indexOf(`--${name}`);
    return i < 0 ? fallback : argv[i + 1];
  };
  const data = resolve(opt('data', process.env.BENCH_DATA ?? join(tmpdir(), 'indexer-api-bench')));
  const only = new Set(opt('only', SECTIONS.join(',')).split(','));
  for (const s of only) if (!(SECTIONS as readonly string[]).includes(s)) throw new Error(`--only: unknown section ${s} (${SECTIONS.join(', ')})`);
  return {
    runs: Number(opt('runs', '3')), seconds: Number(opt('seconds', '10')), warmup: Number(opt('warmup', '2')),
    connections: Number(opt('connections', '50')), tool: opt('tool', defaultTool()) as LoadTool, only, data,
    wasm1m: resolve(opt('wasm-1m', join(data, 'wasm-1m.sqlite'))), wasm10k: resolve(opt('wasm-10k', join(data, 'wasm-10k.sqlite'))),
    evm1m: resolve(opt('evm-1m', join(data, 'evm-1m.sqlite'))), evm10k: resolve(opt('evm-10k', join(data, 'evm-10k.sqlite'))),
    serveArgs: opt('serve-args', '').split(' ').filter(Boolean),
    rotate: argv.includes('--rotate'),
  };
}

/** Generates and imports a scale-preset chain of `txs` txs unless `file` exists. */
function ensureSnapshot(file: string, vm: string, txs: number): void {
  if (existsSync(file)) return;
  const dump = `${file}.dump`;
  mkdirSync(dirname(file), { recursive: true });
  process.stderr.write(`bench: building ${file} (${vm}, ${txs} txs) …\n`);
  const cli = join(ROOT, 'bin', 'indexer-api');
  for (const args of [['generate', '--vm', vm, '--preset', 'scale', '--txs', String(txs), '--out', dump, '--force', '--quiet'],
    ['import', '--from-dump', dump, '--out', file, '--force', '--quiet']]) {
    const r = spawnSync(process.execPath, [cli, ...args], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`bench: ${args[0]} failed for ${file}`);
  }
  rmSync(dump, { recursive: true, force: true });
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

interface Summary { rps: number; p50: number; p99: number; errors: number; cpuUs: number }
const summarize = (rs: LoadResult[]): Summary => ({
  rps: median(rs.map((r) => r.rps)), p50: median(rs.map((r) => r.p50)), p99: median(rs.map((r) => r.p99)),
  errors: rs.reduce((a, r) => a + r.errors, 0), cpuUs: median(rs.map((r) => r.cpuUs ?? NaN)),
});

const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ms = (n: number): string => (n < 10 ? n.toFixed(2) : n.toFixed(1));
/** req/s: whole numbers, but a decimal for a family that manages only a few */
const rate = (n: number): string => (n < 10 ? n.toFixed(1) : fmt(n));
const times = (n: number): string => (Number.isFinite(n) ? `${n.toFixed(2)}×` : '∞');

function table(head: string[], rows: string[][]): string {
  return [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

class Bench {
  readonly serverCpus: string | undefined;
  readonly loadCpus: string | undefined;
  readonly results: Record<string, unknown> = {};
  readonly scratch = mkdtempSync(join(tmpdir(), 'indexer-api-bench-run-'));

  constructor(readonly o: Options) {
    // The server (ours or bare) on CPU 0, the load generator on CPU 1.
    const pin = availableParallelism() >= 2 && hasTaskset();
    this.serverCpus = pin ? '0' : undefined;
    this.loadCpus = pin ? '1' : undefined;
  }

  /**
   * warm-up, then one measured load run; first waits out what the last run left queued. With
   * the server's pid, also the CPU time it spent per request — a figure the other jobs on a
   * shared machine disturb far less than req/s.
   */
  async measure(url: string, loadCpus: string | undefined = this.loadCpus, pid?: number): Promise<LoadResult> {
    await capture(`${new URL(url).origin}/health`);
    const base = { connections: this.o.connections, tool: this.o.tool, root: ROOT, cpus: loadCpus, rotate: this.o.rotate, scratch: this.scratch };
    if (this.o.warmup > 0) await runLoad({ ...base, url, seconds: this.o.warmup });
    const before = pid === undefined ? undefined : cpuSecondsOf(pid);
    const r = await runLoad({ ...base, url, seconds: this.o.seconds });
    const after = pid === undefined ? undefined : cpuSecondsOf(pid);
    if (before !== undefined && after !== undefined && r.requests > 0) r.cpuUs = ((after - before) * 1e6) / r.requests;
    return r;
  }

  print(text: string): void {
    process.stdout.write(`${text}\n`);
  }

  /** Per route family: ours vs a bare node:http server with the same bytes, and 1M vs 10k txs. */
  async families(): Promise<void> {
    const big = targetsOf(this.o.wasm1m).families;
    const small = targetsOf(this.o.wasm10k).families;
    const evmBig = targetsOf(this.o.evm1m).families.filter((f) => f.family === 'richlist');
    const evmSmall = targetsOf(this.o.evm10k).families.filter((f) => f.family === 'richlist');
    const cases = [...big.map((t, i) => ({ t, small: small[i], evm: false })), ...evmBig.map((t, i) => ({ t, small: evmSmall[i], evm: true }))];
    const servers: Running[] = [];
    try {
      const ours = await startOurs(ROOT, this.o.wasm1m, { cpus: this.serverCpus, extra: this.o.serveArgs });
      servers.push(ours);
      const ours10k = await startOurs(ROOT, this.o.wasm10k, { cpus: this.serverCpus, extra: this.o.serveArgs });
      servers.push(ours10k);
      const evm = await startOurs(ROOT, this.o.evm1m, { cpus: this.serverCpus, extra: this.o.serveArgs });
      servers.push(evm);
      const evm10k = await startOurs(ROOT, this.o.evm10k, { cpus: this.serverCpus, extra: this.o.serveArgs });
      servers.push(evm10k);
      const captured: Record<string, Captured> = {};
      for (const c of cases) {
        const got = await capture((c.evm ? evm : ours).url + c.t.path);
        const small10k = await capture((c.evm ? evm10k : ours10k).url + c.small.path);
        if (got.status !== 200 || small10k.status !== 200) throw new Error(`bench: ${c.t.path} answered ${got.status} / ${small10k.status}`);
        captured[c.t.path] = got;
      }
      const bare = await startBare(ROOT, captured, this.scratch, this.serverCpus);
      servers.push(bare);
      const raw = new Map<string, { ours: LoadResult[]; bare: LoadResult[]; small: LoadResult[] }>();
      for (let run = 0; run < this.o.runs; run++) {
        for (const c of cases) {
          const r = raw.get(c.t.family) ?? { ours: [], bare: [], small: [] };
          raw.set(c.t.family, r);
          const oursUrl = (c.evm ? evm : ours).url + c.t.path;
          // alternate which goes first, so drift does not favour one side
          const oursPid = (c.evm ? evm : ours).proc.pid;
          if (run % 2 === 0) { r.ours.push(await this.measure(oursUrl, undefined, oursPid)); r.bare.push(await this.measure(bare.url + c.t.path, undefined, bare.proc.pid)); }
          else { r.bare.push(await this.measure(bare.url + c.t.path, undefined, bare.proc.pid)); r.ours.push(await this.measure(oursUrl, undefined, oursPid)); }
          r.small.push(await this.measure((c.evm ? evm10k : ours10k).url + c.small.path));
          process.stderr.write(`bench: families run ${run + 1}/${this.o.runs}: ${c.t.family} done\n`);
        }
      }
      const rows = cases.map((c) => {
        const r = raw.get(c.t.family)!;
        const o = summarize(r.ours);
        const b = summarize(r.bare);
        const s = summarize(r.small);
        const bytes = Number(captured[c.t.path].headers['content-length']);
        return { family: c.t.family, path: c.t.path, bytes, ours: o, bare: b, small: s, ratio: o.rps / b.rps, scaleCost: s.rps / o.rps, raw: r };
      });
      this.results.families = rows;
      this.print(`\n### Route families: ours vs bare node:http (same bytes), ${this.o.connections} connections, median of ${this.o.runs} runs\n`);
      this.print(table(['family', 'body bytes', 'ours req/s', 'p50 ms', 'p99 ms', 'bare req/s', 'p50 ms', 'p99 ms', 'ours/bare', 'CPU µs/req ours', 'bare', 'bare/ours CPU'],
        rows.map((r) => [r.family, fmt(r.bytes), rate(r.ours.rps), ms(r.ours.p50), ms(r.ours.p99), rate(r.bare.rps), ms(r.bare.p50), ms(r.bare.p99), `${(r.ratio * 100).toFixed(0)}%`,
          fmt(r.ours.cpuUs, 1), fmt(r.bare.cpuUs, 1), `${((r.bare.cpuUs / r.ours.cpuUs) * 100).toFixed(0)}%`])));
      this.print(`\n### 1M-tx vs 10k-tx snapshot, count_total on: cost per request (10k req/s ÷ 1M req/s), median of ${this.o.runs} runs\n`);
      this.print(table(['family', '1M req/s', '1M p50 ms', '10k req/s', '10k p50 ms', 'cost 1M/10k'],
        rows.map((r) => [r.family, rate(r.ours.rps), ms(r.ours.p50), rate(r.small.rps), ms(r.small.p50), times(r.scaleCost)])));
      const errors = rows.reduce((a, r) => a + r.ours.errors + r.bare.errors + r.small.errors, 0);
      if (errors) this.print(`\n**${errors} failed requests (socket errors or non-2xx) during the runs.**`);
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
    }
  }

  /** Page one vs the page reached by key ~all the way down each list. */
  async deep(): Promise<void> {
    const wasm = targetsOf(this.o.wasm1m).deep;
    const evm = targetsOf(this.o.evm1m).deep.filter((d) => d.family === 'richlist');
    const servers: Running[] = [];
    try {
      const ours = await startOurs(ROOT, this.o.wasm1m, { cpus: this.serverCpus, extra: this.o.serveArgs });
      servers.push(ours);
      const evmServer = await startOurs(ROOT, this.o.evm1m, { cpus: this.serverCpus, extra: this.o.serveArgs });
      servers.push(evmServer);
      const cases = [...wasm.map((d) => ({ d, url: ours.url })), ...evm.map((d) => ({ d, url: evmServer.url }))];
      for (const c of cases) {
        for (const path of [c.d.first, c.d.deep]) {
          const r = await capture(c.url + path);
          if (r.status !== 200) throw new Error(`bench: ${path} answered ${r.status}: ${Buffer.from(r.body, 'base64').toString()}`);
        }
      }
      const raw = new Map<string, { first: LoadResult[]; deep: LoadResult[] }>();
      for (let run = 0; run < this.o.runs; run++) {
        for (const c of cases) {
          const r = raw.get(c.d.family) ?? { first: [], deep: [] };
          raw.set(c.d.family, r);
          if (run % 2 === 0) { r.first.push(await this.measure(c.url + c.d.first)); r.deep.push(await this.measure(c.url + c.d.deep)); }
          else { r.deep.push(await this.measure(c.url + c.d.deep)); r.first.push(await this.measure(c.url + c.d.first)); }
        }
      }
      const rows = cases.map((c) => {
        const r = raw.get(c.d.family)!;
        const first = summarize(r.first);
        const deep = summarize(r.deep);
        return { ...c.d, firstResult: first, deepResult: deep, cost: first.rps / deep.rps };
      });
      this.results.deep = rows;
      this.print(`\n### Deep paging by key: page one vs the page ~all the way down (10 rows), median of ${this.o.runs} runs\n`);
      this.print(table(['list', 'depth (rows)', 'page 1 req/s', 'p50 ms', 'deep req/s', 'p50 ms', 'cost deep/page 1'],
        rows.map((r) => [r.family, fmt(r.depth), rate(r.firstResult.rps), ms(r.firstResult.p50), rate(r.deepResult.rps), ms(r.deepResult.p50), times(r.cost)])));
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
    }
  }

  /** RSS of each worker (--workers 2) while serving pagination.limit=1000 pages. */
  async rss(): Promise<void> {
    const { big } = targetsOf(this.o.wasm1m);
    const server = await startOurs(ROOT, this.o.wasm1m, { workers: 2, keepStdout: true, extra: this.o.serveArgs });
    try {
      const deadline = Date.now() + 30_000;
      while (server.lines.filter((l) => l.msg === 'listening').length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const pids = server.lines.filter((l) => l.msg === 'listening').map((l) => l.pid as number);
      const idle = pids.map((p) => rssOf(p));
      const peak = new Map<number, { rss: number; anon: number; file: number }>(pids.map((p) => [p, { rss: 0, anon: 0, file: 0 }]));
      const sample = setInterval(() => {
        for (const p of pids) {
          const m = rssOf(p);
          const k = peak.get(p)!;
          if (m) { k.rss = Math.max(k.rss, m.rss); k.anon = Math.max(k.anon, m.anon); k.file = Math.max(k.file, m.file); }
        }
      }, 200);
      const loads: { path: string; result: LoadResult; bytes: number }[] = [];
      try {
        for (const path of big) {
          const bytes = Buffer.from((await capture(server.url + path)).body, 'base64').length;
          loads.push({ path, bytes, result: await runLoad({ url: server.url + path, connections: this.o.connections, seconds: this.o.seconds, tool: this.o.tool, root: ROOT }) });
        }
      } finally {
        clearInterval(sample);
      }
      const mib = (kib: number): string => (kib / 1024).toFixed(0);
      this.results.rss = { pids, idle, peak: [...peak.values()], loads };
      this.print(`\n### Memory per worker (--workers 2) under ${this.o.connections} connections of pagination.limit=1000 pages, ${this.o.seconds} s each\n`);
      this.print(table(['page (limit=1000)', 'body bytes', 'req/s', 'p50 ms', 'p99 ms'],
        loads.map((l) => [l.path.replace(/\/by_account\/[^?]+/, '/by_account/<busiest>'), fmt(l.bytes), fmt(l.result.rps, 1), ms(l.result.p50), ms(l.result.p99)])));
      this.print('');
      this.print(table(['worker', 'idle RSS MiB', 'peak RSS MiB', 'peak anon MiB', 'peak file-backed MiB'],
        pids.map((p, i) => [`pid ${p}`, mib(idle[i]?.rss ?? NaN), mib(peak.get(p)!.rss), mib(peak.get(p)!.anon), mib(peak.get(p)!.file)])));
    } finally {
      await server.stop();
    }
  }

  /** --workers 1 vs 2 (neither server nor load generator pinned). */
  async workers(): Promise<void> {
    const families = targetsOf(this.o.wasm1m).families.filter((f) => ['status', 'block', 'tx list', 'tx by_account'].includes(f.family));
    const raw = new Map<string, LoadResult[]>();
    for (let run = 0; run < this.o.runs; run++) {
      for (const workers of run % 2 === 0 ? [1, 2] : [2, 1]) {
        const server = await startOurs(ROOT, this.o.wasm1m, { workers, extra: this.o.serveArgs });
        try {
          for (const f of families) {
            const key = `${f.family}/${workers}`;
            raw.set(key, [...(raw.get(key) ?? []), await this.measure(server.url + f.path, undefined)]);
          }
        } finally {
          await server.stop();
        }
      }
    }
    const rows = families.map((f: Target) => {
      const one = summarize(raw.get(`${f.family}/1`)!);
      const two = summarize(raw.get(`${f.family}/2`)!);
      return { family: f.family, one, two, speedup: two.rps / one.rps };
    });
    this.results.workers = rows;
    this.print(`\n### --workers 1 vs 2 on ${availableParallelism()} cores (server and load generator unpinned, sharing them), median of ${this.o.runs} runs\n`);
    this.print(table(['family', '1 worker req/s', 'p99 ms', '2 workers req/s', 'p99 ms', 'speed-up'],
      rows.map((r) => [r.family, rate(r.one.rps), ms(r.one.p99), rate(r.two.rps), ms(r.two.p99), times(r.speedup)])));
  }

  /**
   * Exec → first 200 on /status on the 1M-tx snapshot: bench/cold-start.js (the default
   * --workers, i.e. one per core; plus the single executable when dist/ has one), and the
   * same measurement with --workers 1.
   */
  async coldStart(): Promise<void> {
    const r = spawnSync(process.execPath, [join(ROOT, 'bench', 'cold-start.js'), '--db', this.o.wasm1m, '--json'], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`bench: cold-start.js failed: ${r.stderr}`);
    const out = JSON.parse(r.stdout) as { results: { case: string; median: number; min: number; max: number; runs: number }[] };
    const single: number[] = [];
    for (let i = 0; i < 10; i++) {
      const t0 = process.hrtime.bigint();
      const server = await startOurs(ROOT, this.o.wasm1m, { workers: 1 });
      for (;;) {
        const got = await capture(`${server.url}/status`).catch(() => undefined);
        if (got?.status === 200) break;
      }
      if (i > 0) single.push(Number(process.hrtime.bigint() - t0) / 1e6); // the first run warms the page cache
      await server.stop();
    }
    const sorted = [...single].sort((a, b) => a - b);
    out.results.push({ case: 'node bin/indexer-api serve --db --workers 1', median: median(single), min: sorted[0], max: sorted[sorted.length - 1], runs: single.length });
    this.results.coldStart = out;
    const gb = (statSync(this.o.wasm1m).size / 1e9).toFixed(1);
    this.print(`\n### Cold start on the 1M-tx snapshot (${gb} GB): exec → first 200 on /status\n`);
    this.print(table(['case', 'median ms', 'min', 'max', 'runs'], out.results.map((c) => [c.case, fmt(c.median), fmt(c.min), fmt(c.max), String(c.runs)])));
  }

  async run(): Promise<void> {
    const o = this.o;
    const need = new Set<string>();
    if (o.only.has('families')) { need.add(o.wasm1m); need.add(o.wasm10k); need.add(o.evm1m); need.add(o.evm10k); }
    if (o.only.has('deep')) { need.add(o.wasm1m); need.add(o.evm1m); }
    if (o.only.has('rss') || o.only.has('workers') || o.only.has('cold-start')) need.add(o.wasm1m);
    if (need.has(o.wasm1m)) ensureSnapshot(o.wasm1m, 'wasm', 1_000_000);
    if (need.has(o.wasm10k)) ensureSnapshot(o.wasm10k, 'wasm', 10_000);
    if (need.has(o.evm1m)) ensureSnapshot(o.evm1m, 'evm', 1_000_000);
    if (need.has(o.evm10k)) ensureSnapshot(o.evm10k, 'evm', 10_000);
    const env = {
      node: process.version, cpus: availableParallelism(), cpu: cpus()[0]?.model, tool: o.tool,
      pinning: this.serverCpus === undefined ? 'none' : `server on CPU ${this.serverCpus}, load generator on CPU ${this.loadCpus} (taskset)`,
      runs: o.runs, seconds: o.seconds, warmup: o.warmup, connections: o.connections, serveArgs: o.serveArgs.join(' '), rotate: o.rotate,
    };
    this.results.env = env;
    this.print(`## indexer-api serve benchmarks — ${new Date().toISOString()}\n`);
    this.print(`Node.js ${env.node}, ${env.cpus} × ${env.cpu}; load: ${env.tool}, ${o.connections} connections, ${o.warmup} s warm-up + ${o.seconds} s per measurement; ${env.pinning}; `
      + `serve ${env.serveArgs ? env.serveArgs : 'with default options'} (log level info, lines to /dev/null)`
      + `${o.rotate ? '; --rotate: every request a new URL (bench_r=<n> appended), so every request is a miss' : '; one fixed URL per measurement'}.`);
    try {
      if (o.only.has('families')) await this.families();
      if (o.only.has('deep')) await this.deep();
      if (o.only.has('rss')) await this.rss();
      if (o.only.has('workers')) await this.workers();
      if (o.only.has('cold-start')) await this.coldStart();
    } finally {
      rmSync(this.scratch, { recursive: true, force: true });
      const dir = join(ROOT, 'bench', 'results');
      mkdirSync(dir, { recursive: true });
      const file = join(dir, `serve-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
      writeFileSync(file, JSON.stringify(this.results, null, 2) + '\n');
      process.stderr.write(`bench: results in ${file}\n`);
    }
  }
}

if (require.main === module) {
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => { void stopAll().then(() => process.exit(130)); });
  }
  new Bench(options(process.argv.slice(2))).run().catch((e: Error) => {
    process.stderr.write(`bench: ${e.message}\n`);
    process.exit(1);
  });
}
