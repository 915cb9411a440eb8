/**
 * The figures docs/ci.md prints — the tarball's size, the demo snapshots' size, the installed
 * package's size — measured and compared, and its `allowScripts` snippet checked against the
 * install scripts the package and its dependencies really have. Run on a built tree (`make
 * build`): `npm pack --dry-run` packs what package.json's `files` name, in memory.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers/serve';

const DOC = readFileSync(join(ROOT, 'docs', 'ci.md'), 'utf8').replace(/\s+/g, ' ');
/** a printed "≈ x MB" may be off by this much: it is rounded, and builds differ a little */
const TOLERANCE = 0.1;

function printed(pattern: RegExp, what: string): number {
  const m = pattern.exec(DOC);
  expect(m, `docs/ci.md states ${what}`).to.not.equal(null);
  return Number((m as RegExpExecArray)[1]) * 1e6;
}

function near(measured: number, doc: number, what: string): void {
  const off = Math.abs(measured - doc) / measured;
  expect(off, `${what}: docs/ci.md says ${(doc / 1e6).toFixed(1)} MB, measured ${(measured / 1e6).toFixed(1)} MB`).to.be.at.most(TOLERANCE);
}

describe('docs/ci.md: its figures, measured', function () {
  this.timeout(120_000);
  let pack: { size: number; unpackedSize: number; files: { path: string }[] };

  before(() => {
    // --ignore-scripts: the prepack check is test/kit/prepack.test.ts's business
    const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status, r.stderr).to.equal(0);
    pack = (JSON.parse(r.stdout) as typeof pack[])[0];
    expect(pack.files.map((f) => f.path), 'a built tree (make build)').to.include('build/bundle/indexer-api.js');
  });

  it('the tarball', () => {
    near(pack.size, printed(/The tarball \(≈ ([\d.]+) MB\)/, 'the tarball size'), 'tarball');
  });

  it('the three demo snapshots together', () => {
    const dir = join(ROOT, 'fixtures', 'demo');
    const files = readdirSync(dir).filter((f) => f.endsWith('.sqlite'));
    expect(files).to.have.length(3);
    const packed = pack.files.filter((f) => /^fixtures\/demo\/[^/]+\.sqlite$/.test(f.path)).length;
    expect(packed, 'the tarball holds them').to.equal(3);
    near(files.reduce((n, f) => n + statSync(join(dir, f)).size, 0), printed(/sqlite`, ≈ ([\d.]+) MB together\)/, 'the snapshots\' size'), 'demo snapshots');
  });

  it('the installed package (its files, unpacked)', () => {
    near(pack.unpackedSize, printed(/Installed, the package itself takes ≈ ([\d.]+) MB/, 'the installed size'), 'installed package');
  });

  it('allowScripts names every package of the install that has an install script, this one included', () => {
    const snippet = JSON.parse(/"allowScripts": (\{[^}]*\})/.exec(DOC)?.[1] ?? 'null') as Record<string, boolean> | null;
    expect(snippet, 'docs/ci.md prints an allowScripts object').to.be.an('object');
    const hasInstallScript = (dir: string): { name: string; yes: boolean } => {
      const p = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string; scripts?: Record<string, string>; gypfile?: boolean };
      const s = p.scripts ?? {};
      return { name: p.name, yes: Boolean(s.preinstall || s.install || s.postinstall || p.gypfile) };
    };
    const own = hasInstallScript(ROOT);
    expect(own.yes, 'package.json has a postinstall').to.equal(true);
    expect(snippet).to.have.property(own.name, true);
    const deps = Object.keys((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies);
    for (const dep of deps) {
      const d = hasInstallScript(join(ROOT, 'node_modules', dep));
      if (d.yes) expect(snippet, `${dep} has an install script`).to.have.property(dep);
    }
  });
});
