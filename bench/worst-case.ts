import Database from 'better-sqlite3';
import { readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { toBech32, toHex0x } from '../src/lib/address';
import { startOurs, stopAll } from './servers';

/**
 * The worst request an anonymous client can send, searched for (issue #20): every list route of
 * openapi.yaml × limits × offsets (0, middle, end, 2^53 − 1) × reverse × key pages × every msgs
 * subset and the other filters, each timed against the first page of the same route (same path
 * parameters, same limit, no filter). Prints the worst ratios; the goal is every ratio ≤ 10 or
 * a fast 4xx.
 *
 *   node build/bench/worst-case.js --db X.sqlite [--reps 5] [--top 20] [--limits 1,100,1000] [--max-ms 200] [--subsets all|few]
 *     [--json out.json] [--root DIR] [--timeout-ms N] [--routes R1,R2]
 *   node build/bench/worst-case.js --db SMALL.sqlite --first-pages BIG.sqlite [--reps 9] [--limits …]
 *   node build/bench/worst-case.js --db X.sqlite --cases OLD.json [--top 8] [--root DIR] [--timeout-ms N]
 *
 * A request slower than --max-ms on its first run is not repeated (it is far off the goal anyway).
 * --subsets few: of the msgs subsets only each single type, the two commonest and all of them.
 * --root: the build to serve (another checkout's root, for a before/after); default this one.
 * --timeout-ms: a request not answered by then counts as that many ms (status 0, "≥" in the
 * table) and the server, still busy with it, is restarted (an old build on a big chain).
 * --routes: only these openapi.yaml routes (e.g. /indexer/tx/v1/txs,/indexer/tx/v1/txs/by_height/{height}).
 * --first-pages BIG: no search; each route's first page (same limits, its own path parameters on
 * each chain) on --db and on BIG, alternating, --reps rounds: whether first pages grow with the chain.
 * --cases OLD.json: no search; the --top worst of an earlier run's --json (routes without path
 * parameters only: they name the same list on any chain), each beside its first page.
 * The server runs with --no-verify (the start-up check of a 5 GB file would run beside the timings).
 *
 * The worst candidates are timed again at the end until the worst --top all were, each beside its
 * first page, the two alternating for max(--reps, 7) rounds and no --max-ms shortcut: one slow moment of a shared
 * machine must not make a ratio (a single run at 278 ms had made a 70-row by_height page 14.6×).
 *
 * The server is `indexer-api serve --workers 1` on 127.0.0.1; each request carries a unique
 * unknown parameter (bench_r) so no cache answers it. Times are client-side over keep-alive, the
 * median of --reps.
 */

const ROOT = join(__dirname, '..', '..');

interface Options { db: string; reps: number; top: number; limits: number[]; json?: string; maxMs: number; subsets: 'all' | 'few'; root: string; timeoutMs: number; routes?: string[]; firstPages?: string; cases?: string }

function options(argv: string[]): Options {
  const o: Options = { db: '', reps: 5, top: 20, limits: [1, 100, 1000], maxMs: 200, subsets: 'all', root: ROOT, timeoutMs: 0 };
  for (let i = 0; i < argv.length; i++) {
    const v = argv[i + 1];
    switch (argv[i]) {
      case '--db': o.db = v; i++; break;
      case '--reps': o.reps = Number(v); i++; break;
      case '--top': o.top = Number(v); i++; break;
      case '--limits': o.limits = v.split(',').map(Number); i++; break;
      case '--json': o.json = v; i++; break;
      case '--max-ms': o.maxMs = Number(v); i++; break;
      case '--subsets': o.subsets = v === 'few' ? 'few' : 'all'; i++; break;
      case '--root': o.root = v; i++; break;
      case '--timeout-ms': o.timeoutMs = Number(v); i++; break;
      case '--routes': o.routes = v.split(','); i++; break;
      case '--first-pages': o.firstPages = v; i++; break;
      case '--cases': o.cases = v; i++; break;
      default: throw new Error(`unknown option ${argv[i]}`);
    }
  }
  if (!o.db) throw new Error('--db FILE is required');
  return o;
}

let agent = new Agent({ keepAlive: true, maxSockets: 1 });
let counter = 0;

interface Answer { status: number; ms: number; bytes: number; body: Buffer; timedOut: boolean }

/** One cache-busted GET; after `timeoutMs` (0: never) it is abandoned and counts as that long. */
function get(url: string, timeoutMs = 0): Promise<Answer> {
  const sep = url.includes('?') ? '&' : '?';
  const full = `${url}${sep}bench_r=${++counter}`;
  const t0 = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const req = request(full, { agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (b: Buffer) => chunks.push(b));
      res.on('end', () => {
        clearTimeout(timer);
        const body = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, ms: Number(process.hrtime.bigint() - t0) / 1e6, bytes: body.length, body, timedOut: false });
      });
      res.on('error', reject);
    });
    if (timeoutMs > 0) {
      timer = setTimeout(() => {
        req.destroy();
        resolve({ status: 0, ms: timeoutMs, bytes: 0, body: Buffer.alloc(0), timedOut: true });
      }, timeoutMs);
    }
    req.on('error', (e) => { if (!req.destroyed || timer === undefined) reject(e); });
    req.end();
  });
}

