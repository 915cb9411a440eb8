#!/usr/bin/env node
'use strict';
/**
 * `make binary`: builds dist/indexer-api, one self-contained executable (Node.js single executable
 * application, https://nodejs.org/api/single-executable-applications.html), offline, from the
 * Node.js that runs this script.
 *
 *   1. bundle build/src/cli.js (compiled by `make build`) with esbuild into one CommonJS file, and
 *      make its V8 code cache: run that bundle once under this Node.js (a warm-up `serve --get` of an
 *      API route, bin/run-bundle.js) and keep script.createCachedData() — module bodies and the
 *      first request's functions, not only the top level that `useCodeCache` covers;
 *   2. write sea-config.json (main = a small loader that runs the bundle, an asset, with its code
 *      cache, an asset too; assets = every file the program reads at run time, under the relative
 *      names src/assets.ts and src/sqlite.ts ask for);
 *   3. `node --experimental-sea-config` turns it into a blob;
 *   4. copy process.execPath and inject the blob with postject;
 *   5. smoke-test the result (`--version`, a query through the embedded addon, the code cache
 *      accepted) with a PATH without node, then rename it to dist/indexer-api.
 *
 * Options: --no-code-cache (neither useCodeCache nor the bundle's code cache), --keep (keep
 * dist/.sea-build/blob). Intermediate files go to dist/.sea-build/ (bundle, its code cache, the
 * loader, sea-config.json, esbuild metafile).
 */
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { builtinModules } = require('node:module');

const ROOT = path.resolve(__dirname, '..');
const DIST = path.join(ROOT, 'dist');
const WORK = path.join(DIST, '.sea-build');
const OUT = path.join(DIST, 'indexer-api');
const BUNDLE = path.join(WORK, 'indexer-api.cjs');
const BUNDLE_CACHE = `${BUNDLE}.cache`;
const MAIN = path.join(WORK, 'sea-main.cjs');
const WARM_UP = path.join(WORK, 'warm-up.cjs');
const ADDON = 'node_modules/better-sqlite3/build/Release/better_sqlite3.node';
const { bundle: esbuildBundle, warmUp, WARM_UP_ROUTE, WARM_UP_DB } = require('./build-bundle');
const BLOB = path.join(WORK, 'sea-prep.blob');
const SEA_CONFIG = path.join(WORK, 'sea-config.json');
const SENTINEL_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

/** SEA asset key → file. Keys are the relative paths src/assets.ts (readTextAsset/readBinaryAsset) and
 *  src/sqlite.ts (NATIVE_ADDON_ASSET) ask for; the demo keys are src/serve/demo.ts demoAsset(vm). */
const ASSETS = {
  'sql/001-tables.sql': 'sql/001-tables.sql',
  'sql/002-indexes.sql': 'sql/002-indexes.sql',
  'build/openapi.json': 'build/openapi.json',
  'build/build-info.json': 'build/build-info.json',
  'fixtures/demo/move.sqlite': 'fixtures/demo/move.sqlite',
  'fixtures/demo/wasm.sqlite': 'fixtures/demo/wasm.sqlite',
  'fixtures/demo/evm.sqlite': 'fixtures/demo/evm.sqlite',
  'node_modules/swagger-ui-dist/swagger-ui.css': 'node_modules/swagger-ui-dist/swagger-ui.css',
  'node_modules/swagger-ui-dist/swagger-ui-bundle.js': 'node_modules/swagger-ui-dist/swagger-ui-bundle.js',
  // the built-in explorer (src/explorer/router.ts reads them from src/explorer/assets/)
  'src/explorer/assets/index.html': 'src/explorer/assets/index.html',
  'src/explorer/assets/explorer.js': 'src/explorer/assets/explorer.js',
  'src/explorer/assets/explorer.css': 'src/explorer/assets/explorer.css',
  'native/better_sqlite3.node': ADDON,
};
/** The bundle and its code cache, read by the loader (MAIN_SOURCE). */
const BUNDLE_ASSET = 'bundle/indexer-api.cjs';
const BUNDLE_CACHE_ASSET = 'bundle/indexer-api.cjs.cache';

const args = new Set(process.argv.slice(2));
const log = (msg) => process.stderr.write(`build-binary: ${msg}\n`);
function die(msg) { log(`error: ${msg}`); process.exit(1); }
const mib = (n) => `${(n / 1048576).toFixed(1)} MiB`;

