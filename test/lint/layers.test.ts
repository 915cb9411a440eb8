/**
 * The layer rules of `make lint` (.dependency-cruiser.js, docs/architecture.md#layers) refuse
 * what they say they refuse: forbidden imports planted in a copy of src/ make the same
 * dependency-cruiser command `make lint` runs fail, naming each one.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { appendFileSync, copyFileSync, cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..', '..'); // compiled into build/test/lint/

/** `make lint`'s layer check (Makefile: depcruise --config .dependency-cruiser.js src), run in `dir`. */
function layerCheck(dir: string): { status: number | null; output: string } {
  const r = spawnSync(join(ROOT, 'node_modules', '.bin', 'depcruise'), ['--config', '.dependency-cruiser.js', 'src'], { cwd: dir, encoding: 'utf8' });
  return { status: r.status, output: r.stdout + r.stderr };
}

describe('layer rules (make lint): forbidden imports planted in a copy of src/', function () {
  this.timeout(180_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'indexer-api-layers-'));
    cpSync(join(ROOT, 'src'), join(dir, 'src'), { recursive: true });
    for (const f of ['.dependency-cruiser.js', 'tsconfig.json']) copyFileSync(join(ROOT, f), join(dir, f));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('fails on a route importing records/ (a lower layer it must not use), on snapshot/ importing serve/ (a higher rank) and on follow/ importing import/ (its sibling: import orchestration)', () => {
    appendFileSync(join(dir, 'src', 'routes', 'block', 'routes.ts'), "\nexport { loadRecords as PlantedLoader } from '../../records/from-dump';\n");
    writeFileSync(join(dir, 'src', 'snapshot', 'planted.ts'), "export type { ServeStack } from '../serve/assembly';\n");
    writeFileSync(join(dir, 'src', 'follow', 'planted.ts'), "export { cutSource } from '../import/cut/filter';\n");
    const r = layerCheck(dir);
    expect(r.status, r.output).to.not.equal(0);
    expect(r.output).to.match(/layer-routes: src\/routes\/block\/routes\.ts → src\/records\/from-dump\.ts/);
    expect(r.output).to.match(/layer-follow: src\/follow\/planted\.ts → src\/import\/cut\/filter\.ts/);
    expect(r.output).to.match(/layer-snapshot: src\/snapshot\/planted\.ts → src\/serve\/assembly\.ts/);
  });

  it('fails on http/ importing the response cache (src/cache/, a higher rank) and on snapshot/ importing its store, while the tag vocabulary (src/snapshot/tags.ts) is the snapshot\'s own', () => {
    writeFileSync(join(dir, 'src', 'http', 'planted-cache.ts'), "export { cachedFront } from '../cache/front';\n");
    writeFileSync(join(dir, 'src', 'snapshot', 'planted-cache.ts'), "export type { ResponseCache } from '../cache/store';\nexport { TIP } from './tags';\n");
    const r = layerCheck(dir);
    expect(r.status, r.output).to.not.equal(0);
    expect(r.output).to.match(/layer-http: src\/http\/planted-cache\.ts → src\/cache\/front\.ts/);
    expect(r.output).to.match(/layer-snapshot: src\/snapshot\/planted-cache\.ts → src\/cache\/store\.ts/);
    expect(r.output).to.not.match(/src\/snapshot\/planted-cache\.ts → src\/snapshot\/tags\.ts/);
  });
});
