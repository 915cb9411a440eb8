#!/usr/bin/env node
'use strict';
/**
 * Cold start = from spawn() to the first 200 answer on a validated API route (default
 * /indexer/block/v1/blocks?pagination.limit=1: request validation, a query, a JSON body), polling
 * the port with tight retries (a new connection every ~1 ms until one is accepted). The body of
 * that first 200 must be a JSON object with a `blocks` array of one block (or, with --path, any
 * JSON). Each case runs --runs times (default 9, at least 7); the median is reported, with min
 * and max.
 *
 *   node bench/cold-start.js [--runs 9] [--db fixtures/demo/wasm.sqlite] [--binary dist/indexer-api]
 *                            [--path /indexer/…] [--only node|binary] [--json] [-- serve args…]
 *
 * Cases:
 *   binary, --db, warm cache     the addon is already in $XDG_CACHE_HOME/indexer-api
 *   binary, --db, empty cache    a fresh XDG_CACHE_HOME for every run (writes the 2 MiB addon)
 *   binary, demo, warm cache     `serve` with no --db (embedded Move demo, already materialized)
 *   binary, demo, empty cache    `serve` with no --db, fresh cache (writes addon + 17 MiB demo)
 *   node bin/indexer-api, --db   the same snapshot served by `node bin/indexer-api serve`
 *
 * --only node|binary keeps only the cases of `node bin/indexer-api` or of the binary.
 *
 * The binary and the snapshot are in the page cache in every case (one untimed run first):
 * "empty cache" means the indexer-api addon cache, not a cold disk. Also reported: the CPU time
 * (user + system, from /proc, 10 ms resolution) the server had used when the 200 arrived, which
 * is less sensitive than wall time to other load on the machine.
 */
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');

const OWN = process.argv.includes('--') ? process.argv.slice(0, process.argv.indexOf('--')) : process.argv;
function option(name, fallback) {
  const i = OWN.indexOf(`--${name}`);
  return i < 0 ? fallback : OWN[i + 1];
}
const RUNS = Math.max(7, Number(option('runs', '9')));
const DB = path.resolve(option('db', path.join(ROOT, 'fixtures/demo/wasm.sqlite')));
const BINARY = path.resolve(option('binary', path.join(ROOT, 'dist/indexer-api')));
const JSON_OUT = OWN.includes('--json');
const DEFAULT_PATH = '/indexer/block/v1/blocks?pagination.limit=1';
const PATH = option('path', DEFAULT_PATH);
const ONLY = option('only', undefined);
/** everything after `--` is appended to every serve command line (e.g. `-- --workers 1`) */
const EXTRA = process.argv.includes('--') ? process.argv.slice(process.argv.indexOf('--') + 1) : [];
/** SIGTERM right after the first answer should still exit 0; collected and reported, not fatal */
const badExits = [];

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => { const { port } = srv.address(); srv.close(() => resolve(port)); });
  });
}

/** One GET of PATH; resolves with the status code and body, rejects on connection errors. */
function get(port) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: PATH, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

/** The first 200 must be a real answer, not just any 200. */
function checkBody(body) {
  const doc = JSON.parse(body);
  if (PATH === DEFAULT_PATH && !(Array.isArray(doc.blocks) && doc.blocks.length === 1 && doc.blocks[0].height)) {
    throw new Error(`unexpected first answer on ${PATH}: ${body.slice(0, 200)}`);
  }
}

/** Spawns `cmd args… --port P`, returns ms until PATH answered 200, then SIGTERMs it. */
async function once(cmd, args, env) {
  const port = await freePort();
  let stderr = '';
  let exited = false;
  const t0 = process.hrtime.bigint();
  const child = spawn(cmd, [...args, ...EXTRA, '--port', String(port)], { cwd: os.tmpdir(), env, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr.on('data', (d) => { stderr += d; });
  const done = new Promise((resolve) => child.once('exit', (code, signal) => { exited = true; resolve({ code, signal }); }));
  let ms;
  let cpu;
  for (;;) {
    if (exited) throw new Error(`${cmd} exited before answering: ${stderr}`);
    try {
      const res = await get(port);
      if (res.status === 200) { ms = Number(process.hrtime.bigint() - t0) / 1e6; cpu = cpuMs(child.pid); checkBody(res.body); break; }
      if (res.status !== 503) { child.kill('SIGKILL'); throw new Error(`${cmd}: ${PATH} answered ${res.status}: ${res.body.slice(0, 200)}`); }
    } catch (e) {
      if (!(e.code === 'ECONNREFUSED' || e.code === 'ECONNRESET')) { child.kill('SIGKILL'); throw e; } // else: not listening yet
    }
    if (Number(process.hrtime.bigint() - t0) > 60e9) { child.kill('SIGKILL'); throw new Error(`${cmd}: no 200 on ${PATH} within 60 s: ${stderr}`); }
    await new Promise((r) => setTimeout(r, 1));
  }
  child.kill('SIGTERM');
  const exit = await done;
  if (exit.code !== 0) badExits.push(`${path.basename(cmd)} ${args.join(' ')}: ${JSON.stringify(exit)} ${stderr.trim().split('\n').pop()}`);
  return { ms, cpu };
}

/** CPU time (user + system) the process has used so far, from /proc (10 ms resolution), or NaN. */
function cpuMs(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10; // utime, stime in USER_HZ (100)
  } catch {
    return NaN;
  }
}

function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  const median = s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
  return { runs: s.length, median, min: s[0], max: s[s.length - 1], samples };
}