function preflight() {
  if (process.platform !== 'linux') die(`only Linux is supported (this is ${process.platform})`);
  const [maj, min] = process.versions.node.split('.').map(Number);
  // sea.getAsset()/isSea() exist from 20.12 / 21.7
  if (maj < 20 || (maj === 20 && min < 12) || (maj === 21 && min < 7)) die(`Node.js >= 20.12 is required for SEA assets (this is ${process.version})`);
  const nodeBytes = fs.readFileSync(process.execPath);
  if (nodeBytes.indexOf(`${SENTINEL_FUSE}:0`) < 0) {
    die(`${process.execPath} has no single-executable fuse (${SENTINEL_FUSE}:0): it is not an SEA-capable Node.js build, or it is already an SEA`);
  }
  const missing = ['build/src/cli.js', WARM_UP_DB, ...Object.values(ASSETS)].map((f) => path.relative(ROOT, path.resolve(ROOT, f))).filter((f) => !fs.existsSync(path.join(ROOT, f)));
  if (missing.length) die(`missing input(s): ${missing.join(', ')} — run \`make build fixtures\` first`);
  for (const tool of ['esbuild', 'postject']) {
    try { require.resolve(tool, { paths: [ROOT] }); } catch { die(`${tool} is not installed in node_modules (run \`make deps\`)`); }
  }
}

/** Loaded in place of the `bindings` package: better-sqlite3 only calls it when no nativeBinding is
 *  given, which src/sqlite.ts always passes inside the executable. Outside it — only the code cache
 *  warm-up runs the bundle there — INDEXER_SEA_WARM_UP_ADDON names the addon to load. */
const BINDINGS_STUB = `module.exports = function bindings(name) {
  if (process.env.INDEXER_SEA_WARM_UP_ADDON && !require('node:sea').isSea()) return __non_webpack_require__(process.env.INDEXER_SEA_WARM_UP_ADDON);
  throw new Error('indexer-api: ' + name + ' must be loaded with the nativeBinding option inside the single executable');
};`;

/**
 * Optional packages that dependencies `require` inside try/catch and that are not installed:
 * they become a module that throws MODULE_NOT_FOUND, exactly what Node.js does without them (the
 * single executable's own require() would throw ERR_UNKNOWN_BUILTIN_MODULE instead, which e.g.
 * pg's `native` getter does not expect). Any other unresolved module fails the build.
 */
const OPTIONAL_MODULES = {
  'pg-native': 'pg: the optional libpq client (pg.native), not used',
};
const missingModuleStub = (name) => `const e = new Error("Cannot find module '${name}' (not included in the single executable)");
e.code = 'MODULE_NOT_FOUND';
throw e;`;

/**
 * The executable's main script (bundled with bin/run-bundle.js, built-ins only): runs the bundle
 * asset with its code cache, then main(process.argv) as bin/indexer-api does. `require` inside the
 * bundle is rooted at the executable (built-ins, and the addon by its path).
 */
const MAIN_SOURCE = `'use strict';
const sea = require('node:sea');
const path = require('node:path');
const { createRequire } = require('node:module');
const { runBundle } = require('./bin/run-bundle.js');
let cachedData;
try { cachedData = Buffer.from(sea.getAsset(${JSON.stringify(BUNDLE_CACHE_ASSET)})); } catch { /* built with --no-code-cache */ }
const filename = path.join(path.dirname(process.execPath), 'indexer-api.cjs');
runBundle({
  source: sea.getAsset(${JSON.stringify(BUNDLE_ASSET)}, 'utf8'), filename, dirname: path.dirname(filename), cachedData,
  require: createRequire(process.execPath),
}).main(process.argv).catch((e) => {
  process.stderr.write(\`indexer-api: \${e.message}\\n\`);
  process.exit(1);
});
`;

/**
 * Runs the bundle under this Node.js for the code cache warm-up: assets from the repository (the
 * bundle's src/assets.ts ROOT is two levels above the __dirname given), the addon from node_modules.
 */
const WARM_UP_SOURCE = `'use strict';
const fs = require('node:fs');
const { createRequire } = require('node:module');
const { runBundle } = require(${JSON.stringify(path.join(ROOT, 'bin', 'run-bundle.js'))});
runBundle({
  source: fs.readFileSync(${JSON.stringify(BUNDLE)}, 'utf8'), filename: ${JSON.stringify(BUNDLE)},
  dirname: ${JSON.stringify(path.join(ROOT, 'build', 'src'))}, require: createRequire(${JSON.stringify(BUNDLE)}),
}).main(process.argv).catch((e) => { process.stderr.write('indexer-api: ' + e.message + '\\n'); process.exit(1); });
`;

