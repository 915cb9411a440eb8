import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { publishSnapshot } from '../src/publish/publish';
import { eventually, get, startServe } from '../test/helpers/serve';
import { freePort } from '../test/support/net';
import { startNginx } from '../test/support/nginx';

/**
 * What one version costs with publish / serve --pull, on a given snapshot (bench/README.md
 * "Scale-out"): publish phases (VACUUM INTO, sha256, gzip), then a fresh replica's pull from
 * nginx on 127.0.0.1 — from start to /ready 200, and the pull itself (download, gunzip +
 * sha256, quick_check child, rename) from its `pulled snapshot` log line. Medians of --runs.
 *
 *   node build/bench/pull-cost.js --db FILE [--runs 3]
 */
const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? fallback : process.argv[i + 1];
};
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

async function main(): Promise<void> {
  const db = arg('db', '');
  if (!db) throw new Error('--db FILE is required');
  const runs = Number(arg('runs', '3'));
  const tmp = mkdtempSync(join(tmpdir(), 'indexer-api-pull-cost-'));
  try {
    const phases: Record<string, number[]> = {};
    let manifest;
    for (let run = 0; run < runs; run++) {
      const to = join(tmp, `pub-${run}`);
      let last = Date.now();
      let phase = '';
      const t0 = last;
      const r = await publishSnapshot({ db, to, keep: 3, compress: 'auto', onPhase: (p) => {
        const now = Date.now();
        if (phase) (phases[phase] ??= []).push(now - last);
        phase = p.replace(/ \(.*$/, '').replace(/ .*sqlite.*/, '');
        last = now;
      } });
      (phases[phase] ??= []).push(Date.now() - last);
      (phases.total ??= []).push(Date.now() - t0);
      manifest = r.manifest;
      if (run > 0) rmSync(to, { recursive: true, force: true });
    }
    if (!manifest) return;
    const mb = (n: number): string => (n / 1e6).toFixed(1);
    console.log(`### publish of ${db}: ${mb(manifest.size)} MB → ${manifest.encoding} ${mb(manifest.file_size)} MB (${(manifest.file_size / manifest.size * 100).toFixed(1)} %), median of ${runs}`);
    for (const [k, xs] of Object.entries(phases)) console.log(`- ${k}: ${median(xs)} ms (${xs.join(', ')}) = ${(manifest.size / 1e6 / (median(xs) / 1000)).toFixed(0)} MB/s of the SQLite file`);
    const origin = await startNginx(join(tmp, 'pub-0'), '127.0.0.1', await freePort());
    try {
      const ready: number[] = [];
      const pull: number[] = [];
      for (let run = 0; run < runs; run++) {
        const dbDir = mkdtempSync(join(tmp, 'replica-'));
        const t0 = Date.now();
        const s = await startServe(['--pull', `${origin.url}/manifest.json`, '--db', join(dbDir, 'local.sqlite'), '--pull-interval', '30s']);
        await eventually('ready', async () => (await get(`${s.url}/ready`)).status === 200 || undefined, 100_000);
        ready.push(Date.now() - t0);
        const line = await s.line('pulled', (l) => l.msg === 'pulled snapshot');
        pull.push(Number(line.ms));
        await s.stop();
        rmSync(dbDir, { recursive: true, force: true });
      }
      console.log(`### a fresh replica pulling it from nginx on 127.0.0.1, median of ${runs}`);
      console.log(`- start → /ready 200: ${median(ready)} ms (${ready.join(', ')})`);
      console.log(`- the pull (download ${mb(manifest.file_size)} MB, gunzip + sha256, quick_check child, rename): ${median(pull)} ms (${pull.join(', ')})`);
    } finally {
      await origin.stop();
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((e: Error) => { process.stderr.write(`bench/pull-cost: ${e.stack ?? e.message}\n`); process.exit(1); });
