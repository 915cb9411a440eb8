/**
 * `follow` never changes chains (issue #37): `--expect-chain-id` pins the chain of --db (refused
 * before a byte is written) and of the source (refused before anything is imported), and a
 * source of another chain is refused at the first poll — not only once its blocks disagree
 * with ours (a chain whose blocks are the same, under another chain id, was followed before).
 */
import { expect } from 'chai';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableDigests } from '../../src/snapshot/digest';
import { demoCuts, growingSource, startFollow } from '../helpers/follow';
import { withChainId } from '../helpers/serve';

describe('follow: never another chain', function () {
  this.timeout(120_000);
  let tmp: string;
  before(() => { tmp = mkdtempSync(join(tmpdir(), 'indexer-api-follow-chain-')); });
  after(() => { rmSync(tmp, { recursive: true, force: true }); });

  it('--expect-chain-id: a --db of another chain is refused before a byte of it is written', async () => {
    const { at } = await demoCuts();
    const db = join(tmp, 'other.sqlite');
    copyFileSync(at.get(250) as string, db);
    const before = readFileSync(db);
    const f = startFollow(['--db', db, '--from-api', 'http://127.0.0.1:1', '--expect-chain-id', 'minimove-1']);
    expect((await f.exited).code).to.equal(1);
    expect(f.stderr).to.equal(`indexer-api follow: snapshot is chain "miniwasm-demo-1", not "minimove-1" (--expect-chain-id): ${db}\n`);
    expect(readFileSync(db).equals(before)).to.equal(true);
    expect(readdirSync(tmp).filter((n) => n.startsWith('other.sqlite'))).to.deep.equal(['other.sqlite']);
  });

  it('--expect-chain-id: a missing --db is not imported from a source of another chain', async () => {
    const { at } = await demoCuts();
    const src = await growingSource(at.get(250) as string);
    try {
      const db = join(tmp, 'new.sqlite');
      const f = startFollow(['--db', db, '--from-api', src.url, '--expect-chain-id', 'minimove-1']);
      expect((await f.exited).code).to.equal(1);
      expect(f.stderr).to.equal(`indexer-api follow: the source is chain "miniwasm-demo-1", not "minimove-1" (--expect-chain-id): not importing it into ${db}\n`);
      expect(existsSync(db)).to.equal(false);
    } finally {
      await src.close();
    }
  });

  it('a source of another chain is refused at the first poll, even with the same blocks; nothing is appended', async () => {
    const { at } = await demoCuts();
    const db = withChainId(at.get(250) as string, join(tmp, 'renamed.sqlite'), 'other-chain-1');
    const src = await growingSource(at.get(320) as string);
    try {
      const before = tableDigests(db);
      const f = startFollow(['--db', db, '--from-api', src.url, '--interval', '100ms']);
      expect((await f.exited).code, f.stderr).to.equal(1);
      const lines = f.lines.filter((l) => /not following another chain/.test(l));
      expect(lines, f.stderr).to.have.length(1);
      expect(lines[0]).to.contain('is chain "miniwasm-demo-1", this snapshot').and.contain(`(${db}) is chain "other-chain-1"`);
      expect(tableDigests(db)).to.deep.equal(before);
    } finally {
      await src.close();
    }
  });
});
