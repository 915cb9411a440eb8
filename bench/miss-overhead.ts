import { readFileSync } from 'node:fs';
import { etagOf } from '../src/http/etag';
import { ResponseCache, type CacheState } from '../src/cache/store';
import { acceptsGzipCached } from '../src/http/encoding';
import { normalizeUrl } from '../src/http/url';

/** one state of one file, as a Snapshot shows it to the cache (no change records) */
const STATE: CacheState = { fileKey: 'bench', changeSeq: 0, changes: { seq: () => 0, since: () => [] }, meta: { snapshotId: 'bench', wireFormat: 2 } };

/**
 * What the response cache adds to a miss of a URL seen for the first time, in process, without
 * HTTP: the front's normalizeUrl + Accept-Encoding (what a browser sends) + lookup, then httpCaching's admit (doorkeeper) — against
 * the ETag hash every answer pays with or without the cache. Per URL, in µs, median of --runs.
 *
 *   node build/bench/miss-overhead.js --urls FILE [--runs 5]   (FILE: one path+query a line)
 */
function main(argv: string[]): void {
  const opt = (name: string, fallback: string): string => { const i = argv.indexOf(`--${name}`); return i < 0 ? fallback : argv[i + 1]; };
  const base = readFileSync(opt('urls', ''), 'utf8').split('\n').filter(Boolean);
  const runs = Number(opt('runs', '5'));
  const cacheUs: number[] = [];
  const etagUs: number[] = [];
  let n = 0;
  for (let r = 0; r < runs; r++) {
    const urls = base.map((u) => `${u}${u.includes('?') ? '&' : '?'}bench_r=${n++}`);
    const cache = new ResponseCache(64 << 20, 100_000);
    let t = process.hrtime.bigint();
    let admitted = 0;
    for (const u of urls) {
      cache.sync(STATE);
      const url = normalizeUrl(u);
      if (cache.part('').lookup(url, acceptsGzipCached('gzip, deflate, br')) < 0 && cache.admit(url)) admitted++;
    }
    cacheUs.push(Number(process.hrtime.bigint() - t) / 1e3 / urls.length);
    t = process.hrtime.bigint();
    let len = 0;
    for (const u of urls) len += etagOf('seed.2.', Buffer.from(u)).length;
    etagUs.push(Number(process.hrtime.bigint() - t) / 1e3 / urls.length);
    if (len === 0 || admitted > urls.length) throw new Error('unreachable');
    process.stdout.write(`run ${r + 1}: cache ${cacheUs[r].toFixed(2)} µs/URL (${admitted} of ${urls.length} admitted), ETag ${etagUs[r].toFixed(2)} µs/URL\n`);
  }
  const median = (a: number[]): number => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  process.stdout.write(`median: cache ${median(cacheUs).toFixed(2)} µs per first-sight miss, ETag ${median(etagUs).toFixed(2)} µs\n`);
}

main(process.argv.slice(2));
