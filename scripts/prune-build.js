#!/usr/bin/env node
'use strict';
/**
 * Removes what tsc left in build/ for a source that no longer exists: tsc writes build/<path>.js
 * (and .js.map) for each src/, test/ and bench/ .ts file, and build/types/<path>.d.ts for the
 * library's types, but never deletes one when its .ts is renamed or removed. Left there, a
 * renamed test kept running in a checkout (make test finds build/test/**\/*.test.js) against the
 * stale compiled copies of the modules it imported. Run by the build/.tsc-stamp rule after tsc.
 *
 *   node scripts/prune-build.js [ROOT]     ROOT: the checkout (default: this script's parent)
 */
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(process.argv[2] || path.join(__dirname, '..'));
const build = path.join(root, 'build');
/** [folder under build/, the suffixes of what tsc writes there] */
const OUTPUTS = [['', ['.js.map', '.js']], ['types', ['.d.ts']]];

let removed = 0;
function walk(dir, visit) {
  let entries;
  try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, visit);
    else visit(p);
  }
}
for (const [sub, suffixes] of OUTPUTS) {
  for (const top of ['src', 'test', 'bench']) {
    const out = path.join(build, sub, top);
    walk(out, (file) => {
      const suffix = suffixes.find((s) => file.endsWith(s));
      if (suffix === undefined) return;
      const source = path.join(root, top, path.relative(out, file).slice(0, -suffix.length) + '.ts');
      if (fs.existsSync(source)) return;
      fs.rmSync(file, { force: true });
      removed++;
    });
  }
}
if (removed > 0) process.stderr.write(`prune-build: removed ${removed} compiled file${removed === 1 ? '' : 's'} whose source is gone\n`);
