import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus as cpuList, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { toBech32 } from '../src/lib/address';
import { openSnapshot } from '../src/snapshot/open';
import { hasTaskset, runLoad } from './load';
import { cpuSecondsOf, freePort, rssOf } from './servers';

/**
 * Many chains in one replica (issue #31): 20 chains — generated, small and large mixed — served
 * by one `serve --db f1 … --db f20` beside the same 20 files served by 20 single-chain
 * processes, `--workers 1` everywhere, in the same run:
 *   (a) resident memory (VmRSS from /proc) after all are ready and a warm-up of a few requests
 *       per chain: the one process vs the sum of the 20; and the one process with the first
 *       1, 5, 10, 20 chains (the memory each added chain costs: least-squares slope);
 *   (b) cold start to all ready: spawn → root /ready 200 with every chain's own answer ready
 *       (polled every 10 ms), vs the 20 spawned at once → every /ready 200;
 *   (c) a request's cost: server CPU µs per request (utime + stime from /proc ÷ requests, wrk
 *       pinned to CPU 1, servers to CPU 0) on one chain of the multi-chain process vs the same
 *       URLs on that chain's own process, misses (every URL distinct: pagination.limit/offset,
 *       accounts, heights varied) and hits (a few fixed URLs repeated); ratio per run, median
 *       of runs.
 * Snapshots are generated and imported once into --data (default /work/data-many, kept for
 * reruns); each file's meta chain_id is set to its file name (the generator gives every chain of
 * one VM the same id).
 *
 *   node build/bench/many-chains.js [--data DIR] [--runs 5] [--seconds 5] [--connections 16]
 *     [--chain NAME] (the chain of (c); default the first) [--only rss,cold,cost] [--json FILE]
 */

const ROOT = resolve(__dirname, '..', '..');
const CLI = join(ROOT, 'bin', 'indexer-api');

interface Spec { name: string; vm: 'move' | 'wasm' | 'evm'; preset: 'demo' | 'scale'; txs: number; holders?: number; seed: number }

/** The 20 chains: 18 small (demo preset, 300–3000 txs, the three VMs in turn) and 2 large, at positions 4 and 14. */
export function chainSpecs(): Spec[] {
  const vms = ['move', 'wasm', 'evm'] as const;
  const sizes = [3000, 300, 800, 1500, 500, 2000, 1000, 2500, 600];
  const small: Spec[] = Array.from({ length: 18 }, (_, k) => {
    const i = k + 1;
    const vm = vms[k % 3];
    return { name: `mini${vm}-s${i}`, vm, preset: 'demo', txs: sizes[k % sizes.length], seed: 100 + i };
  });
  const big: Spec[] = [
    { name: 'minievm-big-1', vm: 'evm', preset: 'scale', txs: 100_000, holders: 50_000, seed: 201 },
    { name: 'miniwasm-big-1', vm: 'wasm', preset: 'scale', txs: 60_000, seed: 202 },
  ];
  return [...small.slice(0, 3), big[0], ...small.slice(3, 12), big[1], ...small.slice(12)];
}

function sh(args: string[]): void {
  const r = spawnSync(process.execPath, [CLI, ...args], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`indexer-api ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
}

/** DIR/NAME.sqlite for each spec, generated and imported when missing. */
function prepare(data: string, specs: Spec[]): string[] {
  mkdirSync(data, { recursive: true });
  return specs.map((s) => {
    const file = join(data, `${s.name}.sqlite`);
    if (existsSync(file)) return file;
    const t0 = Date.now();
    const dump = join(data, `dump-${s.name}`);
    const tmp = join(data, `.${s.name}.tmp.sqlite`);
    rmSync(dump, { recursive: true, force: true });
    rmSync(tmp, { force: true });
    sh(['generate', '--vm', s.vm, '--preset', s.preset, '--txs', String(s.txs), ...(s.holders ? ['--holders', String(s.holders)] : []), '--seed', String(s.seed), '--out', dump, '--quiet']);
    sh(['import', '--from-dump', dump, '--out', tmp]);
    const db = new Database(tmp);
    db.prepare("UPDATE meta SET value = ? WHERE key = 'chain_id'").run(s.name);
    db.pragma('journal_mode = DELETE');
    db.close();
    renameSync(tmp, file);
    rmSync(dump, { recursive: true, force: true });
    process.stderr.write(`many-chains: ${s.name} (${s.vm}, ${s.txs} txs) in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
    return file;
  });
}

interface Proc { proc: ChildProcess; url: string; ops?: string; stop(): Promise<void> }

