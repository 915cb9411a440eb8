/**
 * serve's memory after N distinct requests (#43 "Measured at 5M txs", bench/README.md): N/2
 * activity pages of random accounts and N/2 txs by hash, 16 at a time, on a fresh `serve
 * --workers 1`; then its memory from /proc: RssAnon (the process's own: heap, caches, SQLite's
 * page cache), RssFile (pages of the mapped snapshot file, shared with the page cache) and VmHWM.
 *
 *   node bench/serve-memory.js FILE [N=20000]      (make build first)
 */
'use strict';
const { spawn } = require('node:child_process');
const http = require('node:http');
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const ROOT = join(__dirname, '..');
const Database = require(join(ROOT, 'node_modules', 'better-sqlite3'));
const { bech32 } = require(join(ROOT, 'node_modules', 'bech32'));

const file = process.argv[2];
const n = Number(process.argv[3] || 20000);
const db = new Database(file, { readonly: true });
const prefix = String(db.prepare("SELECT value FROM meta WHERE key = 'bech32_prefix'").pluck().get());
const accounts = db.prepare('SELECT addr FROM accounts WHERE tx_count > 0 ORDER BY random() LIMIT ?').pluck().all(n / 2);
const top = db.prepare('SELECT max(sequence) FROM txs').pluck().get();
const hash = db.prepare('SELECT hash FROM txs WHERE sequence >= ? ORDER BY sequence LIMIT 1').pluck();
const hashes = Array.from({ length: n / 2 }, () => hash.get(1 + Math.floor(Math.random() * top)));
db.close();
const urls = [
  ...accounts.map((a) => `/indexer/tx/v1/txs/by_account/${bech32.encode(prefix, bech32.toWords(a), 1023)}?pagination.limit=10`),
  ...hashes.map((h) => `/indexer/tx/v1/txs/${h.toString('hex').toUpperCase()}`),
];
const port = 20000 + Math.floor(Math.random() * 20000);
const serve = spawn(process.execPath, [join(ROOT, 'build', 'src', 'cli.js'), 'serve', '--db', file, '--port', String(port), '--workers', '1', '--log-level', 'warn', '--no-explorer'], { stdio: 'ignore' });
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
const get = (path) =>
  new Promise((ok, ko) => http.get({ host: '127.0.0.1', port, path, agent }, (r) => { r.resume(); r.on('end', () => ok(r.statusCode)); }).on('error', ko));
const kib = (status, key) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)[1]);

(async () => {
  for (;;) {
    try { if ((await get('/ready')) === 200) break; } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  const t = Date.now();
  let i = 0;
  const codes = {};
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (i < urls.length) { const c = await get(urls[i++]); codes[c] = (codes[c] || 0) + 1; }
  }));
  const status = readFileSync(`/proc/${serve.pid}/status`, 'utf8');
  const mib = (key) => +(kib(status, key) / 1024).toFixed(1);
  process.stdout.write(`${JSON.stringify({ file, requests: urls.length, codes, seconds: (Date.now() - t) / 1000, anonMiB: mib('RssAnon'), fileMiB: mib('RssFile'), hwmMiB: mib('VmHWM') })}\n`);
  serve.kill('SIGTERM');
  agent.destroy();
})();
