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
 *   node build/bench/worst-case.js --db X.sqlite [--reps 5] [--top 20] [--limits 1,100,1000] [--max-ms 200] [--subsets all|few] [--json out.json]
 *
 * A request slower than --max-ms on its first run is not repeated (it is far off the goal anyway).
 * --subsets few: of the msgs subsets only each single type, the two commonest and all of them.
 *
 * The server is `indexer-api serve --workers 1` on 127.0.0.1; each request carries a unique
 * unknown parameter (bench_r) so no cache answers it. Times are client-side over keep-alive, the
 * median of --reps.
 */

const ROOT = join(__dirname, '..', '..');

interface Options { db: string; reps: number; top: number; limits: number[]; json?: string; maxMs: number; subsets: 'all' | 'few' }

function options(argv: string[]): Options {
  const o: Options = { db: '', reps: 5, top: 20, limits: [1, 100, 1000], maxMs: 200, subsets: 'all' };
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
      default: throw new Error(`unknown option ${argv[i]}`);
    }
  }
  if (!o.db) throw new Error('--db FILE is required');
  return o;
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });
let counter = 0;

function get(url: string): Promise<{ status: number; ms: number; bytes: number; body: Buffer }> {
  const sep = url.includes('?') ? '&' : '?';
  const full = `${url}${sep}bench_r=${++counter}`;
  const t0 = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    request(full, { agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (b: Buffer) => chunks.push(b));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, ms: Number(process.hrtime.bigint() - t0) / 1e6, bytes: body.length, body });
      });
      res.on('error', reject);
    }).on('error', reject).end();
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

interface Result { route: string; label: string; query: string; limit: number; status: number; ms: number; baseMs: number; ratio: number; bytes: number }

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

async function main(): Promise<void> {
  const o = options(process.argv.slice(2));
  const db = new Database(o.db, { readonly: true });
  const ts = targets(db, o);
  db.close();
  checkCoverage(ts);
  const server = await startOurs(ROOT, o.db, { workers: 1 });
  try {
    const base = server.url;
    const time = async (url: string): Promise<{ status: number; ms: number; bytes: number }> => {
      const first = await get(url);
      const runs = [first.ms];
      const reps = first.ms > o.maxMs ? 1 : o.reps;
      for (let i = 1; i < reps; i++) runs.push((await get(url)).ms);
      return { status: first.status, ms: median(runs), bytes: first.bytes };
    };
    // warm the page cache and the prepared statements
    for (const t of ts) await get(`${base}${t.path}?pagination.limit=100`);
    const results: Result[] = [];
    for (const t of ts) {
      for (const limit of o.limits) {
        const baseUrl = `${base}${t.path}?pagination.limit=${limit}`;
        const baseline = await time(baseUrl);
        const cases: Case[] = [];
        const mid = Math.floor(t.rows / 2);
        const end = Math.max(0, t.rows - limit);
        const offsets = [...new Set([0, mid, end, 2 ** 53 - 1])];
        for (const reverse of [true, false]) {
          const firstAsc = await get(`${baseUrl}&pagination.reverse=${reverse}&pagination.count_total=false`);
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
          const r = await time(`${baseUrl}&${c.query}`);
          results.push({ route: t.path, label: c.label, query: c.query, limit, status: r.status, ms: r.ms, baseMs: baseline.ms, ratio: r.ms / baseline.ms, bytes: r.bytes });
        }
        process.stderr.write(`${t.path} limit ${limit}: ${cases.length} cases, first page ${baseline.ms.toFixed(2)} ms\n`);
      }
    }
    results.sort((a, b) => b.ratio - a.ratio);
    // the machine is shared: the worst candidates are timed again, first page beside them
    for (const r of results.slice(0, o.top * 2)) {
      const baseUrl = `${base}${r.route}?pagination.limit=${r.limit}`;
      const again = await time(`${baseUrl}&${r.query}`);
      r.baseMs = (await time(baseUrl)).ms;
      r.ms = again.ms;
      r.ratio = r.ms / r.baseMs;
    }
    results.sort((a, b) => b.ratio - a.ratio);
    const short = (s: string): string => (s.length > 90 ? `${s.slice(0, 87)}...` : s);
    console.log(`${results.length} requests, reps ${o.reps}; worst ${o.top} by ratio to the route's first page (same limit, no filter):\n`);
    console.log('| route | request | limit | status | ms | first page ms | ratio | bytes |');
    console.log('|---|---|---:|---:|---:|---:|---:|---:|');
    for (const r of results.slice(0, o.top)) {
      console.log(`| ${short(r.route)} | ${short(r.label)} | ${r.limit} | ${r.status} | ${r.ms.toFixed(1)} | ${r.baseMs.toFixed(2)} | ${r.ratio.toFixed(1)} | ${r.bytes} |`);
    }
    const slowest = [...results].sort((a, b) => b.ms - a.ms)[0];
    console.log(`\nslowest request: ${slowest.route}?${slowest.label} limit ${slowest.limit}: ${slowest.ms.toFixed(1)} ms (status ${slowest.status})`);
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
