#!/usr/bin/env node
'use strict';
/**
 * Start-up artefacts of the Node-run CLI (`make build`, then `make fixtures` for the code cache):
 *
 *   node scripts/build-bundle.js               build/openapi.json (openapi.yaml as JSON, so serve
 *                                              parses no YAML) and build/bundle/indexer-api.js (esbuild
 *                                              bundle of build/src/cli.js, which bin/indexer-api runs)
 *   node scripts/build-bundle.js --code-cache  build/bundle/indexer-api.js.cache: the V8 code cache of
 *                                              that bundle, from a warm-up `serve --get` of an API route
 *                                              on fixtures/demo/wasm.sqlite (bin/run-bundle.js)
 *
 * Writing a new bundle deletes the old cache first. `bundle()` is also used by
 * scripts/build-binary.js for the single executable's bundle.
 */
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const OUT_DIR = path.join(ROOT, 'build', 'bundle');
const BUNDLE = path.join(OUT_DIR, 'indexer-api.js');
const CACHE = `${BUNDLE}.cache`;
const OPENAPI_JSON = path.join(ROOT, 'build', 'openapi.json');
/** What the code cache warm-up runs: start-up, request validation, a query, a JSON answer. */
const WARM_UP_ROUTE = '/indexer/block/v1/blocks?pagination.limit=1';
const WARM_UP_DB = path.join(ROOT, 'fixtures', 'demo', 'wasm.sqlite');

const log = (msg) => process.stderr.write(`build-bundle: ${msg}\n`);

/**
 * Textual fixes for code that finds files relative to its own __dirname, which in a bundle is the
 * bundle's directory. Each must match exactly once, or the build fails (the dependency changed).
 */
function fix(file, from, to) { return { file, from, to }; }
/** build/src/records/parse/pool.js starts its worker threads from the compiled sources. */
const WORKER_DIR_FIX = fix(/[\\/]build[\\/]src[\\/]records[\\/]parse[\\/]pool\.js$/,
  "(0, node_path_1.join)(__dirname, 'worker.js')",
  "(0, node_path_1.join)(__dirname, '..', 'src', 'records', 'parse', 'worker.js')");
/** build/src/snapshot/verify.js starts the quick check's thread from the compiled sources. */
const VERIFY_THREAD_FIX = fix(/[\\/]build[\\/]src[\\/]snapshot[\\/]verify\.js$/,
  "(0, node_path_1.join)(__dirname, 'verify-thread.js')",
  "(0, node_path_1.join)(__dirname, '..', 'src', 'snapshot', 'verify-thread.js')");
/**
 * yargs reads its translations from its locales/ directory (non-English LANG): found where Node
 * resolves yargs from the bundle at run time — in the installed package that is the project's
 * node_modules/yargs, not a path fixed at build time.
 */
const YARGS_LOCALES_FIX = fix(/[\\/]yargs[\\/]build[\\/]index\.cjs$/, 're(__dirname,"../locales")', 're(require.resolve("yargs/package.json"),"../locales")');

/**
 * Bundles build/src/cli.js (CommonJS, exports main) into `outfile`.
 * @param {{ outfile: string, external?: string[], plugins?: object[], banner?: string, fixes?: object[] }} o
 * @returns {Promise<import('esbuild').Metafile>}
 */