function pinned(cpus: string | undefined, args: string[]): ChildProcess {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('INDEXER_API_')));
  const [cmd, a] = cpus === undefined ? [process.execPath, args] : ['taskset', ['-c', cpus, process.execPath, ...args]];
  return spawn(cmd, a, { stdio: ['ignore', 'ignore', 'pipe'], env });
}

/** `serve --workers 1` of these files on a free port (log level warn); returns at once (not waiting for ready). */
async function spawnServe(files: string[], cpus?: string): Promise<Proc> {
  const port = await freePort();
  const proc = pinned(cpus, [CLI, 'serve', ...files.flatMap((f) => ['--db', f]), '--port', String(port), '--workers', '1', '--log-level', 'warn']);
  let err = '';
  proc.stderr?.setEncoding('utf8').on('data', (s: string) => { if (err.length < 8192) err += s; });
  const exited = new Promise<void>((d) => proc.once('exit', () => d()));
  proc.once('exit', (code, sig) => { if (code !== 0 && sig !== 'SIGTERM' && sig !== 'SIGKILL') process.stderr.write(`many-chains: serve exited ${code ?? sig}: ${err}\n`); });
  return {
    proc, url: `http://127.0.0.1:${port}`,
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(t);
    },
  };
}

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((done) => {
    request(url, { agent, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (s: string) => { body += s; });
      res.on('end', () => done({ status: res.statusCode ?? 0, body }));
      res.on('error', () => done({ status: 0, body: '' }));
    }).on('error', () => done({ status: 0, body: '' })).end();
  });
}

const sleep = (ms: number): Promise<void> => new Promise((d) => setTimeout(d, ms));

/** Polls until `ok` (every 10 ms); ms since `t0`. */
async function until(t0: bigint, ok: () => Promise<boolean>, limitMs = 600_000): Promise<number> {
  for (;;) {
    if (await ok()) return Number(process.hrtime.bigint() - t0) / 1e6;
    if (Number(process.hrtime.bigint() - t0) / 1e6 > limitMs) throw new Error('bench: not ready in time');
    await sleep(10);
  }
}

/** The multi-chain root /ready is 200 with every one of `n` chains' own answer ready. */
async function allReady(url: string, n: number): Promise<boolean> {
  const r = await get(`${url}/ready`);
  if (r.status !== 200) return false;
  const chains = (JSON.parse(r.body) as { chains?: Record<string, { status?: string }> }).chains ?? {};
  return Object.keys(chains).length === n && Object.values(chains).every((c) => c.status === 'ready');
}

async function readyOne(url: string): Promise<boolean> {
  return (await get(`${url}/ready`)).status === 200;
}

/** A few requests per chain: status, a txs page, a block, an account's txs. */
async function warm(base: string, w: Warm): Promise<void> {
  for (const u of [...w.hits, w.misses[0], w.misses[1]]) {
    const r = await get(base + u);
    if (r.status !== 200) throw new Error(`bench: ${base}${u}: ${r.status}`);
  }
}

interface Warm { hits: string[]; misses: string[] }

/** The URL mix of one chain: `hits` (4 fixed URLs: status, a txs page, an account's txs, a block) and `misses` (distinct URLs of the same families). */
function urlsOf(file: string, n: number): Warm {
  const s = openSnapshot(file);
  try {
    const all = <T>(sql: string, ...args: unknown[]): T[] => s.db.prepare(sql).all(...args) as T[];
    const accounts = all<{ addr: Buffer }>('SELECT addr FROM accounts WHERE tx_count > 0 ORDER BY addr LIMIT 500').map((r) => toBech32(r.addr, s.meta.prefix));
    const heights = all<{ height: number }>('SELECT height FROM blocks ORDER BY height').map((r) => r.height);
    const total = s.meta.countTxs;
    const hits = [
      '/status',
      '/indexer/tx/v1/txs?pagination.limit=10',
      `/indexer/tx/v1/txs/by_account/${accounts[0]}?pagination.limit=10`,
      `/indexer/block/v1/blocks/${heights[Math.floor(heights.length / 2)]}`,
    ];
    // four families of distinct URLs, taken in turn until each runs out
    function* txsPages(): Generator<string> {
      for (let limit = 5; limit <= 30; limit++) for (let o = 0; o < Math.max(1, total - limit); o++) yield `/indexer/tx/v1/txs?pagination.limit=${limit}&pagination.offset=${o}`;
    }
    function* byAccount(): Generator<string> {
      for (let o = 0; o < 5; o++) for (let limit = 5; limit <= 30; limit++) for (const a of accounts) yield `/indexer/tx/v1/txs/by_account/${a}?pagination.limit=${limit}&pagination.offset=${o}`;
    }
    function* blocks(): Generator<string> {
      for (const h of heights) yield `/indexer/block/v1/blocks/${h}`;
    }
    function* blockPages(): Generator<string> {
      for (let limit = 5; limit <= 30; limit++) for (let o = 0; o < Math.max(1, heights.length - limit); o++) yield `/indexer/block/v1/blocks?pagination.limit=${limit}&pagination.offset=${o}`;
    }
    const families = [txsPages(), byAccount(), blocks(), blockPages()];
    const misses: string[] = [];
    while (misses.length < n && families.length > 0) {
      for (let f = 0; f < families.length && misses.length < n; f++) {
        const next = families[f].next();
        if (next.done) families.splice(f--, 1);
        else misses.push(next.value);
      }
    }
    return { hits, misses: [...new Set(misses)] };
  } finally {
    s.close();
  }
}