const median = (xs: number[]): number => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

/** A route with its path parameters filled in, and the filters that apply to it. */
interface Target {
  route: string;
  path: string;
  /** number of rows in the unfiltered list (for the middle / end offsets) */
  rows: number;
  filters: string[][];
}

interface Case { target: Target; limit: number; query: string; label: string }

interface Result { route: string; label: string; query: string; limit: number; status: number; ms: number; baseMs: number; ratio: number; bytes: number; timedOut: boolean }

function enc(s: string): string { return encodeURIComponent(s); }

/** Every non-empty subset of `xs`. */
function subsets<T>(xs: T[]): T[][] {
  const out: T[][] = [];
  for (let m = 1; m < 1 << xs.length; m++) out.push(xs.filter((_, i) => m & (1 << i)));
  return out;
}

function targets(db: Database.Database, o: Options): Target[] {
  const meta = new Map((db.prepare('SELECT key, value FROM meta').all() as { key: string; value: string }[]).map((r) => [r.key, r.value]));
  const vm = meta.get('vm_type');
  const prefix = meta.get('bech32_prefix') ?? 'init';
  const account = (addr: Buffer): string => (vm === 'evm' ? toHex0x(addr) : toBech32(addr, prefix));
  const one = <T>(sql: string, ...args: unknown[]): T => db.prepare(sql).get(...args) as T;
  const countTxs = Number(meta.get('count_txs'));
  const types = (db.prepare('SELECT name, tx_count FROM msg_types ORDER BY tx_count DESC').all() as { name: string; tx_count: number }[]);
  const names = types.slice(0, 8).map((t) => t.name);
  const chosen = o.subsets === 'all' ? subsets(names) : [...names.map((n) => [n]), names.slice(0, 2), names];
  const msgsFilters = chosen.map((ns) => [`msgs=${ns.map(enc).join(',')}`]);
  const out: Target[] = [
    { route: '/indexer/block/v1/blocks', path: '/indexer/block/v1/blocks', rows: Number(meta.get('count_blocks')), filters: [] },
    { route: '/indexer/tx/v1/txs', path: '/indexer/tx/v1/txs', rows: countTxs, filters: msgsFilters },
  ];
  const busiest = one<{ addr: Buffer; tx_count: number } | undefined>('SELECT addr, tx_count FROM accounts ORDER BY tx_count DESC LIMIT 1');
  if (busiest) {
    out.push({ route: '/indexer/tx/v1/txs/by_account/{account}', path: `/indexer/tx/v1/txs/by_account/${account(busiest.addr)}`, rows: busiest.tx_count,
      // is_signer beside the single types and all of them: the signer lists differ only by their index
      filters: [['is_signer=true'], ...msgsFilters, ...msgsFilters.filter((f) => !f[0].includes('%2C') && !f[0].includes(',') || f === msgsFilters[msgsFilters.length - 1])
        .map((f) => [...f, 'is_signer=true'])] });
  }
  const block = one<{ height: number; tx_count: number } | undefined>('SELECT height, tx_count FROM blocks ORDER BY tx_count DESC LIMIT 1');
  if (block) {
    out.push({ route: '/indexer/tx/v1/txs/by_height/{height}', path: `/indexer/tx/v1/txs/by_height/${block.height}`, rows: block.tx_count, filters: msgsFilters });
  }
  if (vm === 'evm') {
    const evm = (k: string): number => Number(meta.get(k) ?? 0);
    out.push({ route: '/indexer/tx/v1/evm-txs', path: '/indexer/tx/v1/evm-txs', rows: evm('count_evm_txs'), filters: [] });
    out.push({ route: '/indexer/tx/v1/evm-internal-txs', path: '/indexer/tx/v1/evm-internal-txs', rows: evm('count_evm_internal_txs'), filters: [] });
    const ea = one<{ addr: Buffer; tx_count: number; internal_tx_count: number } | undefined>(`SELECT a.addr, c.tx_count, c.internal_tx_count
      FROM evm_account_counts c JOIN accounts a ON a.id = c.account_id ORDER BY c.tx_count DESC LIMIT 1`);
    if (ea) {
      out.push({ route: '/indexer/tx/v1/evm-txs/by_account/{account}', path: `/indexer/tx/v1/evm-txs/by_account/${account(ea.addr)}`, rows: ea.tx_count, filters: [['is_signer=true']] });
      out.push({ route: '/indexer/tx/v1/evm-internal-txs/by_account/{account}', path: `/indexer/tx/v1/evm-internal-txs/by_account/${account(ea.addr)}`, rows: ea.internal_tx_count, filters: [] });
    }
  }
  out.push({ route: '/indexer/nft/v1/collections', path: '/indexer/nft/v1/collections', rows: Number(meta.get('count_collections')), filters: [] });
  const name = one<{ name: string } | undefined>("SELECT name FROM collections WHERE name <> '' ORDER BY nft_count DESC LIMIT 1");
  if (name) {
    // a match, a one-letter match and a miss: by_name filters by substring
    for (const q of [name.name, name.name.slice(0, 1), 'zzzzqqqq-no-such-collection']) {
      out.push({ route: '/indexer/nft/v1/collections/by_name/{name}', path: `/indexer/nft/v1/collections/by_name/${enc(q)}`, rows: Number(meta.get('count_collections')), filters: [] });
    }
  }
  const owner = one<{ addr: Buffer; nft_count: number; collection_count: number } | undefined>('SELECT addr, nft_count, collection_count FROM accounts ORDER BY nft_count DESC LIMIT 1');
  const coll = one<{ addr: Buffer; nft_count: number } | undefined>('SELECT addr, nft_count FROM collections ORDER BY nft_count DESC LIMIT 1');
  if (owner && owner.nft_count > 0) {
    const tok = one<{ token_id: string; collection_addr: Buffer } | undefined>(
      'SELECT n.token_id, n.collection_addr FROM nfts n JOIN accounts a ON a.id = n.owner_id WHERE a.addr = ? LIMIT 1', owner.addr);
    const f: string[][] = [['order_by=height']];
    if (tok) {
      f.push([`collection_addr=${toHex0x(tok.collection_addr)}`], [`collection_addr=${toHex0x(tok.collection_addr)}`, 'order_by=height'], [`token_id=${enc(tok.token_id)}`]);
    }
    out.push({ route: '/indexer/nft/v1/collections/by_account/{account}', path: `/indexer/nft/v1/collections/by_account/${account(owner.addr)}`, rows: owner.collection_count, filters: [] });
    out.push({ route: '/indexer/nft/v1/tokens/by_account/{account}', path: `/indexer/nft/v1/tokens/by_account/${account(owner.addr)}`, rows: owner.nft_count, filters: f });
  }
  if (coll) {
    const tok = one<{ token_id: string } | undefined>('SELECT token_id FROM nfts WHERE collection_addr = ? LIMIT 1', coll.addr);
    out.push({ route: '/indexer/nft/v1/tokens/by_collection/{collection_addr}', path: `/indexer/nft/v1/tokens/by_collection/${toHex0x(coll.addr)}`, rows: coll.nft_count,
      filters: [['order_by=height'], ...(tok ? [[`token_id=${enc(tok.token_id)}`]] : [])] });
  }
  const nftTx = one<{ collection_addr: Buffer; token_id: string; tx_count: number } | undefined>(
    'SELECT collection_addr, token_id, tx_count FROM nft_tx_counts ORDER BY tx_count DESC LIMIT 1');
  if (nftTx) {
    out.push({ route: '/indexer/nft/v1/txs/{collection_addr}/{token_id}', path: `/indexer/nft/v1/txs/${toHex0x(nftTx.collection_addr)}/${enc(nftTx.token_id)}`, rows: nftTx.tx_count, filters: [] });
  }
  const denom = one<{ denom: string; holder_count: number } | undefined>('SELECT denom, holder_count FROM richlist_denoms ORDER BY holder_count DESC LIMIT 1');
  if (denom) out.push({ route: '/indexer/richlist/v1/{denom}', path: `/indexer/richlist/v1/${enc(denom.denom)}`, rows: denom.holder_count, filters: [] });
  return out;
}

