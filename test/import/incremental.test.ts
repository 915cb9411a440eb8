import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runImport } from '../../src/commands/import';
import { openSnapshot } from '../../src/snapshot/open';
import { demoDump, expectSameAnswers } from './helpers/serve';

function lines(dir: string, name: string): string[] {
  const f = join(dir, `${name}.ndjson`);
  return existsSync(f) ? readFileSync(f, 'utf8').split('\n').filter((l) => l.trim() !== '') : [];
}

function write(dir: string, name: string, rows: string[]): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${name}.ndjson`), rows.map((r) => r + '\n').join(''));
}

/**
 * Cuts a full dump into the part up to height `lo` (the history up to there, NFT state limited
 * to collections created by then) and the parts (lo, hi] for each later cut: new blocks, txs and
 * token_txs, plus the full current NFT / rich-list state (what the next snapshot should show).
 */
function split(full: string, cuts: number[], out: string, opts: { metaIn?: (i: number) => boolean } = {}): string[] {
  const meta = JSON.parse(lines(full, 'meta')[0]) as Record<string, unknown>;
  const txs = lines(full, 'txs').map((l) => ({ l, height: Number((JSON.parse(l) as { tx: { height: string } }).tx.height), seq: (JSON.parse(l) as { sequence: number }).sequence }));
  const blocks = lines(full, 'blocks').map((l) => ({ l, height: (JSON.parse(l) as { height: number }).height }));
  const tokenTxs = lines(full, 'token_txs').map((l) => ({ l, seq: (JSON.parse(l) as { sequence: number }).sequence }));
  const bounds = [0, ...cuts, Infinity];
  const dirs: string[] = [];
  for (let i = 0; i + 1 < bounds.length; i++) {
    const [lo, hi] = [bounds[i], bounds[i + 1]];
    const dir = join(out, `part${i}`);
    mkdirSync(dir, { recursive: true });
    const partTxs = txs.filter((t) => t.height > lo && t.height <= hi);
    const seqLo = partTxs.length ? partTxs[0].seq : Infinity;
    const seqHi = partTxs.length ? partTxs[partTxs.length - 1].seq : -Infinity;
    if (i === 0 || opts.metaIn?.(i) !== false) {
      write(dir, 'meta', [JSON.stringify(hi === Infinity ? meta : { ...meta, height: hi })]);
    }
    if (i === 0) write(dir, 'validators', lines(full, 'validators'));
    write(dir, 'blocks', blocks.filter((b) => b.height > lo && b.height <= hi).map((b) => b.l));
    write(dir, 'txs', partTxs.map((t) => t.l));
    write(dir, 'token_txs', tokenTxs.filter((t) => t.seq >= seqLo && t.seq <= seqHi).map((t) => t.l));
    const cols = lines(full, 'collections').filter((l) => i > 0 || (JSON.parse(l) as { height: number }).height <= hi);
    const colAddrs = new Set(cols.map((l) => (JSON.parse(l) as { object_addr: string }).object_addr));
    write(dir, 'collections', cols);
    write(dir, 'tokens', lines(full, 'tokens').filter((l) => colAddrs.has((JSON.parse(l) as { collection_addr: string }).collection_addr)));
    for (const k of ['richlist', 'denom_contracts']) if (lines(full, k).length) write(dir, k, lines(full, k));
    dirs.push(dir);
  }
  return dirs;
}

const sha = (f: string): string => createHash('sha256').update(readFileSync(f)).digest('hex');

describe('import --base (incremental update)', function () {
  this.timeout(300_000);
  const work = mkdtempSync(join(tmpdir(), 'indexer-api-import-incr-'));
  after(() => rmSync(work, { recursive: true, force: true }));

  it('snapshot up to H, then H+1..H+k (twice, with and without meta): identical to a full import on every route and page', async () => {
    const full = await demoDump('wasm');
    const [p0, p1, p2] = split(full, [150, 290], join(work, 'wasm'), { metaIn: (i) => i !== 1 });
    const s0 = join(work, 's0.sqlite');
    const s1 = join(work, 's1.sqlite');
    const s2 = join(work, 's2.sqlite');
    const whole = join(work, 'full.sqlite');
    await runImport({ fromDump: p0, out: s0, force: false, quiet: true, json: false });
    const r1 = await runImport({ base: s0, fromDump: p1, out: s1, force: false, quiet: true, json: false });
    expect(r1.records.blocks).to.equal(290);
    // No meta in the middle part: /status follows the new highest block, the rest is the base's.
    const mid = openSnapshot(s1);
    expect(JSON.parse(mid.status)).to.include({ height: 290, version: 'v1.0.0-demo' });
    mid.close();
    // The next update replaces the snapshot it was built from (same path, --force).
    const r2 = await runImport({ base: s1, fromDump: p2, out: s1, force: true, quiet: true, json: false });
    expect(r2.records.txs).to.equal(3000);
    await runImport({ fromDump: full, out: whole, force: false, quiet: true, json: false });
    await expectSameAnswers(whole, s1, 6000);
    expect(existsSync(s2)).to.equal(false);
    expect(readdirSync(work).filter((f) => f.includes('.tmp-'))).to.deep.equal([]);
  });

  it('heights the base already has, or another chain, are refused by file and line; --out untouched', async () => {
    const full = await demoDump('wasm');
    const [p0, p1] = split(full, [200], join(work, 'again'));
    const base = join(work, 'again-base.sqlite');
    const out = join(work, 'again-out.sqlite');
    await runImport({ fromDump: p0, out: base, force: false, quiet: true, json: false });
    await runImport({ base, fromDump: p1, out, force: false, quiet: true, json: false });
    const before = sha(out);
    // p1 again on top of the result: its first block is not above the base's highest.
    const err = await runImport({ base: out, fromDump: p1, out, force: true, quiet: true, json: false }).then(() => undefined, (e: Error) => e);
    expect(err?.message).to.match(/^blocks\.ndjson:1: height: must ascend: 201 after 400$/);
    expect(sha(out)).to.equal(before);
    // A meta naming another chain.
    const other = join(work, 'other');
    split(full, [200], other);
    const m = JSON.parse(lines(join(other, 'part1'), 'meta')[0]) as Record<string, unknown>;
    write(join(other, 'part1'), 'meta', [JSON.stringify({ ...m, chain_id: 'someone-else-1' })]);
    const err2 = await runImport({ base, fromDump: join(other, 'part1'), out, force: true, quiet: true, json: false }).then(() => undefined, (e: Error) => e);
    expect(err2?.message).to.equal(`meta.ndjson:1: chain_id: is "someone-else-1" but the base snapshot ${base} has "miniwasm-demo-1"`);
    expect(sha(out)).to.equal(before);
    expect(readdirSync(work).filter((f) => f.includes('.tmp-'))).to.deep.equal([]);
  });
});
