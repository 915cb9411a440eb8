/**
 * scripts/prune-build.js: what tsc compiled from a source that is gone is removed from build/
 * (a renamed test kept running in a checkout against stale copies of what it imported), and
 * nothing else is.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ROOT } from '../helpers/serve';

describe('scripts/prune-build.js', () => {
  it('removes the .js, .js.map and .d.ts of a removed source, keeps those of a present one and files tsc did not write', () => {
    const dir = mkdtempSync(join(tmpdir(), 'indexer-api-prune-'));
    try {
      const put = (p: string): void => { mkdirSync(dirname(join(dir, p)), { recursive: true }); writeFileSync(join(dir, p), ''); };
      for (const p of ['src/kept.ts', 'src/a/kept.ts', 'test/kept.test.ts']) put(p);
      const kept = ['build/src/kept.js', 'build/src/kept.js.map', 'build/src/a/kept.js', 'build/types/src/kept.d.ts', 'build/test/kept.test.js',
        'build/bundle/indexer-api.js', 'build/openapi.json', 'build/src/notes.txt'];
      const gone = ['build/src/gone.js', 'build/src/gone.js.map', 'build/src/a/gone.js', 'build/types/src/gone.d.ts', 'build/test/renamed.test.js', 'build/bench/old.js'];
      for (const p of [...kept, ...gone]) put(p);
      const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'prune-build.js'), dir], { encoding: 'utf8' });
      expect(r.status, r.stderr).to.equal(0);
      expect(r.stderr).to.equal('prune-build: removed 6 compiled files whose source is gone\n');
      for (const p of kept) expect(existsSync(join(dir, p)), p).to.equal(true);
      for (const p of gone) expect(existsSync(join(dir, p)), p).to.equal(false);
      // nothing more to remove: a second run says nothing
      expect(spawnSync(process.execPath, [join(ROOT, 'scripts', 'prune-build.js'), dir], { encoding: 'utf8' }).stderr).to.equal('');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
