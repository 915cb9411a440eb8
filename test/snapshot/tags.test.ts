/**
 * One tag table: docs/response-cache.md shows the table src/snapshot/tags.ts holds (TAG_TABLE, the
 * tags written by the same functions the writer and the routes use). Edit the code's table and
 * paste `tagTableMarkdown()` into the docs, or the other way round: this fails while they differ.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tagTableMarkdown } from '../../src/snapshot/tags';
import { ROOT } from '../helpers/app';

describe('the tag table (src/snapshot/tags.ts) and docs/response-cache.md', () => {
  it('the docs show the code\'s table, row for row', () => {
    const lines = readFileSync(join(ROOT, 'docs', 'response-cache.md'), 'utf8').split('\n');
    const start = lines.indexOf('| tag | named when | answers that read it |');
    expect(start, 'docs/response-cache.md has no tag table').to.be.greaterThan(-1);
    let end = start;
    while (end < lines.length && lines[end].startsWith('|')) end++;
    expect(lines.slice(start, end).join('\n')).to.equal(tagTableMarkdown());
  });
});