/** Routes in openapi.yaml with a pagination parameter that this search does not cover: a new list route must be added here. */
function checkCoverage(ts: Target[]): void {
  const spec = load(readFileSync(join(ROOT, 'openapi.yaml'), 'utf8')) as { paths: Record<string, { get?: { parameters?: { $ref?: string }[] } }> };
  const covered = new Set(ts.map((t) => t.route));
  for (const [route, item] of Object.entries(spec.paths)) {
    const paged = (item.get?.parameters ?? []).some((p) => p.$ref?.includes('Pagination'));
    if (paged && !covered.has(route) && !route.includes('evm')) process.stderr.write(`not covered (no data on this chain?): ${route}\n`);
  }
}

/** The first page of every route at every limit on two chains, alternating: does it grow with the chain? */
async function firstPages(o: Options, big: string): Promise<void> {
  const load = (file: string): Target[] => {
    const db = new Database(file, { readonly: true });
    try { return targets(db, o); } finally { db.close(); }
  };
  const [small, large] = [load(o.db), load(big)];
  const a = await startOurs(o.root, o.db, { workers: 1, extra: ['--no-verify'] });
  const b = await startOurs(o.root, big, { workers: 1, extra: ['--no-verify'] });
  try {
    console.log(`first pages, median of ${o.reps} rounds alternating: ${o.db} vs ${big}\n`);
    console.log('| route | limit | small ms | big ms | big / small |');
    console.log('|---|---:|---:|---:|---:|');
    const seen = new Set<string>();
    for (const t of small) {
      // by_name is searched with several names: the first (a real name) stands for the route
      if (seen.has(t.route)) continue;
      seen.add(t.route);
      const other = large.find((x) => x.route === t.route);
      if (!other) continue;
      for (const limit of o.limits) {
        const xs: number[] = [];
        const ys: number[] = [];
        await get(`${a.url}${t.path}?pagination.limit=${limit}`);
        await get(`${b.url}${other.path}?pagination.limit=${limit}`);
        for (let i = 0; i < o.reps; i++) {
          xs.push((await get(`${a.url}${t.path}?pagination.limit=${limit}`)).ms);
          ys.push((await get(`${b.url}${other.path}?pagination.limit=${limit}`)).ms);
        }
        console.log(`| ${t.route} | ${limit} | ${median(xs).toFixed(2)} | ${median(ys).toFixed(2)} | ${(median(ys) / median(xs)).toFixed(2)} |`);
      }
    }
  } finally {
    agent.destroy();
    await a.stop();
    await b.stop();
  }
}

