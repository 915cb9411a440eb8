#!/usr/bin/env node
'use strict';
/**
 * `make binary`: builds dist/indexer-api, one self-contained executable (Node.js single executable
 * application, https://nodejs.org/api/single-executable-applications.html), offline, from the
 * Node.js that runs this script.
 *
 *   1. bundle build/src/cli.js (compiled by `make build`) with esbuild into one CommonJS file;
 *   2. write sea-config.json (main = the bundle, assets = every file the program reads at run time,
 *      under the relative names src/assets.ts and src/sqlite.ts ask for);
 *   3. `node --experimental-sea-config` turns it into a blob;
 *   4. copy process.execPath and inject the blob with postject;
 *   5. smoke-test the result (`--version`, and a query through the embedded addon) with a PATH
 *      without node, then rename it to dist/indexer-api.
 *
 * Options: --no-code-cache (do not try useCodeCache), --keep (keep dist/.sea-build/blob).
 * Intermediate files go to dist/.sea-build/ (bundle, sea-config.json, esbuild metafile).
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
const BLOB = path.join(WORK, 'sea-prep.blob');
const SEA_CONFIG = path.join(WORK, 'sea-config.json');
const SENTINEL_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

/** SEA asset key → file. Keys are the relative paths src/assets.ts (readTextAsset/readBinaryAsset) and
 *  src/sqlite.ts (NATIVE_ADDON_ASSET) ask for; the demo keys are src/demo.ts demoAsset(vm). */
const ASSETS = {
  'sql/001-tables.sql': 'sql/001-tables.sql',
  'sql/002-indexes.sql': 'sql/002-indexes.sql',
  'openapi.yaml': 'openapi.yaml',
  'build/build-info.json': 'build/build-info.json',
  'fixtures/demo/move.sqlite': 'fixtures/demo/move.sqlite',
  'fixtures/demo/wasm.sqlite': 'fixtures/demo/wasm.sqlite',
  'fixtures/demo/evm.sqlite': 'fixtures/demo/evm.sqlite',
  'node_modules/swagger-ui-dist/swagger-ui.css': 'node_modules/swagger-ui-dist/swagger-ui.css',
  'node_modules/swagger-ui-dist/swagger-ui-bundle.js': 'node_modules/swagger-ui-dist/swagger-ui-bundle.js',
  'native/better_sqlite3.node': 'node_modules/better-sqlite3/build/Release/better_sqlite3.node',
};

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
  const missing = ['build/src/cli.js', ...Object.values(ASSETS)].filter((f) => !fs.existsSync(path.join(ROOT, f)));
  if (missing.length) die(`missing input(s): ${missing.join(', ')} — run \`make build fixtures\` first`);
  for (const tool of ['esbuild', 'postject']) {
    try { require.resolve(tool, { paths: [ROOT] }); } catch { die(`${tool} is not installed in node_modules (run \`make deps\`)`); }
  }
}

/** Loaded in place of the `bindings` package: better-sqlite3 only calls it when no nativeBinding is
 *  given, which src/sqlite.ts always passes inside the executable. */
const BINDINGS_STUB = `module.exports = function bindings(name) {
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

/** Entry point: the same as bin/indexer-api. */
const ENTRY = `'use strict';
require('./build/src/cli.js').main(process.argv).catch((e) => {
  process.stderr.write(\`indexer-api: \${e.message}\\n\`);
  process.exit(1);
});
`;

/**
 * In an SEA, the main script's require() only loads built-in modules. better-sqlite3 loads a
 * nativeBinding given as a path with `__non_webpack_require__` when that is a function (its hook for
 * bundlers), so give it a full require rooted at the executable.
 */
const BANNER = `var __non_webpack_require__ = require('node:module').createRequire(process.execPath);`;

async function bundle() {
  const esbuild = require(require.resolve('esbuild', { paths: [ROOT] }));
  const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
  const result = await esbuild.build({
    stdin: { contents: ENTRY, resolveDir: ROOT, sourcefile: 'sea-entry.js', loader: 'js' },
    outfile: BUNDLE,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    // require() calls resolve with the "require" condition: yargs, cliui, escalade & co. get their
    // CommonJS builds (no ESM / top-level await in the bundle)
    banner: { js: BANNER },
    legalComments: 'eof',
    metafile: true,
    logLevel: 'silent',
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
  for (const w of result.warnings) {
    const loc = w.location ? `${w.location.file}:${w.location.line}: ` : '';
    log(`esbuild warning: ${loc}${w.text}`);
  }
  // Anything left external would be looked up at run time by the SEA's builtin-only require().
  const external = new Set();
  for (const input of Object.values(result.metafile.inputs)) {
    for (const imp of input.imports) if (imp.external && !builtins.has(imp.path) && !imp.path.startsWith('node:')) external.add(imp.path);
  }
  if (external.size) {
    die(`the bundle would require non-builtin module(s) at run time, which a single executable cannot load: ${[...external].join(', ')}\n`
      + '  (install them so they are bundled, or — if a dependency only requires them optionally, inside try/catch — add them to OPTIONAL_MODULES in scripts/build-binary.js)');
  }
  fs.writeFileSync(path.join(WORK, 'meta.json'), JSON.stringify(result.metafile));
  const inputs = Object.keys(result.metafile.inputs).length;
  log(`bundled ${inputs} modules into ${path.relative(ROOT, BUNDLE)} (${mib(fs.statSync(BUNDLE).size)})`);
}

function writeSeaConfig(useCodeCache) {
  const assets = {};
  for (const [key, file] of Object.entries(ASSETS)) assets[key] = path.join(ROOT, file);
  const config = { main: BUNDLE, output: BLOB, disableExperimentalSEAWarning: true, useSnapshot: false, useCodeCache, assets };
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
  await bundle();
  // useCodeCache (V8 code cache of the bundle, in the blob) shortens start-up; it is tied to this
  // exact Node.js/V8 and its flags, so if the result does not pass the smoke test, build without it
  let problem;
  if (!args.has('--no-code-cache')) {
    problem = await makeExecutable(true);
    if (problem) log(`useCodeCache: true did not work (${problem}); retrying with useCodeCache: false`);
  }
  if (problem || args.has('--no-code-cache')) {
    problem = await makeExecutable(false);
    if (problem) die(problem);
  }
  const size = fs.statSync(OUT).size;
  let commit = 'unknown';
  try { commit = JSON.parse(fs.readFileSync(path.join(ROOT, 'build/build-info.json'), 'utf8')).commit; } catch { /* reported by preflight */ }
  log(`wrote ${path.relative(ROOT, OUT)} (${mib(size)}, ${size} bytes; Node.js ${process.version} ${process.platform}-${process.arch}, commit ${commit})`);
}

main().catch((e) => die(e.stack || String(e)));
