#!/usr/bin/env node
'use strict';
/**
 * What the library's startServer() spends its time on (docs/ci.md "What startServer's time goes
 * to"): each run a fresh `node` loads build/src/index.js as a test file would, starts a server
 * over a demo snapshot, answers one request to an API route, closes it. Phases, in ms:
 *   modules  — require of the serve stack (Express, the OpenAPI validator and Ajv, prom-client,
 *              better-sqlite3, the app) that startServer's first call loads
 *   start    — startServer() with the modules loaded: open the snapshot, build the app, listen
 *   second   — a second startServer() in the same process (what every later one costs)
 *   first    — the first request to an API route (its OpenAPI validator is compiled then)
 *   close    — close()
 * Usage: node bench/start-server.js [--runs 5] [--demo wasm]. Prints each run and the medians,
 * with the load average (a shared machine's figures are higher).
 */
const { spawnSync } = require('node:child_process');
const { loadavg } = require('node:os');
const { join } = require('node:path');

const arg = (name, fallback) => { const i = process.argv.indexOf(`--${name}`); return i < 0 ? fallback : process.argv[i + 1]; };
const runs = Number(arg('runs', '5'));
const demo = arg('demo', 'wasm');
const ROOT = join(__dirname, '..');

const child = `
const t = () => performance.now();
const a = t();
const lib = require(${JSON.stringify(join(ROOT, 'build', 'src', 'index.js'))});
require(${JSON.stringify(join(ROOT, 'build', 'src', 'serve', 'assembly.js'))});
require(${JSON.stringify(join(ROOT, 'build', 'src', 'serve', 'server.js'))});
const b = t();
(async () => {
  const s = await lib.startServer({ demo: ${JSON.stringify(demo)}, port: 0 });
  const c = t();
  const r = await fetch(s.url + '/indexer/tx/v1/txs?pagination.limit=5'); await r.text();
  const d = t();
  await s.close();
  const e = t();
  const s2 = await lib.startServer({ demo: ${JSON.stringify(demo)}, port: 0 });
  const f = t();
  await s2.close();
  process.stdout.write(JSON.stringify({ modules: b - a, start: c - b, first: d - c, close: e - d, second: f - e }));
})();
`;

const rows = [];
for (let i = 0; i < runs; i++) {
  const r = spawnSync(process.execPath, ['-e', child], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  rows.push(JSON.parse(r.stdout));
  const row = rows[rows.length - 1];
  console.log(`run ${i + 1}: ${Object.entries(row).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ')}; modules + start ${(row.modules + row.start).toFixed(0)} ms`);
}
const median = (xs) => { const s = [...xs].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
const m = Object.fromEntries(Object.keys(rows[0]).map((k) => [k, median(rows.map((r) => r[k]))]));
console.log(`median of ${runs} (${demo} demo, load ${loadavg()[0].toFixed(1)}): ${Object.entries(m).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ')}; `
  + `startServer as a test's first call ${median(rows.map((r) => r.modules + r.start)).toFixed(0)} ms`);
