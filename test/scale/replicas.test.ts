import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { publishSnapshot } from '../../src/publish/publish';
import { NGINX } from '../support/nginx';
import { netnsUnavailable } from '../support/netns';
import { clientLoad, converged, HAPROXY, LoadReport, monitorReplicas, ScaleLab } from '../support/scale-lab';
import { chainVersions, pullTmp, Version } from '../helpers/pull';

/**
 * Issue #12's run, for real on one machine: an origin (nginx) serving a publish directory, 3
 * replicas pulling from it, each in its own network namespace, HAProxy (deploy/haproxy.cfg) in
 * front, a client under load. During the run: 3 new publishes, a replica killed with SIGKILL and
 * restarted, the origin cut off for 10 s, one corrupted download. Needs root, iproute2, nginx,
 * haproxy; CI installs them (.ci/run) and sets TEST_REQUIRE_SCALE=1 so a missing one fails.
 */
// The quick check runs in a child process: ~0.3 s on an idle box, 2–3 s at a load average of 12
// on this shared 2-core machine; 5 s keeps "within 2 pull intervals" about the design, not the noise.
const PULL_MS = 5_000;
const LIMIT_MS = 2 * PULL_MS;
const missing = netnsUnavailable() ?? (!HAPROXY ? 'haproxy is not installed' : !NGINX ? 'nginx is not installed' : undefined);
const required = process.env.TEST_REQUIRE_SCALE === '1';
const sha = (file: string): string => createHash('sha256').update(readFileSync(file)).digest('hex');
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

(missing && !required ? describe.skip : describe)(`scale-out: publish once, 3 replicas behind HAProxy${missing ? ` (skipped: ${missing})` : ''}`, function () {
  this.timeout(240_000);
  let lab: ScaleLab | undefined;
  after(async () => { await lab?.stop(); });

  it('serves every request while versions roll out, a replica is killed, the origin drops off and a download is corrupted', async () => {
    if (missing) throw new Error(`TEST_REQUIRE_SCALE=1 but ${missing}`);
    const v: Version[] = await chainVersions();
    lab = await ScaleLab.start({ replicas: 3, pullIntervalMs: PULL_MS });
    const published = [await lab.publish(v[0].file)];
    await Promise.all(lab.replicas.map((_r, i) => lab!.startReplica(i)));
    await converged(lab, v[0].height, Date.now(), 30_000);
    await lab.startHaproxy();
    const monitor = monitorReplicas(lab, 100);
    const load = clientLoad(lab.url, 4, ['/status', '/indexer/block/v1/blocks?pagination.limit=5', '/indexer/tx/v1/txs?pagination.limit=5']);
    const convergence: number[] = [];
    let reportOut: LoadReport | undefined;
    let corruptFrom = 0;
    let corruptTo = 0;
    try {
      await sleep(1_000);
      // 1. A new version: every replica serves it within 2 pull intervals.
      let t = Date.now();
      published.push(await lab.publish(v[1].file));
      convergence.push(await converged(lab, v[1].height, t, LIMIT_MS));

      // 2. kill -9 one replica under load, restart it: it serves its verified file again at once.
      lab.replicas[1].proc!.signal('SIGKILL');
      await lab.replicas[1].proc!.exited;
      await sleep(1_500);
      await lab.startReplica(1);
      await converged(lab, v[1].height, Date.now(), 10_000);

      // 3. The origin cut off for 10 s, with a new version published meanwhile: everyone keeps
      //    serving, and converges within 2 pull intervals of the origin coming back.
      lab.net.setLink(lab.origin, false);
      published.push(await lab.publish(v[2].file));
      await sleep(10_000);
      lab.net.setLink(lab.origin, true);
      t = Date.now();
      convergence.push(await converged(lab, v[2].height, t, LIMIT_MS));
      const failedWhileCut = lab.replicas.map((r) => r.proc!.lines.filter((l) => l.msg === 'pull failed; still serving the current file').length);
      expect(failedWhileCut.every((n) => n > 0), `pull failures per replica while cut: ${failedWhileCut}`).to.equal(true);

      // 4. One corrupted download: the manifest names v3's file, the origin serves damaged bytes.
      const stage = mkdtempSync(join(pullTmp(), 'stage-'));
      const good = await publishSnapshot({ db: v[3].file, to: stage, keep: 3, compress: 'auto' });
      const bad = Buffer.from(readFileSync(join(stage, good.manifest.file)));
      bad[Math.floor(bad.length / 3)] ^= 0x55;
      writeFileSync(join(lab.dir, good.manifest.file), bad);
      copyFileSync(join(stage, 'manifest.json'), join(lab.dir, 'manifest.json.tmp'));
      corruptFrom = Date.now();
      renameSync(join(lab.dir, 'manifest.json.tmp'), join(lab.dir, 'manifest.json'));
      await Promise.all(lab.replicas.map((r) => r.proc!.line('a refused download', (l) => /sha256 [0-9a-f]{64} ≠ manifest/.test(String(l.error)))));
      copyFileSync(join(stage, good.manifest.file), join(lab.dir, `${good.manifest.file}.tmp`));
      corruptTo = Date.now();
      renameSync(join(lab.dir, `${good.manifest.file}.tmp`), join(lab.dir, good.manifest.file));
      published.push(good);
      convergence.push(await converged(lab, v[3].height, corruptTo, LIMIT_MS));
      await sleep(500);
    } finally {
      monitor.stop();
      const r = await load.stop();
      if (r.failures.length) process.stderr.write(`      client failures: ${JSON.stringify(r.failures.slice(0, 5))}\n`);
      // HAProxy says why it took servers out (e.g. `Layer7 wrong status, code: 503`)
      if (r.failures.length) process.stderr.write(`      haproxy log:\n${lab.haproxyLog}\n`);
      if (convergence.length) process.stderr.write(`      convergence so far: ${convergence.join(' / ')} ms\n`);
      reportOut = r;
    }
    const report = reportOut as LoadReport;

    expect(report.failures, JSON.stringify(report.failures.slice(0, 5))).to.deep.equal([]);
    expect(report.ok).to.be.greaterThan(500);
    expect([...report.heights.keys()].sort((a, b) => a - b)).to.deep.equal(v.map((x) => x.height));
    // Nothing but published, verified files was ever served: every /ready a replica gave names
    // a published snapshot, and none showed v3's height while only damaged bytes of it existed.
    const ids = new Set(published.map((p) => p.manifest.snapshot_id));
    const seen = monitor.samples.filter((s) => s.ready.status === 200);
    expect(seen.filter((s) => !ids.has(s.ready.snapshotId ?? ''))).to.deep.equal([]);
    expect(seen.filter((s) => s.at >= corruptFrom && s.at < corruptTo && s.ready.height === v[3].height)).to.deep.equal([]);
    for (const r of lab.replicas) expect(sha(r.db), r.host.name).to.equal(good(published).sha256);
    for (const ms of convergence) expect(ms).to.be.at.most(LIMIT_MS);
    process.stderr.write(`      (${report.ok} requests, 0 failed; convergence ${convergence.join(' / ')} ms; limit ${LIMIT_MS} ms)\n`);
  });
});

function good(published: { manifest: { sha256: string } }[]): { sha256: string } {
  return published[published.length - 1].manifest;
}
