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
 *
 * `cacheOut` (bin/indexer-api, the installed package): when no cache was given or V8 rejected it,
 * the cache is written there at exit, unless a file at least as large is there by then (a cluster's
 * workers, which compile the HTTP stack, make a fuller cache than their primary). With
 * `cacheOut.refresh` (a `serve`) an accepted cache is replaced too when the run's is over 10 %
 * larger: a first run of `--version` caches little of what a server runs. Best effort: any error
 * writing it is ignored.
 */
const fs = require('node:fs');
const vm = require('node:vm');

/**
 * @param {{ source: string, filename: string, dirname: string, cachedData?: Buffer,
 *   cacheOut?: { file: string, refresh?: boolean, prune?: () => void }, require: NodeRequire }} o
 * @returns {Record<string, unknown>} the bundle's module.exports
 */
function runBundle({ source, filename, dirname, cachedData, cacheOut, require: req }) {
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
  const missing = !cachedData || script.cachedDataRejected;
  if (cacheOut && !out && (missing || cacheOut.refresh)) {
    process.once('exit', () => {
      try {
        const data = script.createCachedData();
        if (!missing && data.length <= cachedData.length * 1.1) return;
        let there = 0;
        try { there = fs.statSync(cacheOut.file).size; } catch { /* none yet */ }
        if (there >= data.length) return;
        // V8 runs the bytecode in a cache it accepts: private to the user, like src/assets.ts' files
        fs.mkdirSync(require('node:path').dirname(cacheOut.file), { recursive: true, mode: 0o700 });
        const tmp = `${cacheOut.file}.tmp-${process.pid}`;
        try {
          fs.writeFileSync(tmp, data, { mode: 0o600 });
          fs.renameSync(tmp, cacheOut.file);
        } finally {
          fs.rmSync(tmp, { force: true });
        }
        if (cacheOut.prune) cacheOut.prune();
      } catch { /* an unwritable cache directory: the next run compiles again */ }
    });
  }
  const module = { exports: {}, filename, id: filename, loaded: false };
  script.runInThisContext()(module.exports, req, module, filename, dirname);
  module.loaded = true;
  return module.exports;
}

module.exports = { runBundle };
