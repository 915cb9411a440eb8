/**
 * What a follow batch costs a serve process (issue #30): the holder's reload for 'new batch'
 * after a tiny commit to the file it serves, in-process. Two ways, alternating round by round on
 * the same copy of the file:
 *
 * - `open`: every new state opens the file and prepares every statement (the holder given
 *   `open: openSnapshot`, which turns the spare connection off: the path before renewSnapshot);
 * - `renew`: the new state begun on the spare connection (src/snapshot/holder.ts, the default).
 *
 * Per batch it times the reload alone, then the first collections/by_name request on the new
 * state (the index built again, or carried) and the first deep-offset blocks page (a dense list's
 * bounds read again). A batch is one block appended, the meta and a change record naming `tip`
 * and its height (no collection change), written by a connection of this process, as `follow`
 * writes from another (no auto-checkpoint within a round: see round). Prints the median and p90 over the batches of every round (the first two
 * batches of each round left out: the spare is made there), and the rounds' medians.
 *
 * `--collections N` adds N collections to the copy first (names `padded collection <i>`, the
 * JSON of one of the chain's), so that the by_name index has the size of a real chain's.
 *
 *   node build/bench/batch-reload.js [--db fixtures/demo/evm.sqlite] [--batches 200] [--rounds 5] [--collections 0]
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import type Database from 'better-sqlite3';
import { openDatabase } from '../src/sqlite';
import { recordChange } from '../src/snapshot/changes';
import { heightTag, TIP } from '../src/snapshot/tags';
import { SnapshotHolder } from '../src/snapshot/holder';
import { openSnapshot, type Snapshot } from '../src/snapshot/open';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}

const quantile = (xs: number[], q: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))];

function commitBlock(w: Database.Database): void {
  const top = w.prepare('SELECT max(height) FROM blocks').pluck().get() as number;
  w.exec('BEGIN IMMEDIATE');
  w.prepare('INSERT INTO blocks (height, time_us, tx_count, json) SELECT height + 1, time_us + 1000000, 0, json FROM blocks WHERE height = ?').run(top);
  w.prepare("UPDATE meta SET value = ? WHERE key IN ('height', 'max_height')").run(String(top + 1));
  w.prepare("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'count_blocks'").run();
  w.prepare("UPDATE meta SET value = ? WHERE key = 'snapshot_id'").run(`bench-${top + 1}`);
  recordChange(w, 'batch', top + 1, [TIP, heightTag(top + 1)]);
  w.exec('COMMIT');
}

const ms = (t0: bigint): number => Number(process.hrtime.bigint() - t0) / 1e6;

interface Timings { reload: number[]; byName: number[]; dense: number[] }

async function round(file: string, w: Database.Database, mode: 'open' | 'renew', batches: number): Promise<Timings> {
  // no reader between rounds: the WAL written back whole, the file's size what its header says
  // (checkSnapshotFile refuses a file shorter than its header: the state of the main file while a
  // checkpoint that readers held back is incomplete — seen with auto-checkpoints mid-round)
  w.pragma('wal_checkpoint(TRUNCATE)');
  const holder = SnapshotHolder.open(file, mode === 'open' ? { open: openSnapshot } : {});
  const out: Timings = { reload: [], byName: [], dense: [] };
  try {
    for (let i = 0; i < batches + 2; i++) {
      commitBlock(w);
      let t0 = process.hrtime.bigint();
      if (!await holder.reload('new batch')) throw new Error('reload did not swap');
      const reload = ms(t0);
      const s = holder.acquire() as Snapshot;
      t0 = process.hrtime.bigint();
      s.q.nft.collectionsByName('a', { limit: 10, offset: 0, reverse: true, countTotal: true });
      const byName = ms(t0);
      t0 = process.hrtime.bigint();
      s.q.block.list({ limit: 10, offset: 100, reverse: true, countTotal: true });
      const dense = ms(t0);
      holder.release(s);
      if (i < 2) continue;
      out.reload.push(reload);
      out.byName.push(byName);
      out.dense.push(dense);
    }
    if (mode === 'renew' && holder.renewed < batches) throw new Error(`only ${holder.renewed} of ${batches} batches renewed`);
    if (mode === 'open' && holder.renewed !== 0) throw new Error('the open mode renewed');
  } finally {
    holder.close();
  }
  return out;
}

async function main(): Promise<void> {
  const src = arg('db', 'fixtures/demo/evm.sqlite');
  const batches = Number(arg('batches', '200'));
  const rounds = Number(arg('rounds', '5'));
  const dir = mkdtempSync(join(tmpdir(), 'batch-reload-'));
  const file = join(dir, 'live.sqlite');
  copyFileSync(src, file);
  const w = openDatabase(file);
  const padded = Number(arg('collections', '0'));
  if (padded > 0) {
    const ins = w.prepare(`INSERT INTO collections (addr, height, name, origin_name, norm_name, norm_origin_name, creator_id, nft_count, timestamp, json)
      SELECT randomblob(20), height + @i % 300, 'Padded Collection ' || @i, '', 'padded collection ' || @i, '', creator_id, 0, timestamp, json
      FROM collections ORDER BY addr LIMIT 1`);
    w.transaction(() => { for (let i = 0; i < padded; i++) ins.run({ i }); })();
  }
  w.pragma('journal_mode = WAL');
  // checkpoints only between rounds (see round): a round's WAL grows by a few pages per batch
  w.pragma('wal_autocheckpoint = 0');
  const medians: Record<string, Record<keyof Timings, number[]>> = {
    open: { reload: [], byName: [], dense: [] }, renew: { reload: [], byName: [], dense: [] },
  };
  const fmt = (x: number): string => x.toFixed(3);
  console.log(`${src} (+${padded} collections), ${batches} batches per round, ${rounds} rounds; load ${loadavg()[0].toFixed(2)} at start`);
  console.log('round\tmode\treload p50\treload p90\tby_name p50\tdense page p50\t(ms) load');
  try {
    for (let r = 0; r < rounds; r++) {
      for (const mode of (r % 2 === 0 ? ['open', 'renew'] : ['renew', 'open']) as ('open' | 'renew')[]) {
        const t = await round(file, w, mode, batches);
        for (const k of ['reload', 'byName', 'dense'] as const) medians[mode][k].push(quantile(t[k], 0.5));
        console.log(`${r + 1}\t${mode}\t${fmt(quantile(t.reload, 0.5))}\t${fmt(quantile(t.reload, 0.9))}\t${fmt(quantile(t.byName, 0.5))}\t${fmt(quantile(t.dense, 0.5))}\t${loadavg()[0].toFixed(2)}`);
      }
    }
    for (const mode of ['open', 'renew'] as const) {
      const m = medians[mode];
      console.log(`median of the rounds' medians, ${mode}: reload ${fmt(quantile(m.reload, 0.5))} ms, first by_name ${fmt(quantile(m.byName, 0.5))} ms, first dense page ${fmt(quantile(m.dense, 0.5))} ms`);
    }
    console.log(`load ${loadavg()[0].toFixed(2)} at end`);
  } finally {
    w.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

void main().catch((e: unknown) => { console.error(e); process.exit(1); });
