import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { toBech32 } from '../src/lib/address';
import { openSnapshot } from '../src/snapshot/open';
import { encodeKey } from '../src/snapshot/pagination';
import { defaultTool, hasTaskset, LoadResult, runLoad } from './load';
import { capture, cpuSecondsOf, freePort, Running, startBare, startOurs, stopAll } from './servers';

/**
 * Cold mix: what a public replica serves to crawlers — every URL seen once. Per route family a
 * list of random entities from the snapshot (tx hashes, block heights, accounts, deep offsets),
 * requested in turn with `bench_r=<n>` appended so no URL repeats (no cache can answer), by
 * wrk (50 keep-alive connections, pinned to CPU 1) against, in the same run and in rotating
 * order, each server pinned to CPU 0:
 *   - ours, default options (response cache on, admission on second sight);
 *   - ours with --cache-bytes 0 (no body kept; validators still kept, issue #36);
 *   - ours with --cache-validator-bytes 0 (no response cache at all);
 *   - minimal (bench/minimal.ts): node:http + the same SQL and serializers, byte-identical bodies
 *     (checked on a sample of URLs before measuring).
 * Server CPU µs per request (user + system from /proc over the measured run ÷ requests) is the
 * figure to compare on a shared machine; req/s and p99 are reported too. Median of --runs.
 * Then the hot case: one fixed URL per family, ours (default, every request a cache hit) vs
 * bench/bare.ts (node:http sending the captured bytes from memory).
 *
 *   node build/bench/cold-mix.js --db wasm.sqlite [--db evm.sqlite] [--runs 3] [--seconds 8] [--warmup 2]
 *     [--connections 50] [--urls 20000] [--no-hot] [--family SUBSTRING]   (only the families whose name has it)
 *     [--accept-encoding gzip]   (every request sends it: the gzip misses of issue #23)
 *     [--before-root DIR --before-db FILE]   (a fourth server in the same runs: another build of
 *        indexer-api, default options, on its own file — e.g. the release before packed rows on a
 *        wire-format-1 copy of the chain: "today's identity miss")
 */

const ROOT = resolve(__dirname, '..', '..');

interface Options {
  dbs: string[]; runs: number; seconds: number; warmup: number; connections: number; urls: number; hot: boolean; family?: string;
  acceptEncoding?: string; beforeRoot?: string; beforeDb?: string;
}

function options(argv: string[]): Options {
  const opt = (name: string, fallback: string): string => { const i = argv.indexOf(`--${name}`); return i < 0 ? fallback : argv[i + 1]; };
  const dbs = argv.flatMap((a, i) => (a === '--db' ? [resolve(argv[i + 1])] : []));
  if (!dbs.length) throw new Error('usage: node build/bench/cold-mix.js --db FILE [--db FILE] [--runs 3] [--seconds 8] [--urls 20000]');
  return {
    dbs, runs: Number(opt('runs', '3')), seconds: Number(opt('seconds', '8')), warmup: Number(opt('warmup', '2')),
    connections: Number(opt('connections', '50')), urls: Number(opt('urls', '20000')), hot: !argv.includes('--no-hot'),
    family: argv.includes('--family') ? opt('family', '') : undefined,
    acceptEncoding: argv.includes('--accept-encoding') ? opt('accept-encoding', '') : undefined,
    beforeRoot: argv.includes('--before-root') ? resolve(opt('before-root', '')) : undefined,
    beforeDb: argv.includes('--before-db') ? resolve(opt('before-db', '')) : undefined,
  };
}

interface Family { family: string; rows: number; urls: string[] }

