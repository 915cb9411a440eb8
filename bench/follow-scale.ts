/**
 * `follow`'s one-block batch against the size of the state it does not touch (bench/README.md
 * "Follow at scale", issue #22): the Move demo chain (3000 txs, 400 heights) grown in ONE run
 * from a small rich list and NFT set to large ones — `generate --holders H --nfts N` (3 bank
 * denoms, so 3·H rich-list rows; N NFTs beyond the minted ones, over the same 7 collections) —
 * and followed from height 398 to 399 (9 txs, one of them moving an NFT: the Move object →
 * collection lookup runs) from an API source and from PostgreSQL, each with and without the
 * rich list:
 *
 *   node build/bench/follow-scale.js [--sizes 333:10000,100000:100000,1000000:1000000] [--runs 3]
 *     [--work /work/data-bc/followscale] [--sources api,postgres]
 *
 * Per size, built once and kept in --work (reused by the next run; delete them to rebuild):
 * the dumps at 398 and 399 (generateDump untilHeight: the NFT and rich-list state of that
 * height) and their imports. API: an in-process source serves 398; `follow --interval 50ms`
 * runs on a copy of the 398 file, with `--denoms uinit,umin,uusdc` (the bench waits for the
 * first rich-list refresh, at start) or without; the source then serves 399. PostgreSQL (a
 * server of test/support/postgres.ts, its data under --work/tmp): the dump at 399 loaded
 * (test/helpers/rollytics-pg.ts), height 399 moved aside as in bench/follow-pg.ts and the
 * NFTs it changed put back as they were at 398 (nftsAt398), its rich list the one at 398; the
 * replica is the import of the dump at 398; `follow --from-postgres` with `--richlist-interval 0` (no rich
 * list) or the default (refreshed at start, waited for); then height 399 is committed, and
 * taken back after the run. The batch's own time is follow's log line (`applied in N ms`).
 * Reported: per source, mode and size the median over --runs, its ratio to the smallest size's
 * median of the same run, the load average at each batch, the first refresh's log line.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, createReadStream, existsSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { createRequestListener } from '../src/serve/routing';
import { runImport } from '../src/import/run';
import { generateDump } from '../src/generate/index';
import { BANK_RICH_DENOMS } from '../src/generate/richlist';
import { loadOpenApi } from '../src/serve/openapi';
import { listen } from '../src/serve/server';
import { openSnapshot, Snapshot } from '../src/snapshot/open';
import { startPostgres, type PgServer } from '../test/support/postgres';
import { hideHistoryAbove, loadRollyticsDb, ROLLYTICS_HISTORY, truncateToMicros } from '../test/helpers/rollytics-pg';
import { canonicalAddress } from '../src/lib/address';
import { appOptions } from '../test/helpers/app-options';

const CLI = resolve(__dirname, '..', '..', 'bin', 'indexer-api');
const FROM = 398;
const TO = 399;
const argv = process.argv;
const one = (name: string, d: string): string => { const i = argv.indexOf(`--${name}`); return i >= 0 ? argv[i + 1] : d; };
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const log = (s: string): void => { process.stdout.write(`${s}\n`); };
const load = (): string => loadavg()[0].toFixed(2);

interface Size { holders: number; nfts: number; tag: string }

/** The dump of the chain at `height` (kept: the PostgreSQL load reads it too). */
async function dumpAt(work: string, s: Size, height: number): Promise<string> {
  const dir = join(work, `dump-${s.tag}-${height}`);
  if (existsSync(join(dir, '.complete'))) return dir;
  const t = Date.now();
  await generateDump({ vm: 'move', out: dir, preset: 'demo', holders: s.holders, nfts: s.nfts, untilHeight: height, force: true });
  writeFileSync(join(dir, '.complete'), '');
  log(`  generated ${dir} in ${((Date.now() - t) / 1000).toFixed(0)} s`);
  return dir;
}

