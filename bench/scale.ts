import { resolve } from 'node:path';
import { chainVersions, removePullTmp } from '../test/helpers/pull';
import { converged, ScaleLab } from '../test/support/scale-lab';
import { runLoad } from './load';

/**
 * Scale-out figures (bench/README.md "Scale-out"), on the setup of test/scale: replicas in
 * network namespaces pulling from an nginx origin, HAProxy (deploy/haproxy.cfg) in front.
 * Needs root, iproute2, nginx, haproxy, wrk.
 *
 *   node build/bench/scale.js [--runs 3] [--seconds 8] [--connections 32] [--pull-interval-ms 1000] [--publishes 3]
 *
 * 1. aggregate req/s through HAProxy with 1, 2, 3 replicas (1 worker each; every request a URL
 *    not seen before, so each is a real query — the response cache never hits), runs interleaved;
 * 2. time from `publish` returning to every replica's /ready reporting the new height;
 * 3. bytes the origin sent per update per replica (nginx access log) vs the file sizes.
 */
const ROOT = resolve(__dirname, '..', '..');
const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? fallback : Number(process.argv[i + 1]);
};
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

async function main(): Promise<void> {
  const runs = arg('runs', 3);
  const seconds = arg('seconds', 8);
  const connections = arg('connections', 32);
  const pullMs = arg('pull-interval-ms', 1_000);
  // Each publish must be newer than the last (replicas never go back): one per prepared version.
  const publishes = Math.min(arg('publishes', 3), 3);
  const versions = await chainVersions();
  const lab = await ScaleLab.start({ replicas: 3, pullIntervalMs: pullMs });
  try {
    await lab.publish(versions[0].file);
    await Promise.all(lab.replicas.map((_r, i) => lab.startReplica(i)));
    await converged(lab, versions[0].height, Date.now(), 60_000);

    // 1. throughput
    const rps = new Map<number, number[]>([[1, []], [2, []], [3, []]]);
    for (let run = 0; run < runs; run++) {
      for (const n of run % 2 ? [3, 2, 1] : [1, 2, 3]) {
        await lab.startHaproxy(n);
        const r = await runLoad({ url: `${lab.url}/indexer/tx/v1/txs?pagination.limit=10`, connections, seconds, tool: 'wrk', root: ROOT, rotate: true, scratch: lab.tmp });
        await lab.stopHaproxy();
        if (r.errors) throw new Error(`${r.errors} errors with ${n} replicas`);
        rps.get(n)?.push(r.rps);
        process.stderr.write(`run ${run + 1}: ${n} replica(s) ${Math.round(r.rps)} req/s\n`);
      }
    }
    const one = median(rps.get(1) ?? []);
    console.log(`\n### Aggregate req/s through HAProxy (wrk -c${connections}, ${seconds} s, miss path), median of ${runs} runs`);
    console.log('| replicas | req/s (runs) | median | per-replica efficiency |');
    console.log('|---|---|---|---|');
    for (const [n, xs] of rps) {
      const m = median(xs);
      console.log(`| ${n} | ${xs.map((x) => Math.round(x)).join(', ')} | ${Math.round(m)} | ${(m / (n * one) * 100).toFixed(0)} % |`);
    }

    // 2. + 3. publish → all serving, and bytes per update
    const times: number[] = [];
    const publishMs: number[] = [];
    const updates: { file: string; size: number; fileSize: number; sent: number }[] = [];
    for (let k = 1; k <= publishes; k++) {
      const v = versions[k];
      const before = lab.originHttp.access().length;
      const t0 = Date.now();
      const p = await lab.publish(v.file);
      const t = Date.now();
      publishMs.push(t - t0);
      times.push(await converged(lab, v.height, t, 60_000));
      await new Promise((r) => setTimeout(r, 200));
      const sent = lab.originHttp.access().slice(before).filter((a) => a.request.includes(p.manifest.file)).reduce((s, a) => s + a.bytes, 0);
      updates.push({ file: p.manifest.file, size: p.manifest.size, fileSize: p.manifest.file_size, sent });
    }
    const manifests = lab.originHttp.access().filter((a) => a.request.includes('manifest.json'));
    console.log(`\n### Publish → every replica serving it (3 replicas, --pull-interval ${pullMs} ms), ${publishes} publishes`);
    console.log(`publish itself (VACUUM INTO + sha256 + gzip + manifest): median ${median(publishMs)} ms (${publishMs.join(', ')})`);
    console.log(`publish returned → all 3 replicas' /ready at the new height: median ${median(times)} ms, max ${Math.max(...times)} ms (${times.join(', ')})`);
    console.log('\n### Bytes per update (origin access log)');
    console.log('| file | SQLite size | transferred file | origin sent, all replicas | per replica |');
    console.log('|---|---|---|---|---|');
    for (const u of updates) console.log(`| ${u.file} | ${u.size} | ${u.fileSize} | ${u.sent} | ${Math.round(u.sent / 3)} |`);
    const polls = manifests.reduce((s, a) => s + a.bytes, 0) / Math.max(1, manifests.length);
    console.log(`manifest polls: ${manifests.length} so far, ${Math.round(polls)} bytes each`);
  } finally {
    await lab.stop();
    removePullTmp();
  }
}

main().catch((e: Error) => { process.stderr.write(`bench/scale: ${e.stack ?? e.message}\n`); process.exit(1); });
