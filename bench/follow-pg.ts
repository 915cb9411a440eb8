/**
 * `follow --from-postgres` benchmarks (bench/README.md, issue #10), on a real PostgreSQL loaded
 * with a generated chain whose later heights are "not yet written by the indexer" (moved to
 * hidden_* tables) and revealed by this script as an indexer would write them.
 *
 *   node build/bench/follow-pg.js --dump DIR [--dump DIR2] --work DIR [--start 1000] [--one-block 7]
 *     [--lag-seconds 60] [--lag-tps 100] [--lag-commits-per-s 2] [--lag-interval 1s]
 *     [--wrk-seconds 20] [--wrk-windows 5] [--interleave | --cli bin/indexer-api --cli OTHER/bin/indexer-api]
 *
 * Per dump:
 * 1. one-block: `follow --interval 50ms` and `serve --commit-poll-ms 50` on the replica; one
 *    height is revealed (t0, committed in PostgreSQL) and /status on serve is polled every 5 ms
 *    until it shows it (t1). Median of t1 - t0 over --one-block heights. With --interleave, all
 *    dumps are set up first and the reveals alternate between them (ratio under the same load).
 * 2. (last dump only, with --lag-seconds) lag: heights are revealed so that --lag-tps txs per
 *    second arrive in --lag-commits-per-s PostgreSQL commits per second (default 2 × 50 txs, the
 *    issue's 2 blocks/s × 50 txs; the generated chains have ≈8 txs per block, so each commit
 *    holds ≈6 heights, ≈12.5 heights/s), follow at --interval (default 1s) and its default batch
 *    size; lag of height h = first time serve's /status ≥ h minus the time h was committed.
 *    p50 / p99 / max, and the follower's own batch times (its `applied in` lines).
 * 3. (with --lag-seconds and --wrk-seconds > 0) throughput: --wrk-windows pairs of
 *    `wrk -t2 -c16 -d--wrk-seconds` windows over a mix of routes on serve, alternating: no
 *    follower running (source idle), then a follower running while the source produces as in 2.
 *    Median of the per-pair ratios writing / no follower.
 */
import { spawn, ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { startPostgres } from '../test/support/postgres';
import { hideHistoryAbove, loadRollyticsDb, ROLLYTICS_HISTORY } from '../test/helpers/rollytics-pg';

const CLI = resolve(__dirname, '..', '..', 'bin', 'indexer-api');
const argv = process.argv;
const all = (name: string): string[] => argv.flatMap((a, i) => (a === `--${name}` ? [argv[i + 1]] : []));
const num = (name: string, d: number): number => Number(all(name)[0] ?? d);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const log = (s: string): void => { process.stdout.write(s + '\n'); };

const HISTORY = ROLLYTICS_HISTORY;

async function height(url: string): Promise<number> {
  try { return ((await (await fetch(`${url}/status`)).json()) as { height: number }).height; } catch { return -1; }
}

function proc(args: string[], ready: RegExp, cli = CLI): Promise<{ p: ChildProcess; m: RegExpExecArray; err: () => string }> {
  const p = spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  p.stderr!.setEncoding('utf8').on('data', (s: string) => { err += s; });
  return new Promise((done, fail) => {
    const t = setInterval(() => {
      const m = ready.exec(err);
      if (m) { clearInterval(t); done({ p, m, err: () => err }); }
      if (p.exitCode !== null) { clearInterval(t); fail(new Error(`${args[0]} exited: ${err}`)); }
    }, 20);
  });
}

const pct = (xs: number[], p: number): number => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };

/** wrk in a child process, awaited: the event loop keeps running (the source keeps producing
 *  during a "follower writing" window; a spawnSync here blocked it for the whole window) */