async function fileAt(work: string, s: Size, height: number): Promise<{ dump: string; file: string }> {
  const dump = await dumpAt(work, s, height);
  const file = join(work, `move-${s.tag}-${height}.sqlite`);
  if (!existsSync(file)) {
    const t = Date.now();
    await runImport({ fromDump: dump, out: file, force: true, quiet: true, json: false });
    log(`  imported ${file} in ${((Date.now() - t) / 1000).toFixed(0)} s`);
  }
  return { dump, file };
}

interface Result { source: string; mode: string; size: Size; rows: number; nfts: number; ms: number[]; loads: string[]; split: string[]; refresh?: string }

/** One follow process on a copy of `start`; `advance` makes the source show height 399; returns the batch's log line. */
async function followOnce(start: string, live: string, args: string[], waitRefresh: boolean, advance: () => Promise<void>):
  Promise<{ ms: number; line: string; refresh?: string }> {
  for (const ext of ['', '-wal', '-shm']) rmSync(live + ext, { force: true });
  copyFileSync(start, live);
  const follow = spawn(process.execPath, [CLI, 'follow', '--db', live, '--interval', '50ms', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let out = '';
  follow.stderr.setEncoding('utf8').on('data', (x: string) => { out += x; });
  const until = async (re: RegExp): Promise<RegExpExecArray> => {
    for (;;) {
      const m = re.exec(out);
      if (m) return m;
      if (follow.exitCode !== null) throw new Error(`follow exited: ${out}`);
      await sleep(10);
    }
  };
  try {
    await until(/following /);
    const refresh = waitRefresh ? (await until(new RegExp(`rich list at height ${FROM}: .*`)))[0] : undefined;
    await sleep(300);
    await advance();
    const m = await until(new RegExp(`heights ${TO}\\.\\.${TO} .*applied in (\\d+) ms.*`));
    return { ms: Number(m[1]), line: m[0], refresh };
  } finally {
    follow.kill('SIGTERM');
    await new Promise((done) => { if (follow.exitCode !== null) done(undefined); else follow.once('exit', done); });
  }
}

async function apiRuns(work: string, s: Size, runs: number, results: Result[]): Promise<void> {
  const before = await fileAt(work, s, FROM);
  const after = await fileAt(work, s, TO);
  const prev = openSnapshot(before.file);
  const next = openSnapshot(after.file);
  const rows = next.db.prepare('SELECT count(*) FROM richlist').pluck().get() as number;
  const nfts = next.db.prepare('SELECT count(*) FROM nfts').pluck().get() as number;
  let cur: Snapshot = prev;
  const app = createRequestListener({ snapshots: { current: () => cur }, openapi: loadOpenApi(), options: appOptions({ corsOrigin: '', logError: () => undefined }) });
  const src = await listen(app, '127.0.0.1', 0);
  try {
    for (const mode of ['no rich list', '--denoms']) {
      const r: Result = { source: 'api', mode, size: s, rows, nfts, ms: [], loads: [], split: [] };
      results.push(r);
      for (let run = 0; run < runs; run++) {
        cur = prev;
        const args = ['--from-api', src.url, '--richlist-interval', '10m', ...(mode === '--denoms' ? ['--denoms', BANK_RICH_DENOMS.join(',')] : [])];
        const got = await followOnce(before.file, join(work, `live-${process.pid}.sqlite`), args, mode === '--denoms', async () => { cur = next; });
        r.ms.push(got.ms);
        r.loads.push(load());
        r.split.push(got.line.replace(/^.*applied in /, ''));
        r.refresh ??= got.refresh;
        log(`api, ${rows} rich-list rows, ${nfts} NFTs, ${mode}, run ${run + 1}: batch ${got.ms} ms, load ${load()}`);
      }
    }
  } finally {
    await src.close();
    prev.close();
    next.close();
  }
}

/** History of the heights above FROM, moved aside (bench/follow-pg.ts) and put back per run. */
const HISTORY = [...ROLLYTICS_HISTORY, ['nft', 'height > $1']] as const;

/**
 * The NFTs height 399 changed, as they were at 398 (from the dump at 398), put in place of
 * their 399 rows while 399 is hidden: PostgreSQL at 398 then holds the NFT state of the dump at
 * 398, so the replica is that dump's import (an import from PostgreSQL of 1M NFTs and 3M
 * holders would cost this box half an hour per size).
 */
async function nftsAt398(c: Client, dump398: string): Promise<void> {
  const keys = new Set(((await c.query("SELECT encode(collection_addr, 'hex') AS a, token_id FROM hidden_nft")).rows as { a: string; token_id: string }[])
    .map((r) => `${r.a} ${r.token_id}`));
  await c.query('CREATE TABLE old_nft AS SELECT * FROM nft WHERE false');
  const rl = createInterface({ input: createReadStream(join(dump398, 'tokens.ndjson')), crlfDelay: Infinity });
  for await (const l of rl) {
    if (l.trim() === '') continue;
    const t = JSON.parse(l) as { collection_addr: string; token_id: string; object_addr?: string; owner: string; uri: string; height: number; timestamp: string };
    const col = canonicalAddress(t.collection_addr, 'init');
    if (!keys.has(`${col.toString('hex')} ${t.token_id}`)) continue;
    const owner = (await c.query('SELECT id FROM account_dict WHERE account = $1', [canonicalAddress(t.owner, 'init')])).rows[0] as { id: string } | undefined;
    if (!owner) throw new Error(`owner ${t.owner} of ${t.collection_addr} ${t.token_id} is not in account_dict`);
    await c.query('INSERT INTO old_nft (collection_addr, token_id, addr, height, "timestamp", owner_id, uri) VALUES ($1, $2, $3, $4, $5, $6, $7)',
      [col, t.token_id, t.object_addr ? canonicalAddress(t.object_addr, 'init') : null, t.height, truncateToMicros(t.timestamp), owner.id, t.uri]);
  }
}

async function pgRuns(work: string, pg: PgServer, i: number, s: Size, runs: number, results: Result[]): Promise<void> {
  const before = await fileAt(work, s, FROM);
  const dump = await dumpAt(work, s, TO);
  // the chain at 399 with the rich list at 398: the replica's (the dump's import at 398), so the
  // refresh at start finds it unchanged as the API runs' does
  const mixed = join(work, `pgdump-${s.tag}`);
  rmSync(mixed, { recursive: true, force: true });
  mkdirSync(mixed);
  for (const f of readdirSync(dump)) if (f.endsWith('.ndjson')) symlinkSync(join(f === 'richlist.ndjson' ? before.dump : dump, f), join(mixed, f));
  const dsn = await pg.createDatabase(`scale_${i}`);
  const t = Date.now();
  await loadRollyticsDb(dsn, mixed);
  log(`  ${dump} loaded into PostgreSQL in ${((Date.now() - t) / 1000).toFixed(0)} s`);
  const c = new Client({ connectionString: dsn });
  await c.connect();
  try {
    await c.query('BEGIN');
    await hideHistoryAbove(c, FROM, HISTORY);
    await nftsAt398(c, before.dump);
    await c.query('INSERT INTO nft SELECT * FROM old_nft');
    await c.query('UPDATE nft_collection c SET nft_count = (SELECT count(*) FROM nft n WHERE n.collection_addr = c.addr)');
    await c.query('UPDATE rich_list_status SET height = $1', [FROM]);
    await c.query('COMMIT');
    const recount = `UPDATE nft_collection c SET nft_count = (SELECT count(*) FROM nft n WHERE n.collection_addr = c.addr)
      WHERE c.addr IN (SELECT collection_addr FROM hidden_nft)`;
    const reveal = async (): Promise<void> => {
      await c.query('BEGIN');
      await c.query('DELETE FROM nft WHERE (collection_addr, token_id) IN (SELECT collection_addr, token_id FROM old_nft)');
      for (const [tb] of HISTORY) await c.query(`INSERT INTO ${tb} SELECT * FROM hidden_${tb}`);
      await c.query(recount);
      await c.query('COMMIT');
    };
    const hide = async (): Promise<void> => {
      await c.query('BEGIN');
      for (const [tb, cond] of HISTORY) await c.query(`DELETE FROM ${tb} WHERE ${cond}`, [FROM]);
      await c.query('INSERT INTO nft SELECT * FROM old_nft');
      await c.query(recount);
      await c.query('COMMIT');
    };
    const validators = join(dump, 'validators.ndjson');
    const replica = before.file;
    const probe = openSnapshot(replica);
    const rows = probe.db.prepare('SELECT count(*) FROM richlist').pluck().get() as number;
    const nfts = probe.db.prepare('SELECT count(*) FROM nfts').pluck().get() as number;
    probe.close();
    for (const mode of ['no rich list', 'rich list']) {
      const r: Result = { source: 'postgres', mode, size: s, rows, nfts, ms: [], loads: [], split: [] };
      results.push(r);
      for (let run = 0; run < runs; run++) {
        const args = ['--from-postgres', dsn, '--vm-type', 'move', '--validators', validators, '--richlist-interval', mode === 'rich list' ? '10m' : '0'];
        try {
          const got = await followOnce(replica, join(work, `live-${process.pid}.sqlite`), args, mode === 'rich list', reveal);
          r.ms.push(got.ms);
          r.loads.push(load());
          r.split.push(got.line.replace(/^.*applied in /, ''));
          r.refresh ??= got.refresh;
          log(`postgres, ${rows} rich-list rows, ${nfts} NFTs, ${mode}, run ${run + 1}: batch ${got.ms} ms, load ${load()}`);
        } finally {
          await hide();
        }
      }
    }
  } finally {
    await c.end();
  }
}

async function main(): Promise<void> {
  const work = resolve(one('work', '/work/data-bc/followscale'));
  const runs = Number(one('runs', '3'));
  const sources = one('sources', 'api,postgres').split(',');
  const sizes: Size[] = one('sizes', '333:10000,100000:100000,1000000:1000000').split(',').map((x) => {
    const [holders, nfts] = x.split(':').map(Number);
    return { holders, nfts, tag: `h${holders}-n${nfts}` };
  });
  mkdirSync(join(work, 'tmp'), { recursive: true });
  // the PostgreSQL server's data directory (startPostgres: mkdtemp under the OS temp dir)
  process.env.TMPDIR = join(work, 'tmp');
  const results: Result[] = [];
  const pg = sources.includes('postgres') ? await startPostgres() : undefined;
  try {
    for (const [i, s] of sizes.entries()) {
      log(`size ${s.tag}: ${s.holders} holders per denom, ${s.nfts} extra NFTs`);
      if (sources.includes('api')) await apiRuns(work, s, runs, results);
      if (pg) await pgRuns(work, pg, i, s, runs, results);
    }
  } finally {
    await pg?.stop();
    for (const ext of ['', '-wal', '-shm']) rmSync(join(work, `live-${process.pid}.sqlite${ext}`), { force: true });
  }
  log('');
  const base = new Map<string, number>();
  for (const r of results) {
    const k = `${r.source} ${r.mode}`;
    const med = median(r.ms);
    if (!base.has(k)) base.set(k, med);
    log(`${r.source.padEnd(8)} ${r.mode.padEnd(12)} ${String(r.rows).padStart(8)} rich-list rows ${String(r.nfts).padStart(8)} NFTs: `
      + `median ${med} ms over ${r.ms.length} (${r.ms.join(', ')}; load ${r.loads.join(', ')}), ${(med / (base.get(k) as number)).toFixed(2)}x the smallest`);
    log(`    ${r.split[r.ms.indexOf(med)]}`);
    if (r.refresh) log(`    first refresh: ${r.refresh.replace(/^.*rich list at height \d+: /, '')}`);
  }
}

main().catch((e: Error) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
