'use strict';
/**
 * Runs a CommonJS bundle (scripts/build-bundle.js) compiled with a V8 code cache, so that start-up
 * neither resolves ~600 modules nor compiles them: used by bin/indexer-api and, bundled into its
 * main script, by the single executable (scripts/build-binary.js). Built-in modules only.
 *
 * The cache is made by running the bundle once with INDEXER_CODE_CACHE_OUT=<file> (a warm-up
 * `serve --get` of an API route, scripts/build-bundle.js): at exit, script.createCachedData()
 * holds the bytecode of every function compiled so far — module bodies and the first request's
 * path, not only the top level. V8 checks the cache against its own version and flags and the
 * source length and rejects a mismatch (the script is then compiled as usual); the caller makes
 * sure a cache is never paired with another bundle of the same length. With
 * INDEXER_CODE_CACHE_CHECK=1, whether the cache was accepted is printed on stderr.
 */
const fs = require('node:fs');
const vm = require('node:vm');

/**
 * @param {{ source: string, filename: string, dirname: string, cachedData?: Buffer, require: NodeRequire }} o
 * @returns {Record<string, unknown>} the bundle's module.exports
 */
function runBundle({ source, filename, dirname, cachedData, require: req }) {
  const wrapped = `(function (exports, require, module, __filename, __dirname) {${source}\n})`;
  const script = new vm.Script(wrapped, { filename, cachedData });
  if (process.env.INDEXER_CODE_CACHE_CHECK) {
    process.stderr.write(`indexer-api: code cache ${!cachedData ? 'absent' : script.cachedDataRejected ? 'rejected' : 'accepted'}\n`);
  }
  const out = process.env.INDEXER_CODE_CACHE_OUT;
  if (out) {
    delete process.env.INDEXER_CODE_CACHE_OUT; // not inherited by cluster workers
    process.once('exit', () => {
      const tmp = `${out}.tmp-${process.pid}`;
      fs.writeFileSync(tmp, script.createCachedData());
      fs.renameSync(tmp, out);
    });
  }
  const module = { exports: {}, filename, id: filename, loaded: false };
  script.runInThisContext()(module.exports, req, module, filename, dirname);
  module.loaded = true;
  return module.exports;
}

module.exports = { runBundle };