async function wrk(url: string, seconds: number, dir: string): Promise<number> {
  const script = join(dir, 'mix.lua');
  writeFileSync(script, `
local paths = { "/status", "/indexer/block/v1/blocks?pagination.limit=10", "/indexer/tx/v1/txs?pagination.limit=10",
  "/indexer/tx/v1/txs?pagination.limit=10&pagination.offset=500", "/indexer/nft/v1/collections?pagination.limit=10",
  "/indexer/block/v1/avg_blocktime" }
local i = 0
request = function() i = i + 1; return wrk.format("GET", paths[(i % #paths) + 1]) end`);
  const p = spawn('wrk', ['-t2', '-c16', `-d${seconds}s`, '-s', script, url], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  p.stdout!.setEncoding('utf8').on('data', (x: string) => { out += x; });
  await new Promise((done) => p.once('close', done));
  const m = /Requests\/sec:\s+([\d.]+)/.exec(out);
  return m ? Number(m[1]) : NaN;
}

interface Chain {
  i: number;
  dump: string;
  dsn: string;
  c: Client;
  txsTotal: number;
  txCounts: Map<number, number>;
  validators: string;
  /** the highest height committed in the source */
  revealed: number;
  reveal: (upTo: number) => Promise<void>;
  db: string;
  url: string;
  follow?: Awaited<ReturnType<typeof proc>>;
  serve?: Awaited<ReturnType<typeof proc>>;
}

async function main(): Promise<void> {
  const work = all('work')[0] ?? '/tmp/indexer-bench-follow-pg';
  mkdirSync(work, { recursive: true });
  // --start per --dump (in order; the last one for the rest): the replica's height before the one-block runs
  const starts = all('start').map(Number);
  const oneBlock = num('one-block', 7);
  const lagSeconds = num('lag-seconds', 0);
  const tps = num('lag-tps', 100);
  const wrkSeconds = num('wrk-seconds', 20);
  const wrkWindows = num('wrk-windows', 5);
  const commitsPerS = num('lag-commits-per-s', 2);
  // --cli PATH (repeatable): the same measurement with other builds (e.g. before / after a
  // change), on the same database and load; the lag run uses the last one's serve.
  const clis = all('cli').length ? all('cli') : [CLI];
  // --interleave (one --cli): every dump is loaded and its follow + serve started first, then
  // the one-block reveals alternate between the dumps (round k: dump 1, dump 2, …; the order
  // reversed every other round), so that the ratio between chains is measured under the same
  // load; the other chains' follow and serve run idle (polling every 50 ms) meanwhile.
  const interleave = argv.includes('--interleave') && clis.length === 1;
  const dumps = all('dump');
  const pg = await startPostgres();
  const chains: Chain[] = [];

  const setup = async (i: number, dump: string): Promise<Chain> => {
    const start = starts[Math.min(i, starts.length - 1)] ?? 1000;
    const dsn = await pg.createDatabase(`chain_${i}`);
    const t = Date.now();
    await loadRollyticsDb(dsn, dump);
    log(`${dump}: loaded into PostgreSQL in ${((Date.now() - t) / 1000).toFixed(0)} s; load ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
    const c = new Client({ connectionString: dsn });
    await c.connect();
    const txsTotal = Number((await c.query('SELECT count(*) AS n FROM tx')).rows[0].n);
    await c.query('BEGIN');
    await hideHistoryAbove(c, start);
    // The nft table holds the chain's final state: an NFT whose height (its last change) is
    // above the start is "not written yet" either; it appears when its height is revealed (as
    // a mint, nft_collection.nft_count following), so every revealed height changes a few NFTs.
    await c.query('CREATE TABLE hidden_nft AS SELECT * FROM nft WHERE height > $1', [start]);
    await c.query('DELETE FROM nft WHERE height > $1', [start]);
    await c.query('UPDATE nft_collection c SET nft_count = (SELECT count(*) FROM nft n WHERE n.collection_addr = c.addr)');
    await c.query('CREATE INDEX ON hidden_nft (height)');
    await c.query('CREATE INDEX ON hidden_tx (sequence); CREATE INDEX ON hidden_tx (height); CREATE INDEX ON hidden_block (height)');
    for (const tb of ['tx_accounts', 'tx_msg_types', 'tx_nfts']) await c.query(`CREATE INDEX ON hidden_${tb} (sequence)`);
    await c.query('COMMIT');
    const txCounts = new Map<number, number>((await c.query('SELECT height, tx_count FROM hidden_block ORDER BY height')).rows
      .map((r: { height: string; tx_count: number }) => [Number(r.height), r.tx_count]));
    const ch: Chain = { i, dump, dsn, c, txsTotal, txCounts, validators: join(dump, 'validators.ndjson'), revealed: start, db: '', url: '',
      reveal: async (upTo: number): Promise<void> => {
        const from = ch.revealed + 1;
        await c.query('BEGIN');
        for (const [tb] of [...HISTORY].reverse()) {
          await c.query(tb === 'block' || tb === 'tx'
            ? `INSERT INTO ${tb} SELECT * FROM hidden_${tb} WHERE height BETWEEN $1 AND $2`
            : `INSERT INTO ${tb} SELECT h.* FROM hidden_${tb} h JOIN hidden_tx x ON x.sequence = h.sequence WHERE x.height BETWEEN $1 AND $2`, [from, upTo]);
        }
        await c.query('INSERT INTO nft SELECT * FROM hidden_nft WHERE height BETWEEN $1 AND $2', [from, upTo]);
        await c.query(`UPDATE nft_collection c SET nft_count = nft_count + k.n
          FROM (SELECT collection_addr, count(*) AS n FROM hidden_nft WHERE height BETWEEN $1 AND $2 GROUP BY 1) k WHERE k.collection_addr = c.addr`, [from, upTo]);
        await c.query('COMMIT');
        ch.revealed = upTo;
      } };
    return ch;
  };

  /** a fresh replica of `ch` (follow's first run imports up to the start) and serve on it */
  const startPair = async (ch: Chain, cli: string, j: number): Promise<void> => {
    ch.follow?.p.kill('SIGTERM');
    ch.serve?.p.kill('SIGTERM');
    await sleep(500);
    ch.db = join(work, `replica-${ch.i}-${j}.sqlite`);
    for (const ext of ['', '-wal', '-shm']) rmSync(ch.db + ext, { force: true });
    const t = Date.now();
    // not --quiet: each batch's own time (source read + write + commit) is in its log line
    ch.follow = await proc(['follow', '--db', ch.db, '--from-postgres', ch.dsn, '--vm-type', 'wasm', '--validators', ch.validators, '--interval', '50ms'], /following postgres/, cli);
    log(`${cli}: first import of ${ch.dump} (height ${ch.revealed}) in ${((Date.now() - t) / 1000).toFixed(1)} s; load ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
    ch.serve = await proc(['serve', '--db', ch.db, '--port', '0', '--workers', '1', '--log-level', 'error', '--commit-poll-ms', '50'], / on (http:\S+)/, cli);
    ch.url = ch.serve.m[1];
  };

  /** one height revealed (committed in PostgreSQL) → serve's /status shows it, in ms */
  const oneBlockOnce = async (ch: Chain): Promise<number> => {
    await sleep(300);
    const h = ch.revealed + 1;
    await ch.reveal(h);
    const t0 = process.hrtime.bigint(); // the source has it: committed in PostgreSQL
    while ((await height(ch.url)) < h) await sleep(5);
    return Number(process.hrtime.bigint() - t0) / 1e6;
  };

  const report = (ch: Chain, cli: string, times: number[], loads: number[]): void => {
    log(`one-block (${ch.txsTotal} txs chain, ${cli}): ${times.map((x) => x.toFixed(0)).join(', ')} ms; median ${pct(times, 0.5).toFixed(0)} ms; load ${loads.map((x) => x.toFixed(1)).join(' ')}`);
    const batch = [...ch.follow!.err().matchAll(/applied in (\d+) ms \(source (\d+), base (\d+), records (\d+), counts \+ state \+ commit (\d+) ms\)/g)]
      .map((m) => m.slice(1).map(Number)).slice(-times.length);
    const med = (j: number): number => pct(batch.map((b) => b[j]), 0.5);
    log(`  the follower's own batch times: ${batch.map((b) => b[0]).join(', ')} ms; medians: applied in ${med(0)} (source ${med(1)}, base ${med(2)}, records ${med(3)}, counts + state + commit ${med(4)}) ms`);
    for (const l of ch.follow!.err().split('\n').filter((x) => /applied in/.test(x)).slice(-2)) log(`  ${l}`);
  };

  const lagAndThroughput = async (ch: Chain): Promise<void> => {
    const revealedAt = new Map<number, number>();
    const seenAt = new Map<number, number>();
    let exhausted = false;
    /** reveals heights at `tps` txs/s in `commits` PostgreSQL commits per second for `seconds`
     *  (recording when each height was committed); stops early when the hidden heights run out */
    const produce = async (seconds: number): Promise<void> => {
      const began = Date.now();
      let txsOut = 0;
      let k = 0;
      while (Date.now() - began < seconds * 1000) {
        const due = ((Date.now() - began) / 1000) * tps;
        let h = ch.revealed;
        while (txsOut < due && ch.txCounts.has(h + 1)) { h++; txsOut += ch.txCounts.get(h) as number; }
        if (h > ch.revealed) {
          const from = ch.revealed;
          await ch.reveal(h);
          const now = Date.now(); // after the COMMIT: the source has them
          for (let x = from + 1; x <= h; x++) revealedAt.set(x, now);
        } else if (!ch.txCounts.has(h + 1) && !exhausted) {
          exhausted = true;
          log(`  WARNING: the hidden heights ran out at ${h}; production stopped (use a lower --start)`);
        }
        k++;
        await sleep(Math.max(0, began + (k * 1000) / commitsPerS - Date.now()));
      }
    };
    const followArgs = ['follow', '--db', ch.db, '--from-postgres', ch.dsn, '--vm-type', 'wasm', '--validators', ch.validators, '--interval', all('lag-interval')[0] ?? '1s'];
    // not --quiet: each batch's `applied in` line (where the time goes) is summarised below
    const f2 = await proc(followArgs, /following postgres/);
    await sleep(500);
    let stop = false;
    const watcher = (async () => {
      let last = await height(ch.url);
      while (!stop) {
        const h = await height(ch.url);
        const now = Date.now();
        for (let x = last + 1; x <= h; x++) seenAt.set(x, now);
        if (h > last) last = h;
        await sleep(50);
      }
    })();
    const lagFrom = ch.revealed;
    const lagBegan = Date.now();
    await produce(lagSeconds);
    const produced = (Date.now() - lagBegan) / 1000;
    while ((await height(ch.url)) < ch.revealed) await sleep(50);
    await sleep(100);
    stop = true;
    await watcher;
    const lags = [...revealedAt].map(([h, r]) => ((seenAt.get(h) ?? Date.now()) - r) / 1000);
    let lagTxs = 0;
    for (let x = lagFrom + 1; x <= ch.revealed; x++) lagTxs += ch.txCounts.get(x) ?? 0;
    log(`lag over ${lagSeconds} s at ${tps} txs/s in ${commitsPerS} commits/s (${revealedAt.size} heights, ${lagTxs} txs in ${produced.toFixed(0)} s = ${(lagTxs / produced).toFixed(1)} txs/s, ${(revealedAt.size / produced).toFixed(1)} heights/s; serve /status polled every 50 ms): p50 ${pct(lags, 0.5).toFixed(2)} s, p99 ${pct(lags, 0.99).toFixed(2)} s, max ${Math.max(...lags).toFixed(2)} s; load ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
    const lines = [...f2.err().matchAll(/\((\d+) blocks, (\d+) txs\) applied in (\d+) ms \(source (\d+), base (\d+), records (\d+), counts \+ state \+ commit (\d+) ms\)/g)]
      .map((m) => m.slice(1).map(Number));
    const col = (j: number): number[] => lines.map((l) => l[j]);
    const fmt = (j: number): string => `p50 ${pct(col(j), 0.5)} / p99 ${pct(col(j), 0.99)} / max ${Math.max(...col(j))}`;
    log(`  the follower's ${lines.length} batches: blocks ${fmt(0)}; txs ${fmt(1)}; applied in (ms) ${fmt(2)}; source ${fmt(3)}; base ${fmt(4)}; records ${fmt(5)}; counts + state + commit ${fmt(6)}`);
    writeFileSync(join(work, `follow-lag-${ch.i}.log`), f2.err());
    f2.p.kill('SIGTERM');
    await sleep(1000);
    // serve throughput: --wrk-windows pairs of wrk windows, alternating: no follower running
    // and the source idle, then the follower running while the source produces as above.
    if (wrkSeconds > 0) {
      const ratios: number[] = [];
      const idles: number[] = [];
      const busys: number[] = [];
      await wrk(ch.url, 5, work); // warm-up, not counted: the first window after a start ran colder
      for (let w = 0; w < wrkWindows; w++) {
        const idle = await wrk(ch.url, wrkSeconds, work);
        const idleLoad = loadavg()[0];
        const f3 = await proc(followArgs, /following postgres/);
        const h0 = ch.revealed;
        const producing = produce(wrkSeconds + 2);
        await sleep(1000);
        const busy = await wrk(ch.url, wrkSeconds, work);
        await producing;
        while ((await height(ch.url)) < ch.revealed) await sleep(50);
        f3.p.kill('SIGTERM');
        await sleep(1000);
        idles.push(idle);
        busys.push(busy);
        ratios.push(busy / idle);
        log(`  window ${w + 1}: no follower ${idle.toFixed(0)} req/s (load ${idleLoad.toFixed(1)}), follower writing ${busy.toFixed(0)} req/s (load ${loadavg()[0].toFixed(1)}; ${ch.revealed - h0} heights committed and followed) = ${(100 * busy / idle).toFixed(0)} %`);
      }
      log(`serve throughput (${wrkWindows} × ${wrkSeconds} s each, alternating): no follower median ${pct(idles, 0.5).toFixed(0)} req/s, follower writing median ${pct(busys, 0.5).toFixed(0)} req/s; median of the pair ratios ${(100 * pct(ratios, 0.5)).toFixed(0)} % (${ratios.map((r) => (100 * r).toFixed(0)).join(', ')} %); load ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
    }
  };

  try {
    if (interleave) {
      for (const [i, dump] of dumps.entries()) {
        const ch = await setup(i, dump);
        chains.push(ch);
        await startPair(ch, clis[0], 0);
      }
      const times = chains.map((): number[] => []);
      const loads = chains.map((): number[] => []);
      for (let k = 0; k < oneBlock; k++) {
        const order = chains.map((_, x) => x);
        if (k % 2) order.reverse();
        for (const x of order) {
          times[x].push(await oneBlockOnce(chains[x]));
          loads[x].push(loadavg()[0]);
        }
      }
      for (const [x, ch] of chains.entries()) report(ch, clis[0], times[x], loads[x]);
      const last = chains.length - 1;
      if (last > 0) {
        const ratios = times[last].map((t, k) => t / times[0][k]);
        log(`one-block ${chains[last].txsTotal} vs ${chains[0].txsTotal} txs: ratio of medians ${(pct(times[last], 0.5) / pct(times[0], 0.5)).toFixed(2)}×; per-round ratios ${ratios.map((r) => r.toFixed(2)).join(', ')}, median ${pct(ratios, 0.5).toFixed(2)}×`);
      }
      // The follower's "NFTs changed since our height" read (src/sources/postgres/records.ts
      // tokens()), timed in the source after the rounds: its plan and execution time per chain.
      for (const ch of chains) {
        const plan = (await ch.c.query(`EXPLAIN (ANALYZE, FORMAT JSON) SELECT encode(n.collection_addr, 'hex'), n.token_id, encode(n.addr, 'hex'),
            n.owner_id::text, encode(o.account, 'hex'), n.uri, n.height::text, n."timestamp"
          FROM nft n LEFT JOIN account_dict o ON o.id = n.owner_id WHERE n.height >= $1 ORDER BY n.collection_addr, n.token_id`, [ch.revealed - 1])).rows[0]['QUERY PLAN'][0];
        const nodes: string[] = [];
        const walk = (n: { 'Node Type': string; 'Relation Name'?: string; 'Actual Rows': number; Plans?: unknown[] }): void => {
          nodes.push(`${n['Node Type']}${n['Relation Name'] ? ` ${n['Relation Name']}` : ''} (${n['Actual Rows']} rows)`);
          for (const x of n.Plans ?? []) walk(x as typeof n);
        };
        walk(plan.Plan);
        const nftRows = Number((await ch.c.query('SELECT count(*) AS n FROM nft')).rows[0].n);
        log(`  ${ch.txsTotal} txs chain: changed-NFT read (nft has ${nftRows} rows) executes in ${plan['Execution Time'].toFixed(1)} ms: ${nodes.join(' > ')}`);
      }
      for (const ch of chains.slice(0, -1)) { ch.follow?.p.kill('SIGTERM'); ch.serve?.p.kill('SIGTERM'); }
    } else {
      for (const [i, dump] of dumps.entries()) {
        const ch = await setup(i, dump);
        chains.push(ch);
        for (const [j, cli] of clis.entries()) {
          await startPair(ch, cli, j);
          const times: number[] = [];
          const loads: number[] = [];
          for (let k = 0; k < oneBlock; k++) { times.push(await oneBlockOnce(ch)); loads.push(loadavg()[0]); }
          report(ch, cli, times, loads);
        }
        if (i < dumps.length - 1) { ch.follow?.p.kill('SIGTERM'); ch.serve?.p.kill('SIGTERM'); }
      }
    }
    const ch = chains[chains.length - 1];
    if (!ch.follow || !ch.serve) throw new Error('no --cli');
    ch.follow.p.kill('SIGTERM');
    await sleep(500);
    if (lagSeconds > 0) await lagAndThroughput(ch);
    ch.serve.p.kill('SIGTERM');
    for (const x of chains) await x.c.end();
    await sleep(500);
  } finally {
    await pg.stop();
  }
}

main().catch((e: Error) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