/**
 * In an SEA, the main script's require() only loads built-in modules. better-sqlite3 loads a
 * nativeBinding given as a path with `__non_webpack_require__` when that is a function (its hook for
 * bundlers), so give it a full require rooted at the executable.
 */
const BANNER = `var __non_webpack_require__ = require('node:module').createRequire(process.execPath);`;

async function bundle(codeCache) {
  const esbuild = require(require.resolve('esbuild', { paths: [ROOT] }));
  const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
  const metafile = await esbuildBundle({
    outfile: BUNDLE,
    banner: BANNER,
    plugins: [{
      name: 'sea-stubs',
      setup(b) {
        b.onResolve({ filter: /^bindings$/ }, () => ({ path: 'bindings', namespace: 'sea-stub' }));
        const optional = new RegExp(`^(${Object.keys(OPTIONAL_MODULES).map((m) => m.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})$`);
        b.onResolve({ filter: optional }, (a) => ({ path: a.path, namespace: 'sea-stub' }));
        b.onLoad({ filter: /.*/, namespace: 'sea-stub' }, (a) => ({
          contents: a.path === 'bindings' ? BINDINGS_STUB : missingModuleStub(a.path), loader: 'js',
        }));
      },
    }],
  });
  // Anything left external would be looked up at run time by the SEA's builtin-only require().
  const external = new Set();
  for (const input of Object.values(metafile.inputs)) {
    for (const imp of input.imports) if (imp.external && !builtins.has(imp.path) && !imp.path.startsWith('node:')) external.add(imp.path);
  }
  if (external.size) {
    die(`the bundle would require non-builtin module(s) at run time, which a single executable cannot load: ${[...external].join(', ')}\n`
      + '  (install them so they are bundled, or — if a dependency only requires them optionally, inside try/catch — add them to OPTIONAL_MODULES in scripts/build-binary.js)');
  }
  fs.writeFileSync(path.join(WORK, 'meta.json'), JSON.stringify(metafile));
  log(`bundled ${Object.keys(metafile.inputs).length} modules into ${path.relative(ROOT, BUNDLE)} (${mib(fs.statSync(BUNDLE).size)})`);

  // the loader: MAIN_SOURCE with bin/run-bundle.js inlined
  await esbuild.build({
    stdin: { contents: MAIN_SOURCE, resolveDir: ROOT, sourcefile: 'sea-main.js', loader: 'js' },
    outfile: MAIN, bundle: true, platform: 'node', format: 'cjs', target: 'node20', logLevel: 'silent',
  });

  fs.rmSync(BUNDLE_CACHE, { force: true });
  if (!codeCache) return;
  fs.writeFileSync(WARM_UP, WARM_UP_SOURCE);
  warmUp(WARM_UP, ['serve', '--db', WARM_UP_DB, '--get', WARM_UP_ROUTE], BUNDLE_CACHE, { INDEXER_SEA_WARM_UP_ADDON: path.join(ROOT, ADDON) });
  log(`code cache of the bundle: ${mib(fs.statSync(BUNDLE_CACHE).size)}`);
}

function writeSeaConfig(useCodeCache) {
  const assets = {};
  for (const [key, file] of Object.entries(ASSETS)) assets[key] = path.join(ROOT, file);
  assets[BUNDLE_ASSET] = BUNDLE;
  if (fs.existsSync(BUNDLE_CACHE)) assets[BUNDLE_CACHE_ASSET] = BUNDLE_CACHE;
  const config = { main: MAIN, output: BLOB, disableExperimentalSEAWarning: true, useSnapshot: false, useCodeCache, assets };
  fs.writeFileSync(SEA_CONFIG, JSON.stringify(config, null, 2) + '\n');
}

/** An environment with no node on PATH and a throw-away cache, for the smoke test. */
function scrubbedEnv(tmp) {
  const dirs = ['/usr/bin', '/bin'].filter((d) => !fs.existsSync(path.join(d, 'node')));
  return { PATH: dirs.join(':') || path.join(tmp, 'empty-bin'), HOME: tmp, XDG_CACHE_HOME: path.join(tmp, 'cache'), LANG: 'C' };
}

