/**
 * Where a 304 decided from the file's versions spends its time (issue #42, bench/README.md
 * "Restarts and new files under load"): in one fresh process, the steps of the front's
 * fromVersions (src/cache/front.ts) timed one by one over N wallets' activity URLs — the route
 * match (src/http/version-etag.ts routeMatcher), the tags' versions (one indexed lookup of the
 * account: src/snapshot/tag-versions.ts), the ETag's hash (versionEtag) — first over every
 * wallet once (what the first poll cycle after a restart pays: nothing of the file touched
 * yet by this process), then over the same wallets again (touched).
 *
 *   node build/bench/version-path.js --db FILE [--wallets 20000]
 */
import { loadavg } from 'node:os';
import { openSnapshot } from '../src/snapshot/open';
import { apiRoutes } from '../src/routes/table';
import { routeMatcher, versionEtag, versionedTags } from '../src/http/version-etag';
import { walletPaths } from './wallet-kit';

function opt(argv: string[], name: string, dflt: string): string {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : dflt;
}

function main(argv: string[]): void {
  const file = opt(argv, 'db', '');
  const n = Number(opt(argv, 'wallets', '20000'));
  const { paths } = walletPaths(file, n);
  const t0 = process.hrtime.bigint();
  const s = openSnapshot(file);
  const openMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const match = routeMatcher(apiRoutes());
  const out: string[] = [`${paths.length} wallets, ${file}; load ${loadavg()[0].toFixed(2)}; open ${openMs.toFixed(1)} ms`,
    '', '| pass | match µs | versions µs | hash µs | total µs |', '|---:|---:|---:|---:|---:|'];
  for (let pass = 1; pass <= 3; pass++) {
    let tm = 0n; let tv = 0n; let th = 0n;
    let sink = 0;
    for (const p of paths) {
      const a = process.hrtime.bigint();
      const m = match(p);
      const b = process.hrtime.bigint();
      const v = m === undefined ? undefined : versionedTags(m.route, m.params, s);
      const c = process.hrtime.bigint();
      if (v === undefined) throw new Error(`${p}: not decided from versions`);
      const e = versionEtag(s, p, v, true);
      const d = process.hrtime.bigint();
      sink += e.length;
      tm += b - a; tv += c - b; th += d - c;
    }
    const us = (x: bigint): string => (Number(x) / 1e3 / paths.length).toFixed(2);
    out.push(`| ${pass} | ${us(tm)} | ${us(tv)} | ${us(th)} | ${us(tm + tv + th)} |${sink === 0 ? ' ' : ''}`);
  }
  process.stdout.write(`${out.join('\n')}\n`);
  s.close();
}

main(process.argv.slice(2));
