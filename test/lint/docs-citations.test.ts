import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { brokenCitations, headingSlugs, missingSourcePaths } from './citations';

const ROOT = resolve(__dirname, '..', '..', '..'); // compiled into build/test/lint/

describe('citations of docs/ in the source', () => {
  it('every docs/<file>.md#<heading> cited in src/ names a heading that exists', () => {
    expect(brokenCitations(ROOT, ['src'])).to.deep.equal([]);
  });

  describe('the check itself', () => {
    let dir: string;
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'citations-'));
      mkdirSync(join(dir, 'docs'));
      mkdirSync(join(dir, 'src'));
      writeFileSync(join(dir, 'docs', 'contract.md'), '# Contract\n\n## Next key\n\n```\n# not a heading\n```\n');
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('accepts a citation of an existing heading and of a whole document', () => {
      writeFileSync(join(dir, 'src', 'a.ts'), '// see docs/contract.md#next-key and docs/contract.md\n');
      expect(brokenCitations(dir, ['src'])).to.deep.equal([]);
    });

    it('reports a missing heading, a missing document and a document outside the repository', () => {
      writeFileSync(join(dir, 'src', 'a.ts'), [
        '// docs/contract.md#not-a-heading',
        '// docs/gone.md#x',
        '/** rollytics does this (reference §4.2) */',
      ].join('\n'));
      expect(brokenCitations(dir, ['src'])).to.deep.equal([
        'src/a.ts:1: docs/contract.md#not-a-heading: no heading #not-a-heading in docs/contract.md',
        'src/a.ts:2: docs/gone.md#x: docs/gone.md does not exist',
        'src/a.ts:3: cites "reference §4.2", a document outside the repository',
      ]);
    });
  });

  it('turns headings into GitHub anchors', () => {
    expect([...headingSlugs('# API contract\n## Accepted keys\n### `previous_key`, again\n## Accepted keys\n')])
      .to.deep.equal(['api-contract', 'accepted-keys', 'previous_key-again', 'accepted-keys-1']);
  });
});

describe('source paths cited in docs/architecture.md', () => {
  it('every src/ file and folder it names exists', () => {
    expect(missingSourcePaths(ROOT, 'docs/architecture.md')).to.deep.equal([]);
  });

  it('reports a path that does not exist, and skips patterns', () => {
    const dir = mkdtempSync(join(tmpdir(), 'citations-'));
    try {
      mkdirSync(join(dir, 'docs'));
      mkdirSync(join(dir, 'src', 'serve'), { recursive: true });
      writeFileSync(join(dir, 'src', 'serve', 'app.ts'), '');
      writeFileSync(join(dir, 'docs', 'a.md'), '`src/serve/app.ts` and `src/app.ts`, `src/serve/`, `src/routes/<resource>/router.ts`, `src/http/*.ts`.\n');
      expect(missingSourcePaths(dir, 'docs/a.md')).to.deep.equal(['docs/a.md: src/app.ts does not exist']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