const median = (xs: number[]): number => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const kib = (pid: number): number => rssOf(pid)?.rss ?? NaN;
/** Proportional set size, KiB (/proc/PID/smaps_rollup): pages shared between processes (node's code, a file's page cache) counted once over the processes sharing them. */
function pssOf(pid: number): number {
  try {
    return Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}
const mib = (k: number): string => (k / 1024).toFixed(1);
const load = (): string => loadavg()[0].toFixed(2);

/** Least-squares slope of y over x. */
function slope(xs: number[], ys: number[]): number {
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  let num = 0;
  let den = 0;
  for (let i = 0; i < xs.length; i++) { num += (xs[i] - mx) * (ys[i] - my); den += (xs[i] - mx) ** 2; }
  return num / den;
}

/** A wrk script walking `urls` in turn from a random start (each request the next URL). */
function walkScript(dir: string, name: string, prefix: string, urls: string[]): string {
  const list = join(dir, `${name}.txt`);
  writeFileSync(list, `${urls.map((u) => prefix + u).join('\n')}\n`);
  const file = `${list}.lua`;
  writeFileSync(file, [
    'local urls = {}',
    `for line in io.lines(${JSON.stringify(list)}) do urls[#urls + 1] = line end`,
    'math.randomseed(os.time() + os.clock() * 1e6)',
    'local i = math.random(#urls)',
    'request = function()',
    '  i = i % #urls + 1',
    '  return wrk.format("GET", urls[i])',
    'end',
  ].join('\n'));
  return file;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const opt = (name: string, fallback: string): string => { const i = argv.indexOf(`--${name}`); return i < 0 ? fallback : argv[i + 1]; };
  const data = resolve(opt('data', '/work/data-many'));
  const runs = Number(opt('runs', '5'));
  const seconds = Number(opt('seconds', '5'));
  const connections = Number(opt('connections', '16'));
  const only = new Set(opt('only', 'rss,cold,cost').split(','));
  const specs = chainSpecs();
  const files = prepare(data, specs);
  const names = specs.map((s) => s.name);
  const chain = opt('chain', names[0]);
  const ci = names.indexOf(chain);
  if (ci < 0) throw new Error(`bench: --chain ${chain}: not one of ${names.join(', ')}`);
  const warms = files.map((f) => urlsOf(f, 2));
  const scratch = mkdtempSync(join(tmpdir(), 'indexer-api-many-chains-'));
  const out: Record<string, unknown> = { when: new Date().toISOString(), cpus: cpuList().length, chains: specs, runs };
  const print = (s: string): void => { process.stdout.write(`${s}\n`); };
  const live = new Set<Proc>();
  const stopAll = async (): Promise<void> => { await Promise.all([...live].map((p) => p.stop())); live.clear(); };
  process.once('SIGINT', () => { void stopAll().then(() => process.exit(130)); });
  try {
    // (b) and (a): cold start to all ready, then the RSS of both layouts after a warm-up; the two layouts alternate
    if (only.has('cold') || only.has('rss')) {
      const rows: { run: number; multiMs: number; singlesMs: number; multiKiB: number; singlesKiB: number; multiPss: number; singlesPss: number; loadStart: string; loadEnd: string }[] = [];
      for (let run = 0; run < runs; run++) {
        const order = run % 2 === 0 ? ['multi', 'singles'] : ['singles', 'multi'];
        const row = { run: run + 1, multiMs: 0, singlesMs: 0, multiKiB: 0, singlesKiB: 0, multiPss: 0, singlesPss: 0, loadStart: load(), loadEnd: '' };
        for (const which of order) {
          if (which === 'multi') {
            const t0 = process.hrtime.bigint();
            const p = await spawnServe(files);
            live.add(p);
            row.multiMs = await until(t0, () => allReady(p.url, files.length));
            for (let i = 0; i < files.length; i++) await warm(`${p.url}/${names[i]}`, warms[i]);
            await sleep(500);
            row.multiKiB = kib(p.proc.pid as number);
            row.multiPss = pssOf(p.proc.pid as number);
          } else {
            const t0 = process.hrtime.bigint();
            const ps = await Promise.all(files.map((f) => spawnServe([f])));
            ps.forEach((p) => live.add(p));
            const each = await Promise.all(ps.map((p) => until(t0, () => readyOne(p.url))));
            row.singlesMs = Math.max(...each);
            for (let i = 0; i < files.length; i++) await warm(ps[i].url, warms[i]);
            await sleep(500);
            row.singlesKiB = ps.reduce((a, p) => a + kib(p.proc.pid as number), 0);
            row.singlesPss = ps.reduce((a, p) => a + pssOf(p.proc.pid as number), 0);
          }
          await stopAll();
        }
        row.loadEnd = load();
        rows.push(row);
        process.stderr.write(`many-chains: start/rss run ${run + 1}/${runs}: one ${row.multiMs.toFixed(0)} ms ${mib(row.multiKiB)} MiB, 20 ${row.singlesMs.toFixed(0)} ms ${mib(row.singlesKiB)} MiB (load ${row.loadStart}→${row.loadEnd})\n`);
      }
      out.startAndRss = rows;
      print(`\n### Cold start to all ${files.length} chains ready, and resident memory after a warm-up (--workers 1; median of ${runs} runs)\n`);
      print('| run | one process: spawn → all ready ms | 20 processes at once: → all ready ms | ratio 20/one | one process RSS MiB | 20 processes Σ RSS MiB | ratio Σ/one | one PSS MiB | 20 Σ PSS MiB | ratio | load 1-min start→end |');
      print('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|');
      const line = (label: string, f: (g: (r: typeof rows[number]) => number) => number, loads: string): void => {
        print(`| ${label} | ${f((r) => r.multiMs).toFixed(0)} | ${f((r) => r.singlesMs).toFixed(0)} | ${f((r) => r.singlesMs / r.multiMs).toFixed(2)}× | ${mib(f((r) => r.multiKiB))} | ${mib(f((r) => r.singlesKiB))} | ${f((r) => r.singlesKiB / r.multiKiB).toFixed(2)}× | ${mib(f((r) => r.multiPss))} | ${mib(f((r) => r.singlesPss))} | ${f((r) => r.singlesPss / r.multiPss).toFixed(2)}× | ${loads} |`);
      };
      for (const r of rows) line(String(r.run), (g) => g(r), `${r.loadStart}→${r.loadEnd}`);
      line('**median**', (g) => median(rows.map(g)), '');

      // the memory each added chain costs: the one process with the first 1, 5, 10, 20 chains
      const counts = [1, 5, 10, 20].filter((n) => n <= files.length);
      const byCount: Record<number, number[]> = Object.fromEntries(counts.map((n) => [n, [] as number[]]));
      const slopes: number[] = [];
      for (let run = 0; run < runs; run++) {
        const ys: number[] = [];
        for (const n of counts) {
          const p = await spawnServe(files.slice(0, n));
          live.add(p);
          const t0 = process.hrtime.bigint();
          await until(t0, () => (n === 1 ? readyOne(p.url) : allReady(p.url, n)));
          for (let i = 0; i < n; i++) await warm(n === 1 ? p.url : `${p.url}/${names[i]}`, warms[i]);
          await sleep(500);
          const k = kib(p.proc.pid as number);
          byCount[n].push(k);
          ys.push(k);
          await stopAll();
        }
        slopes.push(slope(counts, ys));
      }
      out.rssByChains = byCount;
      print(`\n### Resident memory of the one process by the number of chains it serves (the first N of the list; median of ${runs} runs; load ${load()} at the end)\n`);
      print(`| chains | ${counts.join(' | ')} | slope per added chain (least squares, median of runs) |`);
      print(`|---|${counts.map(() => '---:').join('|')}|---:|`);
      print(`| RSS MiB | ${counts.map((n) => mib(median(byCount[n]))).join(' | ')} | ${mib(median(slopes))} MiB |`);
      print(`\nThe list: ${specs.map((s) => `${s.name} (${s.txs} txs${s.holders ? `, ${s.holders} holders` : ''})`).join(', ')}.`);
    }

    // (c) a request's cost on one chain: the multi-chain process vs the chain's own
    if (only.has('cost')) {
      const u = urlsOf(files[ci], 200_000);
      const cpu0 = hasTaskset() ? '0' : undefined;
      const rows: { run: number; kind: string; multiUs: number; singleUs: number; multiReq: number; singleReq: number; load: string }[] = [];
      const multi = await spawnServe(files, cpu0);
      const single = await spawnServe([files[ci]], cpu0);
      live.add(multi);
      live.add(single);
      await until(process.hrtime.bigint(), () => allReady(multi.url, files.length));
      await until(process.hrtime.bigint(), () => readyOne(single.url));
      // same answers on both, or the comparison means nothing
      for (const p of [...u.hits, ...u.misses.slice(0, 30)]) {
        const [a, b] = [await get(`${multi.url}/${chain}${p}`), await get(single.url + p)];
        if (a.status !== 200 || b.status !== 200) throw new Error(`bench: ${p}: multi ${a.status}, single ${b.status}`);
      }
      const servers = { multi: { base: multi.url, prefix: `/${chain}`, pid: multi.proc.pid as number }, single: { base: single.url, prefix: '', pid: single.proc.pid as number } };
      // misses: each run walks its own slice of the distinct URLs (none seen before by either server)
      const perRun = Math.floor(u.misses.length / (runs * 2));
      for (let run = 0; run < runs; run++) {
        for (const kind of ['miss', 'hit']) {
          const r = { run: run + 1, kind, multiUs: 0, singleUs: 0, multiReq: 0, singleReq: 0, load: load() };
          const order = (run % 2 === 0 ? ['multi', 'single'] : ['single', 'multi']) as ('multi' | 'single')[];
          for (const [k, name] of order.entries()) {
            const s = servers[name];
            const urls = kind === 'hit' ? u.hits : u.misses.slice((run * 2 + k) * perRun, (run * 2 + k + 1) * perRun);
            const script = walkScript(scratch, `${name}-${kind}-${run}`, s.prefix, urls);
            const before = cpuSecondsOf(s.pid) ?? NaN;
            const res = await runLoad({ url: `${s.base}/`, connections, seconds, cpus: hasTaskset() ? '1' : undefined, tool: 'wrk', root: ROOT, script });
            const us = (((cpuSecondsOf(s.pid) ?? NaN) - before) * 1e6) / Math.max(1, res.requests);
            if (res.errors > 0) process.stderr.write(`many-chains: ${name} ${kind} run ${run + 1}: ${res.errors} errors\n`);
            if (kind === 'miss' && res.requests > urls.length) process.stderr.write(`many-chains: ${name} miss run ${run + 1}: ${res.requests} requests over ${urls.length} URLs (some repeated)\n`);
            if (name === 'multi') { r.multiUs = us; r.multiReq = res.requests; } else { r.singleUs = us; r.singleReq = res.requests; }
          }
          rows.push(r);
          process.stderr.write(`many-chains: cost run ${run + 1}/${runs} ${kind}: one ${r.multiUs.toFixed(0)} µs, own ${r.singleUs.toFixed(0)} µs (load ${r.load})\n`);
        }
      }
      await stopAll();
      out.cost = { chain, rows };
      print(`\n### A request's cost on ${chain}: one process of ${files.length} chains vs the chain's own process (server CPU µs / request; wrk ${connections} connections ${seconds} s, pinned apart; median of ${runs} runs)\n`);
      print('| URLs | one process µs/req | own process µs/req | ratio one/own (median of per-run ratios) | per-run ratios | requests per run (one / own) | load 1-min |');
      print('|---|---:|---:|---:|---|---|---|');
      for (const kind of ['miss', 'hit']) {
        const rs = rows.filter((r) => r.kind === kind);
        print(`| ${kind === 'miss' ? 'misses (every URL distinct)' : 'hits (4 URLs repeated)'} | ${median(rs.map((r) => r.multiUs)).toFixed(0)} | ${median(rs.map((r) => r.singleUs)).toFixed(0)} | ${median(rs.map((r) => r.multiUs / r.singleUs)).toFixed(2)}× | ${rs.map((r) => (r.multiUs / r.singleUs).toFixed(2)).join(', ')} | ${f0(median(rs.map((r) => r.multiReq)))} / ${f0(median(rs.map((r) => r.singleReq)))} | ${rs.map((r) => r.load).join(', ')} |`);
      }
    }
  } finally {
    await stopAll();
    agent.destroy();
    rmSync(scratch, { recursive: true, force: true });
    const json = opt('json', '');
    if (json) writeFileSync(json, JSON.stringify(out, null, 2));
  }
}

const f0 = (x: number): string => Math.round(x).toLocaleString('en-US');

if (require.main === module) {
  main().then(() => process.exit(0), (e: unknown) => { process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`); process.exit(1); });
}
