import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ROOT } from '../helpers/serve';

/** A tree with the files prepack-check looks at, all built, each older than its output. */
function builtTree(): string {
  const dir = mkdtempSync(join(tmpdir(), 'indexer-api-prepack-'));
  const write = (rel: string, when: number): void => {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), rel.endsWith('.json') ? '{}' : 'x');
    utimesSync(join(dir, rel), when, when);
  };
  mkdirSync(join(dir, 'scripts'));
  copyFileSync(join(ROOT, 'scripts', 'prepack-check.js'), join(dir, 'scripts', 'prepack-check.js'));
  for (const f of ['src/cli.ts', 'src/index.ts', 'src/lib/x.ts', 'openapi.yaml', 'package.json', 'sql/001-tables.sql', 'sql/002-indexes.sql', 'scripts/build-bundle.js']) write(f, 1_000);
  for (const f of ['build/src/cli.js', 'build/bundle/indexer-api.js', 'build/src/index.js', 'build/src/lib/x.js', 'build/types/src/index.d.ts', 'build/types/src/lib/log.d.ts', 'build/openapi.json',
    'build/build-info.json', 'fixtures/demo/move.sqlite', 'fixtures/demo/wasm.sqlite', 'fixtures/demo/evm.sqlite']) write(f, 2_000);
  return dir;
}

const check = (dir: string): { status: number | null; stderr: string } => {
  const r = spawnSync(process.execPath, [join(dir, 'scripts', 'prepack-check.js')], { encoding: 'utf8' });
  return { status: r.status, stderr: r.stderr };
};

describe('npm pack (prepack): packs only a built, current tree', () => {
  it('passes a tree whose build outputs are newer than their sources', () => {
    const dir = builtTree();
    try {
      expect(check(dir)).to.deep.equal({ status: 0, stderr: '' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a missing demo snapshot and a module compiled before its last edit, naming both', () => {
    const dir = builtTree();
    try {
      rmSync(join(dir, 'fixtures', 'demo', 'evm.sqlite'));
      utimesSync(join(dir, 'src', 'lib', 'x.ts'), 3_000, 3_000);
      const r = check(dir);
      expect(r.status).to.equal(1);
      expect(r.stderr).to.include('fixtures/demo/evm.sqlite is missing');
      expect(r.stderr).to.include('build/src/lib/x.js is older than src/lib/x.ts');
      expect(r.stderr).to.include('Run `make pack`');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