/** Random entities of each family, from the snapshot. */
function familiesOf(file: string, n: number): Family[] {
  const s = openSnapshot(file);
  try {
    const all = <T>(sql: string, ...args: unknown[]): T[] => s.db.prepare(sql).all(...args) as T[];
    const hashes = all<{ hash: Buffer }>('SELECT hash FROM txs ORDER BY random() LIMIT ?', n);
    const heights = all<{ height: number }>('SELECT height FROM blocks ORDER BY random() LIMIT ?', n);
    const busy = all<{ height: number }>('SELECT height FROM blocks WHERE tx_count > 0 ORDER BY random() LIMIT ?', n);
    const accounts = all<{ addr: Buffer }>('SELECT addr FROM accounts WHERE tx_count > 0 ORDER BY random() LIMIT ?', n);
    const total = s.meta.countTxs;
    // a key names the last row of the previous page (src/snapshot/list-query.ts keyOf): any sequence with ≥ 100 older rows
    const keys = all<{ sequence: number }>('SELECT sequence FROM txs WHERE sequence > 100 ORDER BY random() LIMIT ?', n);
    const offsets = Array.from({ length: n }, () => Math.floor(Math.random() * Math.max(1, total - 100)));
    // the filters (rollytics' msgs is an OR over types; is_signer): the two commonest types, one rarer
    const types = all<{ name: string }>('SELECT name FROM msg_types ORDER BY tx_count DESC').map((r) => r.name);
    const msgs = (i: number): string => encodeURIComponent(i % 3 === 2 && types.length > 2 ? `${types[0]},${types[2]}` : types[i % Math.min(2, types.length)]);
    return [
      { family: 'tx by hash', rows: 1, urls: hashes.map((r) => `/indexer/tx/v1/txs/${r.hash.toString('hex').toUpperCase()}`) },
      { family: 'block by height', rows: 1, urls: heights.map((r) => `/indexer/block/v1/blocks/${r.height}`) },
      { family: 'txs by account, 10-row page', rows: 10, urls: accounts.map((r) => `/indexer/tx/v1/txs/by_account/${toBech32(r.addr, s.meta.prefix)}?pagination.limit=10`) },
      { family: 'txs, 100-row pages at random depth', rows: 100, urls: offsets.map((o) => `/indexer/tx/v1/txs?pagination.limit=100&pagination.offset=${o}`) },
      { family: 'txs, 100-row pages by pagination.key', rows: 100, urls: keys.map((r) => `/indexer/tx/v1/txs?pagination.limit=100&pagination.key=${encodeURIComponent(encodeKey({ sequence: r.sequence }))}`) },
      { family: 'txs by height', rows: 100, urls: busy.map((r) => `/indexer/tx/v1/txs/by_height/${r.height}`) },
      { family: 'txs by account, is_signer', rows: 10, urls: accounts.map((r) => `/indexer/tx/v1/txs/by_account/${toBech32(r.addr, s.meta.prefix)}?pagination.limit=10&is_signer=true`) },
      { family: 'txs by account, msgs', rows: 10, urls: accounts.map((r, i) => `/indexer/tx/v1/txs/by_account/${toBech32(r.addr, s.meta.prefix)}?pagination.limit=10&msgs=${msgs(i)}`) },
      { family: 'txs by account, msgs + is_signer', rows: 10, urls: accounts.map((r, i) => `/indexer/tx/v1/txs/by_account/${toBech32(r.addr, s.meta.prefix)}?pagination.limit=10&msgs=${msgs(i)}&is_signer=true`) },
      { family: 'txs, msgs, 100-row pages by pagination.key', rows: 100, urls: keys.map((r, i) => `/indexer/tx/v1/txs?pagination.limit=100&msgs=${msgs(i)}&pagination.key=${encodeURIComponent(encodeKey({ sequence: r.sequence }))}`) },
    ];
  } finally {
    s.close();
  }
}

