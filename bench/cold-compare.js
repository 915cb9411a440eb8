#!/usr/bin/env node
'use strict';
/**
 * Interleaved cold-start comparison of several builds: for each run, each command line in turn
 * is started as `<cmd> serve --db DB --port P --workers W` and timed from spawn() to its first 200
 * on /indexer/block/v1/blocks?pagination.limit=1 (the body must hold blocks), then SIGTERMed.
 * Interleaving puts every build under the same background load. Also reported: CPU time (user +
 * system, /proc, 10 ms resolution) of the process and its children (a cluster's workers) when
 * the 200 arrived, and runs that did not exit 0 on SIGTERM. One untimed run per build first.
 *
 *   node bench/cold-compare.js RUNS WORKERS DB -- label=command… [label=command…]
 *   node bench/cold-compare.js 15 1 /tmp/sb/scale.sqlite -- "before=node /tmp/old/bin/indexer-api" "after=node bin/indexer-api"
 */
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');

const [RUNS, WORKERS, DB] = [Number(process.argv[2]), process.argv[3], process.argv[4]];
const cases = process.argv.slice(process.argv.indexOf('--') + 1).map((s) => {
  const i = s.indexOf('=');
  return { label: s.slice(0, i), argv: s.slice(i + 1).split(' ') };
});
const PATH = '/indexer/block/v1/blocks?pagination.limit=1';
if (!(RUNS > 0) || !WORKERS || !DB || !process.argv.includes('--') || !cases.length) {
  process.stderr.write('usage: node bench/cold-compare.js RUNS WORKERS DB -- label=command… [label=command…]\n');
  process.exit(2);
}

const freePort = () => new Promise((resolve) => {
  const s = net.createServer();
  s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
});
const get = (port) => new Promise((resolve, reject) => {
  const q = http.get({ host: '127.0.0.1', port, path: PATH, agent: false }, (r) => {
    let body = '';
    r.on('data', (d) => { body += d; });
    r.on('end', () => resolve({ status: r.statusCode, body }));
  });
  q.on('error', reject);
});

/** CPU ms of `pid` and its direct children (a cluster's workers). */
function cpuTree(pid) {
  let total = 0;
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      if (Number(d) === pid || Number(f[1]) === pid) total += (Number(f[11]) + Number(f[12])) * 10;
    } catch { /* gone */ }
  }
  return total;
}

async function once(c) {
  const port = await freePort();
  const t0 = process.hrtime.bigint();
  const child = spawn(c.argv[0], [...c.argv.slice(1), 'serve', '--db', DB, '--port', String(port), '--workers', WORKERS], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  let exited = false;
  const done = new Promise((resolve) => child.once('exit', (code) => { exited = true; resolve(code); }));
  for (;;) {
    if (exited) throw new Error(`${c.label} exited before answering: ${stderr}`);
    try {
      const r = await get(port);
      if (r.status === 200) {
        if (!Array.isArray(JSON.parse(r.body).blocks)) throw new Error(`${c.label}: unexpected body ${r.body.slice(0, 200)}`);
        break;
      }
    } catch (e) {
      if (!(e.code === 'ECONNREFUSED' || e.code === 'ECONNRESET')) { child.kill('SIGKILL'); throw e; }
    }
    await new Promise((r) => setTimeout(r, 1));
  }
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const cpu = cpuTree(child.pid);
  child.kill('SIGTERM');
  return { ms, cpu, ok: (await done) === 0 };
}

const median = (a) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

(async () => {
  for (const c of cases) await once(c);
  const r = Object.fromEntries(cases.map((c) => [c.label, { ms: [], cpu: [], bad: 0 }]));
  for (let i = 0; i < RUNS; i++) {
    for (const c of cases) {
      const x = await once(c);
      r[c.label].ms.push(x.ms);
      r[c.label].cpu.push(x.cpu);
      if (!x.ok) r[c.label].bad++;
    }
  }
  for (const [label, v] of Object.entries(r)) {
    process.stdout.write(`${label.padEnd(14)} --workers ${WORKERS}: median ${median(v.ms).toFixed(0).padStart(5)} ms (min ${Math.min(...v.ms).toFixed(0)}, max ${Math.max(...v.ms).toFixed(0)}), `
      + `CPU by then ${median(v.cpu)} ms, ${v.bad}/${RUNS} runs not exiting 0 on SIGTERM\n`);
  }
  process.stdout.write(`(${RUNS} runs each, interleaved; load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')})\n`);
})().catch((e) => { process.stderr.write(`cold-compare: ${e.message}\n`); process.exit(1); });