async function bundle({ outfile, external = [], plugins = [], banner, fixes = [] }) {
  const esbuild = require(require.resolve('esbuild', { paths: [ROOT] }));
  const applied = new Set();
  const fixPlugin = {
    name: 'dirname-fixes',
    setup(b) {
      for (const f of fixes) {
        b.onLoad({ filter: f.file }, (a) => {
          const src = fs.readFileSync(a.path, 'utf8');
          if (src.split(f.from).length !== 2) return undefined;
          applied.add(f);
          return { contents: src.replace(f.from, f.to), loader: 'js' };
        });
      }
    },
  };
  const result = await esbuild.build({
    entryPoints: [path.join(ROOT, 'build', 'src', 'cli.js')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external,
    // require() calls resolve with the "require" condition: CommonJS builds, no ESM in the bundle
    banner: banner ? { js: banner } : undefined,
    legalComments: 'eof',
    metafile: true,
    logLevel: 'silent',
    plugins: [fixPlugin, ...plugins],
  });
  for (const w of result.warnings) log(`esbuild warning: ${w.location ? `${w.location.file}:${w.location.line}: ` : ''}${w.text}`);
  for (const f of fixes) if (!applied.has(f)) throw new Error(`no single ${f.from} in ${f.file}: update the fixes in scripts/build-bundle.js`);
  return result.metafile;
}

function writeOpenApiJson() {
  const yaml = require(require.resolve('js-yaml', { paths: [ROOT] }));
  const doc = yaml.load(fs.readFileSync(path.join(ROOT, 'openapi.yaml'), 'utf8'));
  fs.writeFileSync(OPENAPI_JSON, JSON.stringify(doc) + '\n');
}

/**
 * The Node-run bundle: better-sqlite3 (finds its addon on disk from its own files) stays in
 * node_modules; pg-native is optional and absent; yargs/package.json is only resolved (its locales).
 * Shipped in the npm package (package.json "files"); its code cache is not (bin/indexer-api).
 */
async function nodeBundle() {
  fs.mkdirSync(OUT_DIR, { recursive: true });
  fs.rmSync(CACHE, { force: true });
  const tmp = `${BUNDLE}.tmp-${process.pid}`;
  await bundle({ outfile: tmp, external: ['better-sqlite3', 'pg-native', 'yargs/package.json'], fixes: [WORKER_DIR_FIX, VERIFY_THREAD_FIX, YARGS_LOCALES_FIX] });
  fs.renameSync(tmp, BUNDLE);
  log(`wrote ${path.relative(ROOT, BUNDLE)} (${(fs.statSync(BUNDLE).size / 1048576).toFixed(1)} MiB) and ${path.relative(ROOT, OPENAPI_JSON)}`);
}

/**
 * Runs `args` through `loader` (a script that calls bin/run-bundle.js) with INDEXER_CODE_CACHE_OUT
 * set; the cache is written when that process exits. Throws unless it exits 0.
 */
function warmUp(loader, args, out, env = {}) {
  const tmp = `${out}.warm-${process.pid}`;
  const r = spawnSync(process.execPath, [loader, ...args], {
    cwd: ROOT, encoding: 'utf8', timeout: 120_000,
    env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('INDEXER_'))), ...env, INDEXER_CODE_CACHE_OUT: tmp },
  });
  if (r.status !== 0 || !fs.existsSync(tmp)) {
    fs.rmSync(tmp, { force: true });
    throw new Error(`code cache warm-up failed (status ${r.status}, signal ${r.signal}): ${r.stderr}`);
  }
  fs.renameSync(tmp, out);
}

function nodeCodeCache() {
  if (!fs.existsSync(BUNDLE)) throw new Error(`${path.relative(ROOT, BUNDLE)} does not exist (run \`make build\`)`);
  if (!fs.existsSync(WARM_UP_DB)) {
    log(`no ${path.relative(ROOT, WARM_UP_DB)} (run \`make fixtures\`): no code cache, the bundle is compiled at every start`);
    return;
  }
  fs.rmSync(CACHE, { force: true });
  warmUp(path.join(ROOT, 'bin', 'indexer-api'), ['serve', '--db', WARM_UP_DB, '--get', WARM_UP_ROUTE], CACHE);
  log(`wrote ${path.relative(ROOT, CACHE)} (${(fs.statSync(CACHE).size / 1048576).toFixed(1)} MiB)`);
}

module.exports = { bundle, warmUp, WARM_UP_ROUTE, WARM_UP_DB };

if (require.main === module) {
  (async () => {
    if (process.argv.includes('--code-cache')) {
      nodeCodeCache();
    } else {
      writeOpenApiJson();
      await nodeBundle();
    }
  })().catch((e) => { log(`error: ${e.message}`); process.exit(1); });
}
