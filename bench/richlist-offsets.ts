import { copyFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { createRequestListener } from '../src/serve/routing';
import { loadOpenApi } from '../src/serve/openapi';
import { listen } from '../src/serve/server';
import { openSnapshot } from '../src/snapshot/open';
import { writeRanks } from '../src/snapshot/richlist-ranks';
import { openStore } from '../src/snapshot/store';
import { appOptions } from '../test/helpers/app-options';

/**
 * A rich list paged by offset at any depth (issue #37): the time of one page at offset 0 and
 * at deep offsets, largest first and smallest first, over HTTP to an in-process server (no
 * response cache: every request runs the query), and the time to write the rank marks of every
 * denom again (what an import and a version-2 upgrade add; a refresh does it for the denoms it
 * changed), on a copy of the file. With --v2, the same offsets up to 10,000 also on a copy
 * without the marks (schema version 2: an offset skips that many index entries).
 *
 *   node build/bench/richlist-offsets.js --db FILE --denom DENOM [--reps 200] [--runs 3] [--v2]
 *
 * Medians over `reps` requests, each offset's run interleaved with the others; `runs` times.
 */

function arg(name: string, fallback?: string): string {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0 || i + 1 >= process.argv.length) {
    if (fallback === undefined) throw new Error(`usage: node build/bench/richlist-offsets.js --db FILE --denom DENOM [--reps 200] [--runs 3] (missing --${name})`);
    return fallback;
  }
  return process.argv[i + 1];
}

function get(url: string): Promise<{ status: number; ms: number; bytes: number }> {
  const t = process.hrtime.bigint();
  return new Promise((done, fail) => {
    request(url, { agent: false }, (res) => {
      let bytes = 0;
      res.on('data', (b: Buffer) => { bytes += b.length; });
      res.on('end', () => done({ status: res.statusCode ?? 0, ms: Number(process.hrtime.bigint() - t) / 1e6, bytes }));
      res.on('error', fail);
    }).on('error', fail).end();
  });
}

const median = (xs: number[]): number => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

const print = (s: string): void => { process.stdout.write(`${s}\n`); };

async function main(): Promise<void> {
  const file = arg('db');
  const denom = arg('denom');
  const reps = Number(arg('reps', '200'));
  const runs = Number(arg('runs', '3'));
  await pages(file, denom, reps, runs, undefined);
  if (process.argv.includes('--v2')) {
    const copy = `${file}.bench-v2-${process.pid}`;
    copyFileSync(file, copy);
    try {
      const db = openStore(copy, 'bulk', { mustExist: true });
      try { db.exec("DROP TABLE richlist_ranks; UPDATE meta SET value = '2' WHERE key = 'schema_version'; PRAGMA user_version = 2;"); } finally { db.close(); }
      await pages(copy, denom, reps, runs, 10_000);
    } finally {
      rmSync(copy, { force: true });
    }
  }
  await marks(file, runs);
}

async function pages(file: string, denom: string, reps: number, runs: number, maxOffset: number | undefined): Promise<void> {
  const snapshot = openSnapshot(file);
  const total = Number(JSON.parse(snapshot.q.richlist.holders(denom, { limit: 1, offset: 0, reverse: true, countTotal: true }).pagination).total);
  const server = await listen(createRequestListener({ snapshots: { current: () => snapshot }, openapi: loadOpenApi(), options: appOptions({ corsOrigin: '' }) }), '127.0.0.1', 0);
  try {
    print(`${file}: ${denom}, ${total.toLocaleString('en-US')} holders; schema version ${snapshot.meta.schemaVersion}`);
    const offsets = [0, 10, 10_000, Math.floor(total / 2), total - 10].filter((n, i, a) => n >= 0 && n < total && a.indexOf(n) === i && (maxOffset === undefined || n <= maxOffset));
    const cases = offsets.flatMap((n) => [10, 100].flatMap((limit) => [true, false].map((reverse) => ({ n, limit, reverse }))));
    const url = (c: typeof cases[number]): string => `${server.url}/indexer/richlist/v1/${encodeURIComponent(denom)}?pagination.offset=${c.n}&pagination.limit=${c.limit}&pagination.reverse=${c.reverse}`;
    for (const c of cases) {
      const r = await get(url(c));
      if (r.status !== 200) throw new Error(`${url(c)}: HTTP ${r.status}`);
    }
    const results = new Map<string, number[]>();
    for (let run = 0; run < runs; run++) {
      for (let i = 0; i < reps; i++) {
        for (const c of cases) {
          const r = await get(url(c));
          const k = JSON.stringify(c);
          results.set(k, [...(results.get(k) ?? []), r.ms]);
        }
      }
    }
    print('\n| offset | limit | order | median ms | p90 ms | ÷ offset 0 |');
    print('|---:|---:|---|---:|---:|---:|');
    for (const c of cases) {
      const xs = results.get(JSON.stringify(c)) as number[];
      const base = median(results.get(JSON.stringify({ n: 0, limit: c.limit, reverse: c.reverse })) as number[]);
      const sorted = [...xs].sort((a, b) => a - b);
      print(`| ${c.n.toLocaleString('en-US')} | ${c.limit} | ${c.reverse ? 'largest first' : 'smallest first'} | ${median(xs).toFixed(3)} | ${sorted[Math.floor(sorted.length * 0.9)].toFixed(3)} | ${(median(xs) / base).toFixed(2)} |`);
    }
  } finally {
    await server.close();
    snapshot.close();
  }
}

/** The marks of every denom written again, on a copy (the file is not changed). */
async function marks(file: string, runs: number): Promise<void> {
  const copy = `${file}.bench-ranks-${process.pid}`;
  copyFileSync(file, copy);
  try {
    const times: number[] = [];
    let marks = 0;
    for (let run = 0; run < runs; run++) {
      const db = openStore(copy, 'inPlace');
      try {
        const t = process.hrtime.bigint();
        db.transaction(() => { marks = writeRanks(db, 'all'); })();
        times.push(Number(process.hrtime.bigint() - t) / 1e6);
      } finally { db.close(); }
    }
    print(`\nrank marks of every denom written again (${marks.toLocaleString('en-US')} marks): median ${median(times).toFixed(0)} ms (${times.map((x) => x.toFixed(0)).join(', ')})`);
  } finally {
    for (const ext of ['', '-wal', '-shm']) rmSync(copy + ext, { force: true });
  }
}

main().catch((e: Error) => { process.stderr.write(`richlist-offsets: ${e.message}\n`); process.exit(1); });
