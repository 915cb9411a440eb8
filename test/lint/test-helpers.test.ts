/**
 * Test helpers (the .ts files of test/ that are not *.test.ts) register no mocha hook or suite
 * when they load (docs/testing.md, "What tests may share"): under `make test --parallel` a worker
 * loads a helper once for all the files it runs, so a hook registered at load hangs on the first
 * of them only. A helper's clean-up goes through atRunEnd() (test/support/run-end.ts).
 */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..', '..'); // compiled into build/test/lint/

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

/** A mocha hook or suite called at the top level of a module (column 0), or guarded by `typeof after`. */
const AT_LOAD = /^(?:(?:after|before|afterEach|beforeEach|describe|it)\s*\(|if \(typeof (?:after|before)\b)/m;

/** The helpers whose top-level lines call mocha, as `file:line: text`. */
function hooksAtLoad(root: string): string[] {
  const out: string[] = [];
  for (const f of files(join(root, 'test')).filter((f) => !f.endsWith('.test.ts'))) {
    readFileSync(f, 'utf8').split('\n').forEach((line, i) => {
      if (AT_LOAD.test(line)) out.push(`${relative(root, f)}:${i + 1}: ${line.trim()}`);
    });
  }
  return out;
}

describe('test helpers', () => {
  it('register no mocha hook or suite when they load (atRunEnd instead; docs/testing.md)', () => {
    expect(hooksAtLoad(ROOT)).to.deep.equal([]);
  });
});
