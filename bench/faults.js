#!/usr/bin/env node
'use strict';
/**
 * The figures of docs/reliability.md (`make build` first; results in bench/README.md):
 *
 *   node bench/faults.js --file BIG.sqlite [--runs 3]
 *
 * 1. quick check cost: PRAGMA quick_check over FILE (its own connection, as serve's check
 *    thread does), median of --runs, seconds and seconds per GB (10^9 bytes);
 * 2. start-up: `serve --db FILE` until /ready answers 200, with the check and with --no-verify
 *    (median of --runs each);
 * 3. hostile sockets: p50/p99 of 300 sequential normal requests on the wasm demo beside 300
 *    silent and 300 slowloris connections (median of --runs).
 */
const { spawn } = require('node:child_process');
const { statSync } = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const CLI = path.join(ROOT, 'bin', 'indexer-api');
const { quickCheck } = require(path.join(ROOT, 'build', 'src', 'snapshot', 'quick-check.js'));

const arg = (name, dflt) => { const i = process.argv.indexOf(`--${name}`); return i > 0 ? process.argv[i + 1] : dflt; };
const FILE = arg('file');
const RUNS = Number(arg('runs', 3));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

function get(url, agent) {
  return new Promise((done, fail) => {
    const req = http.get(url, { agent: agent ?? false }, (res) => { res.resume(); res.on('end', () => done(res.statusCode)); });
    req.on('error', fail);
  });
}

function startServe(args) {
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--workers', '1', '--log-level', 'warn', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const url = new Promise((done, fail) => {
    child.stderr.on('data', (d) => { stderr += d; });
    // the port is known from the listening socket before the "serving" line (which waits for the check)
    const poll = setInterval(() => {
      const pid = child.pid;
      try {
        const out = require('node:child_process').execFileSync('ss', ['-ltnpH'], { encoding: 'utf8' });
        const line = out.split('\n').find((l) => l.includes(`pid=${pid},`));
        const m = line && /127\.0\.0\.1:(\d+)/.exec(line);
        if (m) { clearInterval(poll); done(`http://127.0.0.1:${m[1]}`); }
      } catch { /* ss missing */ }
    }, 20);
    child.once('exit', (code) => { clearInterval(poll); fail(new Error(`serve exited ${code}: ${stderr}`)); });
  });
  return { child, url };
}

async function timeToReady(args) {
  const t0 = process.hrtime.bigint();
  const s = startServe(args);
  const url = await s.url;
  const listenMs = Number(process.hrtime.bigint() - t0) / 1e6;
  for (;;) {
    const status = await get(`${url}/ready`).catch(() => 0);
    if (status === 200) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const readyMs = Number(process.hrtime.bigint() - t0) / 1e6;
  s.child.kill('SIGTERM');
  await new Promise((r) => s.child.once('exit', r));
  return { listenMs, readyMs };
}

async function hostileRun() {
  const s = startServe(['--db', path.join(ROOT, 'fixtures', 'demo', 'wasm.sqlite'), '--headers-timeout-ms', '10000']);
  const url = new URL(await s.url);
  const socks = [];
  for (let i = 0; i < 600; i++) {
    const c = net.connect(Number(url.port), '127.0.0.1');
    c.on('error', () => {});
    await new Promise((r) => c.once('connect', r));
    if (i >= 300) {
      const t = setInterval(() => { if (c.writable) c.write('X'); else clearInterval(t); }, 100);
      c.write('GET /status HTTP/1.1\r\nX-Slow: ');
      c.once('close', () => clearInterval(t));
    }
    socks.push(c);
  }
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const ms = [];
  for (let i = 0; i < 300; i++) {
    const t0 = process.hrtime.bigint();
    await get(`${url.origin}/indexer/block/v1/blocks/${1 + (i % 400)}`, agent);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  agent.destroy();
  for (const c of socks) c.destroy();
  s.child.kill('SIGTERM');
  await new Promise((r) => s.child.once('exit', r));
  ms.sort((a, b) => a - b);
  return { p50: ms[Math.floor(ms.length * 0.5)], p99: ms[Math.floor(ms.length * 0.99)] };
}

(async () => {
  if (FILE) {
    const gb = statSync(FILE).size / 1e9;
    const secs = [];
    for (let i = 0; i < RUNS; i++) {
      const t0 = process.hrtime.bigint();
      const r = quickCheck(FILE);
      secs.push(Number(process.hrtime.bigint() - t0) / 1e9);
      if (r.problems) throw new Error(`quick check failed: ${JSON.stringify(r)}`);
    }
    console.log(`quick_check ${FILE} (${gb.toFixed(2)} GB): runs ${secs.map((s) => s.toFixed(1)).join(', ')} s; median ${median(secs).toFixed(1)} s = ${(median(secs) / gb).toFixed(1)} s/GB`);
    for (const [label, extra] of [['verify (default)', []], ['--no-verify', ['--no-verify']]]) {
      const rs = [];
      for (let i = 0; i < RUNS; i++) rs.push(await timeToReady(['--db', FILE, ...extra]));
      console.log(`serve ${label}: listening after ${median(rs.map((r) => r.listenMs)).toFixed(0)} ms, /ready 200 after ${median(rs.map((r) => r.readyMs)).toFixed(0)} ms (median of ${RUNS})`);
    }
  }
  const hs = [];
  for (let i = 0; i < RUNS; i++) hs.push(await hostileRun());
  console.log(`beside 300 silent + 300 slowloris sockets: p50 ${median(hs.map((h) => h.p50)).toFixed(1)} ms, p99 ${median(hs.map((h) => h.p99)).toFixed(1)} ms (median of ${RUNS} runs of 300 requests; p99s ${hs.map((h) => h.p99.toFixed(1)).join(', ')})`);
})().catch((e) => { console.error(e); process.exit(1); });
