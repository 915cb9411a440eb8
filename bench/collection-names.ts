/**
 * collections/by_name: the in-memory search (src/snapshot/queries/collection-names.ts) against
 * the SQL it replaced (`instr()` over every collection, in the list's order), on a table of N
 * generated collections shaped like sql/001-tables.sql's (names of 2 words + a number, a ~400-byte
 * JSON each). Prints the build time and memory of the search, and per query the median ms of
 * both (a miss, a rare match, a one-letter query, a whole name).
 *
 *   node build/bench/collection-names.js [--collections 100000] [--reps 7]
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CollectionNames } from '../src/snapshot/queries/collection-names';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function time(reps: number, f: () => unknown): number {
  const runs: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = process.hrtime.bigint();
    f();
    runs.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return median(runs);
}

function main(): void {
  const n = Number(arg('collections', '100000'));
  const reps = Number(arg('reps', '7'));
  const dir = mkdtempSync(join(tmpdir(), 'collection-names-'));
  try {
    const db = new Database(join(dir, 'c.sqlite'));
    db.exec(`CREATE TABLE collections (addr BLOB PRIMARY KEY, height INTEGER NOT NULL, name TEXT NOT NULL, origin_name TEXT NOT NULL,
      norm_name TEXT NOT NULL, norm_origin_name TEXT NOT NULL, creator_id INTEGER NOT NULL, nft_count INTEGER NOT NULL DEFAULT 0,
      timestamp TEXT NOT NULL, json TEXT NOT NULL) WITHOUT ROWID;
      CREATE INDEX collections_by_height ON collections (height, addr);`);
    const words = ['cool', 'cats', 'punk', 'ape', 'bored', 'yacht', 'club', 'pixel', 'art', 'dragon', 'moon', 'init', 'alpha', 'beta', 'gen', 'zero', 'kitty', 'dog', 'bird', 'wolf'];
    let seed = 1;
    const rnd = (k: number): number => { seed = (seed * 1103515245 + 12345) % 2147483648; return Math.floor((seed / 2147483648) * k); };
    const ins = db.prepare('INSERT INTO collections VALUES (?, ?, ?, ?, ?, ?, 0, 0, ?, ?)');
    db.transaction(() => {
      for (let i = 0; i < n; i++) {
        const name = `${words[rnd(20)]}${words[rnd(20)]}${i}`;
        const addr = Buffer.alloc(32);
        addr.writeUInt32BE((i * 2654435761) >>> 0, 0);
        addr.writeUInt32BE(i, 28);
        ins.run(addr, Math.floor(i / 3), name, name, name, name, '2026-01-01T00:00:00Z', JSON.stringify({ name, pad: 'x'.repeat(400) }));
      }
    })();
    const sql = db.prepare(`SELECT json FROM collections WHERE instr(norm_name, @q) > 0 OR instr(norm_origin_name, @q) > 0
      ORDER BY height DESC, addr DESC LIMIT 101`);
    const count = db.prepare('SELECT count(*) FROM collections WHERE instr(norm_name, @q) > 0 OR instr(norm_origin_name, @q) > 0').pluck();
    global.gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    const t0 = process.hrtime.bigint();
    const names = CollectionNames.load(db);
    const buildMs = Number(process.hrtime.bigint() - t0) / 1e6;
    global.gc?.();
    const heapAfter = process.memoryUsage().heapUsed;
    console.log(`${n} collections: search built in ${buildMs.toFixed(0)} ms, ~${(names.approximateBytes() / 1e6).toFixed(1)} MB by its own count`
      + (global.gc ? `, heap +${((heapAfter - heapBefore) / 1e6).toFixed(1)} MB` : ' (run node --expose-gc for the heap growth)'));
    console.log('| query | matches | in memory: matches ms | SQL instr(): page + count ms |');
    console.log('|---|---:|---:|---:|');
    for (const q of ['zzzzqqqq', `wolf${n - 7}`, 'k', 'coolcats1']) {
      const mem = time(reps, () => names.matches(q));
      const old = time(Math.min(reps, 3), () => { sql.all({ q }); count.get({ q }); });
      console.log(`| \`${q}\` | ${names.matches(q).length} | ${mem.toFixed(3)} | ${old.toFixed(1)} |`);
    }
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main();