async function main() {
  if (!fs.existsSync(DB)) throw new Error(`${DB} does not exist (run \`make fixtures\`, or pass --db)`);
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'indexer-api-cold-start-'));
  const warmCache = path.join(scratch, 'warm-cache');
  let fresh = 0;
  const emptyCache = () => path.join(scratch, `empty-cache-${fresh++}`);
  // no INDEXER_API_* from the caller's environment; node not needed on PATH for the binary
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('INDEXER_API_')));
  const binEnv = (cache) => ({ PATH: '/usr/bin:/bin', HOME: scratch, XDG_CACHE_HOME: cache, LANG: 'C' });

  const cases = [];
  if (ONLY === 'node') {
    // only the Node-run CLI
  } else if (fs.existsSync(BINARY)) {
    cases.push(
      { name: 'binary serve --db, warm cache', cmd: BINARY, args: ['serve', '--db', DB], env: () => binEnv(warmCache) },
      { name: 'binary serve --db, empty cache', cmd: BINARY, args: ['serve', '--db', DB], env: () => binEnv(emptyCache()) },
      { name: 'binary serve (embedded demo), warm cache', cmd: BINARY, args: ['serve'], env: () => binEnv(warmCache) },
      { name: 'binary serve (embedded demo), empty cache', cmd: BINARY, args: ['serve'], env: () => binEnv(emptyCache()) },
    );
  } else {
    process.stderr.write(`cold-start: ${BINARY} not found (run \`make binary\`): measuring the Node-run CLI only\n`);
  }
  if (ONLY !== 'binary') cases.push({ name: 'node bin/indexer-api serve --db', cmd: process.execPath, args: [path.join(ROOT, 'bin/indexer-api'), 'serve', '--db', DB], env: () => base });

  const results = [];
  try {
    for (const c of cases) {
      await once(c.cmd, c.args, c.env()); // untimed: page cache, and the warm addon/demo cache
      const runs = [];
      for (let i = 0; i < RUNS; i++) runs.push(await once(c.cmd, c.args, c.env()));
      const r = { case: c.name, ...stats(runs.map((x) => x.ms)), cpu: stats(runs.map((x) => x.cpu)) };
      results.push(r);
      if (!JSON_OUT) {
        process.stdout.write(`${c.name.padEnd(44)} median ${r.median.toFixed(0).padStart(5)} ms   (min ${r.min.toFixed(0)}, max ${r.max.toFixed(0)}, ${r.runs} runs;`
          + ` CPU used by then: median ${r.cpu.median.toFixed(0)} ms)\n`);
      }
    }
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  const env = {
    node: process.version, platform: `${process.platform}-${process.arch}`, cpus: os.cpus().length, cpu: os.cpus()[0]?.model,
    binaryBytes: fs.existsSync(BINARY) ? fs.statSync(BINARY).size : null, db: path.relative(ROOT, DB) || DB,
  };
  if (badExits.length) process.stderr.write(`cold-start: ${badExits.length} run(s) did not exit 0 on SIGTERM, e.g. ${badExits[0]}\n`);
  if (JSON_OUT) process.stdout.write(JSON.stringify({ env, extraArgs: EXTRA, results, badExits }, null, 2) + '\n');
  else process.stdout.write(`(${env.platform}, Node.js ${env.node}, ${env.cpus} × ${env.cpu}; binary ${env.binaryBytes ?? '-'} bytes; snapshot ${env.db}`
    + `; first 200 on ${PATH}${EXTRA.length ? `; serve args ${EXTRA.join(' ')}` : ''}; load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')})\n`);
}

main().catch((e) => { process.stderr.write(`cold-start: ${e.message}\n`); process.exit(1); });