function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Buffer }> {
  return new Promise((done, fail) => {
    request(url, { agent: false, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (b: Buffer) => chunks.push(b));
      res.on('end', () => done({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', fail);
    }).on('error', fail).end();
  });
}

async function startMinimal(db: string): Promise<Running> {
  const port = await freePort();
  const args = [join(ROOT, 'build', 'bench', 'minimal.js'), db, String(port)];
  const proc = hasTaskset() ? spawn('taskset', ['-c', '0', process.execPath, ...args], { stdio: ['ignore', 'pipe', 'inherit'] })
    : spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((done, fail) => {
    proc.stdout?.once('data', () => done());
    proc.once('exit', (c) => fail(new Error(`minimal server exited ${c}`)));
  });
  proc.stdout?.resume();
  return {
    url: `http://127.0.0.1:${port}`, proc, lines: [],
    stop: async () => { proc.kill('SIGTERM'); await new Promise((d) => proc.once('exit', d)); },
  };
}

/** A wrk script that walks `urls` from a random start, `bench_r=<n>` appended (never the same URL twice). */
function rotateScript(dir: string, family: Family, acceptEncoding: string | undefined): string {
  const list = join(dir, `${family.family.replace(/\W+/g, '-')}.txt`);
  writeFileSync(list, `${family.urls.join('\n')}\n`);
  const file = `${list}.lua`;
  writeFileSync(file, [
    'local urls = {}',
    `for line in io.lines(${JSON.stringify(list)}) do urls[#urls + 1] = line end`,
    'math.randomseed(os.time() + os.clock() * 1e6)',
    'local i = math.random(#urls)',
    `local n = ${Math.floor(Math.random() * 1e12)}`,
    'request = function()',
    '  i = i % #urls + 1',
    '  n = n + 1',
    '  local u = urls[i]',
    '  local sep = "?"',
    '  if string.find(u, "?", 1, true) then sep = "&" end',
    `  return wrk.format("GET", u .. sep .. "bench_r=" .. string.format("%d", n)${acceptEncoding === undefined ? '' : `, { ["Accept-Encoding"] = ${JSON.stringify(acceptEncoding)} }`})`,
    'end',
  ].join('\n'));
  return file;
}

interface Measured extends LoadResult { cpuUs: number }

async function measure(base: string, pid: number, script: string | undefined, o: Options, seconds: number): Promise<Measured> {
  const before = cpuSecondsOf(pid) ?? NaN;
  const r = await runLoad({ url: `${base}/`, connections: o.connections, seconds, cpus: hasTaskset() ? '1' : undefined, tool: 'wrk', root: ROOT, script });
  const cpu = (cpuSecondsOf(pid) ?? NaN) - before;
  return { ...r, cpuUs: (cpu * 1e6) / Math.max(1, r.requests) };
}

const median = (xs: number[]): number => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
type Summary = { rps: number; p99: number; cpuUs: number; errors: number };
const summary = (rs: Measured[]): Summary =>
  ({ rps: median(rs.map((r) => r.rps)), p99: median(rs.map((r) => r.p99)), cpuUs: median(rs.map((r) => r.cpuUs)), errors: rs.reduce((a, r) => a + r.errors, 0) });
const f0 = (x: number): string => Math.round(x).toLocaleString('en-US');
const pct = (x: number): string => `${Math.round(x * 100)} %`;

async function main(): Promise<void> {
  const o = options(process.argv.slice(2));
  if (defaultTool() !== 'wrk') throw new Error('bench: cold-mix needs wrk (apt-get install wrk)');
  const scratch = mkdtempSync(join(tmpdir(), 'indexer-api-cold-mix-'));
  const out: Record<string, unknown>[] = [];
  try {
    for (const db of o.dbs) {
      const families = familiesOf(db, o.urls).filter((f) => o.family === undefined || f.family.includes(o.family));
      const servers: Record<string, Running> = {
        default: await startOurs(ROOT, db, { cpus: hasTaskset() ? '0' : undefined, extra: [] }),
        cache0: await startOurs(ROOT, db, { cpus: hasTaskset() ? '0' : undefined, extra: ['--cache-bytes', '0'] }),
        nocache: await startOurs(ROOT, db, { cpus: hasTaskset() ? '0' : undefined, extra: ['--cache-validator-bytes', '0'] }),
        minimal: await startMinimal(db),
      };
      if (o.beforeRoot !== undefined) servers.before = await startOurs(o.beforeRoot, o.beforeDb ?? db, { cpus: hasTaskset() ? '0' : undefined, extra: [] });
      const ae: Record<string, string> = o.acceptEncoding === undefined ? {} : { 'accept-encoding': o.acceptEncoding };
      try {
        // byte-identical bodies, or the comparison means nothing
        for (const f of families) {
          for (const u of f.urls.slice(0, 20)) {
            const [a, b] = [await get(servers.cache0.url + u, ae), await get(servers.minimal.url + u, ae)];
            if (a.status !== 200 || b.status !== 200 || !a.body.equals(b.body)) throw new Error(`bench: ${u}: ours ${a.status} vs minimal ${b.status}, bodies ${a.body.equals(b.body) ? 'equal' : 'differ'}`);
          }
        }
        const names = Object.keys(servers);
        const raw: Record<string, Record<string, Measured[]>> = {};
        for (let run = 0; run < o.runs; run++) {
          for (const f of families) {
            const script = rotateScript(scratch, f, o.acceptEncoding);
            raw[f.family] ??= Object.fromEntries(names.map((n) => [n, [] as Measured[]]));
            for (let k = 0; k < names.length; k++) {
              const name = names[(k + run) % names.length];
              const s = servers[name];
              if (o.warmup > 0) await measure(s.url, s.proc.pid as number, script, o, o.warmup);
              raw[f.family][name].push(await measure(s.url, s.proc.pid as number, script, o, o.seconds));
            }
            process.stderr.write(`cold-mix: ${basename(db)} run ${run + 1}/${o.runs}: ${f.family}\n`);
          }
        }
        const rows = families.map((f) => {
          const [d, c, m, b, n] = ['default', 'cache0', 'minimal', 'before', 'nocache'].map((k) => (raw[f.family][k] ? summary(raw[f.family][k]) : undefined));
          return { family: f.family, rows: f.rows, default: d as Summary, cache0: c as Summary, minimal: m as Summary, before: b, nocache: n as Summary, raw: raw[f.family] };
        });
        let hot: Record<string, unknown>[] = [];
        if (o.hot) hot = await hotCase(servers.default, families, o, scratch);
        out.push({ db, rows, hot });
        const print = (s: string): void => { process.stdout.write(`${s}\n`); };
        print(`\n### Cold mix on ${basename(db)} (every URL seen once), ${o.connections} connections, --workers 1, median of ${o.runs} runs`
          + `${o.acceptEncoding === undefined ? ', no Accept-Encoding' : `, Accept-Encoding: ${o.acceptEncoding}`}\n`);
        print('| route family | CPU µs/req minimal | ours default | ours --cache-bytes 0 | ours no cache | ours/minimal req/s per CPU (default) | default/0 miss cost | default/no cache | p99 ms minimal / default / 0 | req/s minimal / default / 0 |');
        print('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
        for (const r of rows) {
          print(`| ${r.family} | ${f0(r.minimal.cpuUs)} | ${f0(r.default.cpuUs)} | ${f0(r.cache0.cpuUs)} | ${f0(r.nocache.cpuUs)} | ${pct(r.minimal.cpuUs / r.default.cpuUs)} | ${(r.default.cpuUs / r.cache0.cpuUs).toFixed(2)}× `
            + `| ${(r.default.cpuUs / r.nocache.cpuUs).toFixed(2)}× | ${r.minimal.p99.toFixed(1)} / ${r.default.p99.toFixed(1)} / ${r.cache0.p99.toFixed(1)} | ${f0(r.minimal.rps)} / ${f0(r.default.rps)} / ${f0(r.cache0.rps)} |`);
        }
        if (o.beforeRoot !== undefined) {
          print(`\nBefore: ${o.beforeRoot} serving ${basename(o.beforeDb ?? db)} (default options), same runs:\n`);
          print('| route family | CPU µs/req before | ours default | ours/before | before/minimal | ours/minimal |');
          print('|---|---:|---:|---:|---:|---:|');
          for (const r of rows) {
            const b = r.before as Summary;
            print(`| ${r.family} | ${f0(b.cpuUs)} | ${f0(r.default.cpuUs)} | ${(r.default.cpuUs / b.cpuUs).toFixed(2)}× | ${(b.cpuUs / r.minimal.cpuUs).toFixed(2)}× | ${(r.default.cpuUs / r.minimal.cpuUs).toFixed(2)}× |`);
          }
        }
        const errors = rows.reduce((a, r) => a + r.default.errors + r.cache0.errors + r.nocache.errors + r.minimal.errors + (r.before?.errors ?? 0), 0);
        if (errors) print(`\n**${errors} failed requests during the runs.**`);
        if (hot.length) {
          print(`\n### Hot (one URL per family, repeated): ours (default, cache hits) vs bare node:http sending the same bytes, median of ${o.runs} runs\n`);
          print('| route family | CPU µs/req bare | ours | ours/bare req/s per CPU | req/s bare / ours | p99 ms bare / ours |');
          print('|---|---:|---:|---:|---:|---:|');
          for (const h of hot as { family: string; bare: ReturnType<typeof summary>; ours: ReturnType<typeof summary> }[]) {
            print(`| ${h.family} | ${h.bare.cpuUs.toFixed(1)} | ${h.ours.cpuUs.toFixed(1)} | ${pct(h.bare.cpuUs / h.ours.cpuUs)} | ${f0(h.bare.rps)} / ${f0(h.ours.rps)} | ${h.bare.p99.toFixed(2)} / ${h.ours.p99.toFixed(2)} |`);
          }
        }
      } finally {
        await Promise.all(Object.values(servers).map((s) => s.stop()));
      }
    }
    mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
    writeFileSync(join(ROOT, 'bench', 'results', `cold-mix-${new Date().toISOString().replace(/[:.]/g, '-')}.json`), JSON.stringify(out, null, 1));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** One fixed URL per family: ours (a cache hit after the warm-up) vs bare node:http with the same bytes. */
async function hotCase(ours: Running, families: Family[], o: Options, scratch: string): Promise<Record<string, unknown>[]> {
  const urls = families.map((f) => f.urls[0]);
  const captured: Parameters<typeof startBare>[1] = {};
  for (const u of urls) { await get(ours.url + u); captured[u] = await capture(ours.url + u); }
  const bare = await startBare(ROOT, captured, scratch, hasTaskset() ? '0' : undefined);
  try {
    const raw = urls.map(() => ({ ours: [] as Measured[], bare: [] as Measured[] }));
    for (let run = 0; run < o.runs; run++) {
      for (let i = 0; i < urls.length; i++) {
        const order: ['ours' | 'bare', Running][] = run % 2 ? [['bare', bare], ['ours', ours]] : [['ours', ours], ['bare', bare]];
        for (const [name, s] of order) {
          const one = { ...o, connections: o.connections };
          if (o.warmup > 0) await runLoad({ url: s.url + urls[i], connections: one.connections, seconds: o.warmup, cpus: hasTaskset() ? '1' : undefined, tool: 'wrk', root: ROOT });
          const before = cpuSecondsOf(s.proc.pid as number) ?? NaN;
          const r = await runLoad({ url: s.url + urls[i], connections: one.connections, seconds: o.seconds, cpus: hasTaskset() ? '1' : undefined, tool: 'wrk', root: ROOT });
          const cpu = (cpuSecondsOf(s.proc.pid as number) ?? NaN) - before;
          raw[i][name].push({ ...r, cpuUs: (cpu * 1e6) / Math.max(1, r.requests) });
        }
      }
      process.stderr.write(`cold-mix: hot run ${run + 1}/${o.runs}\n`);
    }
    return families.map((f, i) => ({ family: f.family, url: urls[i], ours: summary(raw[i].ours), bare: summary(raw[i].bare), raw: raw[i] }));
  } finally {
    await bare.stop();
  }
}

if (require.main === module) {
  process.once('SIGINT', () => { void stopAll().then(() => process.exit(130)); });
  main().catch((e: Error) => { process.stderr.write(`cold-mix: ${e.message}\n`); void stopAll().then(() => process.exit(1)); });
}