/** Runs the candidate outside the repository; returns an error message or undefined. */
function smokeTest(exe) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'indexer-api-smoke-'));
  try {
    const copy = path.join(tmp, 'indexer-api');
    fs.copyFileSync(exe, copy);
    fs.chmodSync(copy, 0o755);
    const env = scrubbedEnv(tmp);
    const info = JSON.parse(fs.readFileSync(path.join(ROOT, 'build/build-info.json'), 'utf8'));
    const v = spawnSync(copy, ['--version'], { cwd: tmp, env, encoding: 'utf8', timeout: 60_000 });
    const want = `${info.version} (commit ${info.commit})`;
    if (v.status !== 0 || v.stdout.trim() !== want) return `--version: status ${v.status} signal ${v.signal}, stdout ${JSON.stringify(v.stdout)}, stderr ${JSON.stringify(v.stderr)} (want ${JSON.stringify(want)})`;
    const s = spawnSync(copy, ['serve', '--demo', 'wasm', '--get', '/status'], { cwd: tmp, env, encoding: 'utf8', timeout: 60_000 });
    if (s.status !== 0) return `serve --get /status: status ${s.status} signal ${s.signal}, stderr ${JSON.stringify(s.stderr.slice(0, 2000))}`;
    if (fs.existsSync(BUNDLE_CACHE)) {
      const c = spawnSync(copy, ['--version'], { cwd: tmp, env: { ...env, INDEXER_CODE_CACHE_CHECK: '1' }, encoding: 'utf8', timeout: 60_000 });
      if (!/code cache accepted/.test(c.stderr)) return `the bundle's code cache is not used: ${JSON.stringify(c.stderr)}`;
    }
    return undefined;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

async function makeExecutable(useCodeCache) {
  writeSeaConfig(useCodeCache);
  fs.rmSync(BLOB, { force: true });
  const gen = spawnSync(process.execPath, ['--experimental-sea-config', SEA_CONFIG], { cwd: WORK, encoding: 'utf8' });
  if (gen.status !== 0) return `node --experimental-sea-config failed (${gen.status}): ${gen.stderr || gen.stdout}`;
  const blob = fs.readFileSync(BLOB);
  log(`SEA blob ${mib(blob.length)} (useCodeCache: ${useCodeCache})`);

  const tmpExe = `${OUT}.tmp-${process.pid}`;
  fs.rmSync(tmpExe, { force: true });
  fs.copyFileSync(process.execPath, tmpExe);
  fs.chmodSync(tmpExe, 0o755);
  const { inject } = require(require.resolve('postject', { paths: [ROOT] }));
  // postject (LIEF compiled to wasm) prints progress and, for Node's ELF with many notes, harmless
  // "Can't find string offset for section name '.note.100'" lines; the smoke test below is the judge
  const { stdout, stderr } = process;
  const out = stdout.write, err = stderr.write;
  let chatter = '';
  stdout.write = stderr.write = (chunk) => { chatter += String(chunk); return true; };
  try {
    await inject(tmpExe, 'NODE_SEA_BLOB', blob, { sentinelFuse: SENTINEL_FUSE });
  } catch (e) {
    fs.rmSync(tmpExe, { force: true });
    return `postject failed: ${e.message}\n${chatter}`;
  } finally {
    stdout.write = out;
    stderr.write = err;
  }
  const problem = smokeTest(tmpExe);
  if (problem) { fs.rmSync(tmpExe, { force: true }); return problem; }
  fs.renameSync(tmpExe, OUT); // atomic: a running test never sees a half-written binary
  if (!args.has('--keep')) fs.rmSync(BLOB, { force: true });
  return undefined;
}

async function main() {
  preflight();
  fs.mkdirSync(WORK, { recursive: true });
  // The code caches (useCodeCache for the loader, the bundle's own) shorten start-up; they are tied
  // to this exact Node.js/V8 and its flags, so if the result does not pass the smoke test, build
  // without them.
  let problem;
  if (!args.has('--no-code-cache')) {
    await bundle(true);
    problem = await makeExecutable(true);
    if (problem) log(`the code caches did not work (${problem}); retrying without`);
  }
  if (problem || args.has('--no-code-cache')) {
    await bundle(false);
    problem = await makeExecutable(false);
    if (problem) die(problem);
  }
  const size = fs.statSync(OUT).size;
  let commit = 'unknown';
  try { commit = JSON.parse(fs.readFileSync(path.join(ROOT, 'build/build-info.json'), 'utf8')).commit; } catch { /* reported by preflight */ }
  log(`wrote ${path.relative(ROOT, OUT)} (${mib(size)}, ${size} bytes; Node.js ${process.version} ${process.platform}-${process.arch}, commit ${commit})`);
}

main().catch((e) => die(e.stack || String(e)));
