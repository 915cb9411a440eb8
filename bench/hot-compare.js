#!/usr/bin/env node
'use strict';
/**
 * Hot path of several builds, interleaved: for each run and each build in turn (the order
 * rotates), `<cmd> serve --db DB --port P --workers 1 [serve args]` pinned to CPU 0, wrk
 * (`-t1 -c50`) pinned to CPU 1 on one fixed URL, 1 s warm-up then SECONDS measured. Reported per
 * build: median req/s and median server CPU µs per request (user + system from /proc over the
 * measured window ÷ requests wrk completed), and the ratio of each build's CPU µs/req to the
 * first build's, median over the runs (same run = same background load).
 *
 *   node bench/hot-compare.js RUNS SECONDS DB URL -- label=command… [label=command…] [-- serve args…]
 *   node bench/hot-compare.js 5 5 fixtures/demo/wasm.sqlite '/indexer/tx/v1/txs?pagination.limit=10' \
 *     -- "before=node /tmp/old/bin/indexer-api" "after=node bin/indexer-api"
 *   … -- "before=…" "after=…" -- --cache-entries 0        # the miss path: every request through Express
 *
 * Needs wrk and taskset (2+ cores). Logs (level info) go to /dev/null.
 */
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');

const argv = process.argv.slice(2);
const seps = argv.reduce((a, x, i) => (x === '--' ? [...a, i] : a), []);
const [RUNS, SECONDS, DB, URL_PATH] = [Number(argv[0]), Number(argv[1]), argv[2], argv[3]];
if (!(RUNS > 0) || !(SECONDS > 0) || !DB || !URL_PATH || seps.length === 0) {
  process.stderr.write('usage: node bench/hot-compare.js RUNS SECONDS DB URL -- label=command… [-- serve args…]\n');
  process.exit(2);
}
const builds = argv.slice(seps[0] + 1, seps[1] ?? argv.length).map((s) => {
  const i = s.indexOf('=');
  return { label: s.slice(0, i), argv: s.slice(i + 1).split(' ') };
});
const serveArgs = seps[1] === undefined ? [] : argv.slice(seps[1] + 1);
const TICK = 100; // clock ticks per second (/proc/<pid>/stat utime, stime)

function cpuSeconds(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / TICK;
}

function get(port, path) {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); });
    req.on('error', () => resolve(0));
  });
}

async function startServer(build, port) {
  const [cmd, ...rest] = build.argv;
  const child = spawn('taskset', ['-c', '0', cmd, ...rest, 'serve', '--db', DB, '--port', String(port), '--workers', '1', ...serveArgs], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  for (let i = 0; i < 600; i++) {
    if ((await get(port, '/ready')) === 200) return child;
    if (child.exitCode !== null) throw new Error(`${build.label} exited: ${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${build.label} never became ready: ${stderr}`);
}

function wrk(port, seconds) {
  const r = spawnSync('taskset', ['-c', '1', 'wrk', '-t1', '-c50', `-d${seconds}s`, `http://127.0.0.1:${port}${URL_PATH}`], { encoding: 'utf8' });
  const m = /(\d+) requests in/.exec(r.stdout);
  if (!m) throw new Error(`wrk: ${r.stdout}${r.stderr}`);
  return Number(m[1]);
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };

async function main() {
  const results = new Map(builds.map((b) => [b.label, { rps: [], us: [] }]));
  const ratios = new Map(builds.map((b) => [b.label, []]));
  let port = 7400 + Math.floor(Math.random() * 500);
  for (let run = 0; run < RUNS; run++) {
    const order = builds.map((_, i) => builds[(i + run) % builds.length]);
    const perRun = new Map();
    for (const b of order) {
      port++;
      const child = await startServer(b, port);
      try {
        if ((await get(port, URL_PATH)) !== 200) throw new Error(`${b.label}: ${URL_PATH} is not 200`);
        wrk(port, 1);
        const c0 = cpuSeconds(child.pid);
        const n = wrk(port, SECONDS);
        const us = ((cpuSeconds(child.pid) - c0) * 1e6) / n;
        results.get(b.label).rps.push(n / SECONDS);
        results.get(b.label).us.push(us);
        perRun.set(b.label, us);
        process.stderr.write(`run ${run + 1} ${b.label}: ${(n / SECONDS).toFixed(0)} req/s, ${us.toFixed(1)} CPU µs/req\n`);
      } finally {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
    }
    const base = perRun.get(builds[0].label);
    for (const b of builds) ratios.get(b.label).push(perRun.get(b.label) / base);
  }
  console.log(`| build | req/s (median of ${RUNS}) | CPU µs/req (median) | CPU µs/req ÷ ${builds[0].label} (median of the runs) |`);
  console.log('|---|---|---|---|');
  for (const b of builds) {
    const r = results.get(b.label);
    console.log(`| ${b.label} | ${median(r.rps).toFixed(0)} | ${median(r.us).toFixed(1)} | ${median(ratios.get(b.label)).toFixed(3)} |`);
  }
}

main().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
