#!/usr/bin/env node
'use strict';
/**
 * `npm pack` / `npm publish` run this first (package.json "prepack"): the package ships the
 * built tree (build/src, the library's .d.ts, build/openapi.json, the demo snapshots), so packing
 * a checkout that was never built, or built before its last source change, would ship a broken or
 * stale package. It checks; it does not build (`make pack` builds, then packs).
 */
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const mtime = (rel) => { try { return fs.statSync(path.join(ROOT, rel)).mtimeMs; } catch { return undefined; } };

/** [built file, the sources it must not be older than] */
const NEEDED = [
  ['build/src/cli.js', ['src/cli.ts']],
  ['build/src/index.js', ['src/index.ts']],
  // bin/indexer-api runs the bundle only if it is not older than build/src/cli.js
  ['build/bundle/indexer-api.js', ['build/src/cli.js', 'scripts/build-bundle.js']],
  ['build/types/src/index.d.ts', ['src/index.ts']],
  // LogLevel: the library's one log-level type is the server's (index.d.ts imports it)
  ['build/types/src/lib/log.d.ts', ['src/lib/log.ts']],
  ['build/openapi.json', ['openapi.yaml']],
  ['build/build-info.json', ['package.json']],
  ...['move', 'wasm', 'evm'].map((vm) => [`fixtures/demo/${vm}.sqlite`, ['sql/001-tables.sql', 'sql/002-indexes.sql']]),
];

const problems = [];
for (const [built, sources] of NEEDED) {
  const t = mtime(built);
  if (t === undefined) { problems.push(`${built} is missing`); continue; }
  for (const s of sources) {
    const ts = mtime(s);
    if (ts !== undefined && ts > t) problems.push(`${built} is older than ${s}`);
  }
}
// every compiled module must be newer than its source: a stale one would ship old behaviour
(function walk(dir) {
  for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) { walk(rel); continue; }
    if (!e.name.endsWith('.ts')) continue;
    const js = path.join('build', rel.replace(/\.ts$/, '.js'));
    const tj = mtime(js);
    if (tj === undefined) problems.push(`${js} is missing`);
    else if (tj < mtime(rel)) problems.push(`${js} is older than ${rel}`);
  }
})('src');

if (problems.length) {
  process.stderr.write(`prepack: the built tree is not ready to pack:\n${problems.slice(0, 10).map((p) => `  ${p}\n`).join('')}`
    + `${problems.length > 10 ? `  … and ${problems.length - 10} more\n` : ''}Run \`make pack\` (or \`make fixtures\`, then npm pack).\n`);
  process.exit(1);
}
