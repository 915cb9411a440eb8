#!/usr/bin/env node
'use strict';
/**
 * What Snapshot.versionsHold costs a file in rollback-journal mode (docs/response-cache.md "A file
 * outside WAL mode written in place"): `PRAGMA data_version` on a read-only connection, µs a call
 * (SQLite takes and drops the file's lock and reads its change counter), three passes of N; then
 * a computed answer with and without the question — the activity pages of `--answers` random
 * accounts, each a URL never asked before, through serve's request listener (no response cache),
 * CPU µs a request of the one process (server and client), three rounds alternating.
 *
 *   node bench/versions-hold.js FILE [N] [ANSWERS]      (npx tsc -p . first: it loads build/)
 */
const http = require('node:http');
const { join } = require('node:path');
const Database = require('better-sqlite3');
const build = join(__dirname, '..', 'build');
const { openSnapshot } = require(join(build, 'src/snapshot/open'));
const { createRequestListener } = require(join(build, 'src/serve/routing'));
const { loadOpenApi } = require(join(build, 'src/serve/openapi'));
const { appOptions } = require(join(build, 'test/helpers/app-options'));

const [file, n = 200000, answers = 3000] = [process.argv[2], Number(process.argv[3] ?? 200000), Number(process.argv[4] ?? 3000)];
if (!file) throw new Error('usage: node bench/versions-hold.js FILE [N] [ANSWERS]');

const db = new Database(file, { readonly: true });
const version = db.prepare('PRAGMA data_version').pluck();
for (let pass = 1; pass <= 3; pass++) {
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) version.get();
  console.log(`PRAGMA data_version, pass ${pass}: ${(Number(process.hrtime.bigint() - t) / n / 1000).toFixed(2)} µs`);
}
db.close();

async function round(ask, r) {
  const s = openSnapshot(file);
  if (!ask) s.versionsHold = () => true; // the answer's ETag as if the question were not asked (a bench, not the product)
  const addrs = s.db.prepare('SELECT addr FROM accounts WHERE tx_count > 0 ORDER BY random() LIMIT ?').pluck().all(answers).map((b) => `0x${b.toString('hex')}`);
  const server = http.createServer(createRequestListener({ snapshots: { current: () => s }, openapi: loadOpenApi(), options: appOptions() }));
  await new Promise((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address();
  const agent = new http.Agent({ keepAlive: true });
  const get = (path) => new Promise((done, fail) => http.get({ port, path, agent }, (res) => res.resume().on('end', done)).on('error', fail));
  const c0 = process.cpuUsage();
  for (const a of addrs) await get(`/indexer/tx/v1/txs/by_account/${a}?pagination.limit=10&r=${r}`);
  const c = process.cpuUsage(c0);
  agent.destroy();
  await new Promise((done) => server.close(done));
  s.close();
  return (c.user + c.system) / addrs.length;
}

(async () => {
  for (let r = 1; r <= 3; r++) {
    for (const ask of r % 2 ? [true, false] : [false, true]) {
      console.log(`round ${r}, ${ask ? 'asked  ' : 'not asked'}: ${(await round(ask, r)).toFixed(0)} µs CPU a computed answer (server + client)`);
    }
  }
})();