async function main(): Promise<void> {
  const o = options(process.argv.slice(2));
  if (o.firstPages) { await firstPages(o, o.firstPages); return; }
  const earlier = o.cases ? (JSON.parse(readFileSync(o.cases, 'utf8')) as Result[])
    .filter((r) => !/\/(by_account|by_height|by_name|by_collection)\/|\/nft\/v1\/txs\/|\/richlist\//.test(r.route))
    .sort((a, b) => b.ratio - a.ratio).slice(0, o.top) : undefined;
  const db = new Database(o.db, { readonly: true });
  const all = targets(db, o);
  db.close();
  checkCoverage(all);
  const ts = o.routes ? all.filter((t) => o.routes?.includes(t.route)) : all;
  let server = await startOurs(o.root, o.db, { workers: 1, extra: ['--no-verify'] });
  let restarts = 0;
  const url = (route: string, limit: number, query?: string): string =>
    `${server.url}${route}?pagination.limit=${limit}${query === undefined ? '' : `&${query}`}`;
  /** One GET; a timed-out one leaves the server busy: replace it (a request cannot be cancelled). */
  const once = async (u: string): Promise<Answer> => {
    const path = u.slice(server.url.length);
    const a = await get(u, o.timeoutMs);
    if (a.timedOut) {
      process.stderr.write(`timed out after ${o.timeoutMs} ms, restarting the server: ${path.slice(0, 160)}\n`);
      agent.destroy();
      agent = new Agent({ keepAlive: true, maxSockets: 1 });
      await server.stop();
      server = await startOurs(o.root, o.db, { workers: 1, extra: ['--no-verify'] });
      restarts++;
    }
    return a;
  };
  try {
    const time = async (route: string, limit: number, query?: string): Promise<{ status: number; ms: number; bytes: number; timedOut: boolean }> => {
      const first = await once(url(route, limit, query));
      const runs = [first.ms];
      const reps = first.ms > o.maxMs || first.timedOut ? 1 : o.reps;
      for (let i = 1; i < reps; i++) runs.push((await once(url(route, limit, query))).ms);
      return { status: first.status, ms: median(runs), bytes: first.bytes, timedOut: first.timedOut };
    };
    // warm the page cache and the prepared statements
    for (const t of ts) await once(url(t.path, 100));
    const results: Result[] = [];
    const firstPages = new Map<string, number>();
    for (const r of earlier ?? []) {
      const base = await time(r.route, r.limit);
      const a = await time(r.route, r.limit, r.query);
      results.push({ ...r, status: a.status, ms: a.ms, baseMs: base.ms, ratio: a.ms / base.ms, bytes: a.bytes, timedOut: a.timedOut });
      process.stderr.write(`${r.route}?${r.label}: ${a.ms.toFixed(0)} ms, first page ${base.ms.toFixed(1)} ms\n`);
    }
    for (const t of earlier ? [] : ts) {
      for (const limit of o.limits) {
        const baseline = await time(t.path, limit);
        const key = `${t.route} limit ${limit}`;
        // by_name is searched with several names: its slowest first page stands for the route
        firstPages.set(key, Math.max(firstPages.get(key) ?? 0, baseline.ms));
        const cases: Case[] = [];
        const mid = Math.floor(t.rows / 2);
        const end = Math.max(0, t.rows - limit);
        const offsets = [...new Set([0, mid, end, 2 ** 53 - 1])];
        for (const reverse of [true, false]) {
          const firstAsc = await once(url(t.path, limit, `pagination.reverse=${reverse}&pagination.count_total=false`));
          const nextKey = firstAsc.status === 200 ? (JSON.parse(firstAsc.body.toString('utf8')) as { pagination: { next_key: string | null } }).pagination.next_key : null;
          // every filter combination at limit 100; at the other limits the few that stand for them
          const filters = limit === 100 || t.filters.length <= 8 ? t.filters : [...t.filters.slice(0, 4), ...t.filters.slice(-4)];
          for (const filter of [[], ...filters]) {
            for (const offset of offsets) {
              if (offset === 0 && filter.length === 0 && reverse) continue;
              const q = [...filter, `pagination.offset=${offset}`, `pagination.reverse=${reverse}`];
              cases.push({ target: t, limit, query: q.join('&'), label: q.join('&') });
            }
            if (nextKey && filter.length === 0) {
              cases.push({ target: t, limit, query: `pagination.key=${enc(nextKey)}&pagination.reverse=${reverse}`, label: `key=<page 2>&reverse=${reverse}` });
            }
            // an integer key is an offset too (rollytics' offset-style next_key)
            cases.push({ target: t, limit, query: [...filter, `pagination.key=${enc(Buffer.from(String(end)).toString('base64'))}`, `pagination.reverse=${reverse}`].join('&'),
              label: [...filter, `key=<offset ${end}>`, `reverse=${reverse}`].join('&') });
          }
        }
        for (const c of cases) {
          const r = await time(t.path, limit, c.query);
          results.push({ route: t.path, label: c.label, query: c.query, limit, status: r.status, ms: r.ms, baseMs: baseline.ms, ratio: r.ms / baseline.ms, bytes: r.bytes, timedOut: r.timedOut });
        }
        process.stderr.write(`${t.path} limit ${limit}: ${cases.length} cases, first page ${baseline.ms.toFixed(2)} ms\n`);
      }
    }
    results.sort((a, b) => b.ratio - a.ratio);
    // The machine is shared: the worst candidates are timed again, each beside its first page,
    // alternating, so that both medians come from the same minutes.
    const rounds = Math.max(o.reps, 7);
    const retimed = new Set<Result>();
    // until the worst --top are all timed again (one timed again may drop below one that was not)
    for (;;) {
      results.sort((a, b) => b.ratio - a.ratio);
      const r = results.slice(0, o.top).find((x) => !retimed.has(x) && !x.timedOut);
      if (!r) break;
      retimed.add(r);
      const mine: number[] = [];
      const base: number[] = [];
      for (let i = 0; i < rounds; i++) {
        base.push((await once(url(r.route, r.limit))).ms);
        const a = await once(url(r.route, r.limit, r.query));
        mine.push(a.ms);
        if (a.timedOut || a.ms > 10 * o.maxMs) break;
      }
      r.baseMs = median(base);
      r.ms = median(mine);
      r.ratio = r.ms / r.baseMs;
    }
    const short = (x: string): string => (x.length > 90 ? `${x.slice(0, 87)}...` : x);
    const ge = (r: Result): string => (r.timedOut ? '≥ ' : '');
    console.log(`${results.length} requests, reps ${o.reps} (${retimed.size} timed again: ${rounds} rounds each beside its first page)${o.timeoutMs ? `, timeout ${o.timeoutMs} ms (${restarts} restarts)` : ''}; `
      + `worst ${o.top} by ratio to the route's first page (same limit, no filter):\n`);
    console.log('| route | request | limit | status | ms | first page ms | ratio | bytes |');
    console.log('|---|---|---:|---:|---:|---:|---:|---:|');
    for (const r of results.slice(0, o.top)) {
      console.log(`| ${short(r.route)} | ${short(r.label)} | ${r.limit} | ${r.status} | ${ge(r)}${r.ms.toFixed(1)} | ${r.baseMs.toFixed(2)} | ${ge(r)}${r.ratio.toFixed(1)} | ${r.bytes} |`);
    }
    const slowest = [...results].sort((a, b) => b.ms - a.ms)[0];
    console.log(`\nslowest request: ${slowest.route}?${slowest.label} limit ${slowest.limit}: ${ge(slowest)}${slowest.ms.toFixed(1)} ms (status ${slowest.status})`);
    // first pages, for comparing chains (they must not grow with the chain)
    console.log('\nfirst pages (ms, median):');
    for (const [k, v] of firstPages) console.log(`  ${k}: ${v.toFixed(2)}`);
    if (o.json) writeFileSync(o.json, JSON.stringify(results, null, 1));
  } finally {
    agent.destroy();
    await server.stop();
  }
}

if (require.main === module) {
  process.on('SIGINT', () => { void stopAll().then(() => process.exit(130)); });
  main().catch((e: unknown) => { console.error(e instanceof Error ? e.stack : e); void stopAll().then(() => process.exit(1)); });
}
