import { expect } from 'chai';
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runImport } from '../../src/import/run';
import { openSnapshot } from '../../src/snapshot/open';
import { tableDiff } from '../../src/snapshot/digest';
import { lines, write } from './helpers/dump-files';
import { demoDump, expectSameAnswers } from '../helpers/same-answers';


/**
 * Cuts a full dump into the part up to height `lo` (the history up to there, NFT state limited
 * to collections created by then) and the parts (lo, hi] for each later cut: new blocks, txs and
 * token_txs, plus the full current NFT / rich-list state (what the next snapshot should show).
 */
function split(full: string, cuts: number[], out: string, opts: { metaIn?: (i: number) => boolean; mutateBase?: boolean } = {}): string[] {
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
    for (const kind of ['evm_txs', 'evm_internal_txs']) {
      const rows = lines(full, kind).filter((l) => { const h = (JSON.parse(l) as { height: number }).height; return h > lo && h <= hi; });
      if (lines(full, kind).length) write(dir, kind, rows);
    }
    const cols = lines(full, 'collections').filter((l) => i > 0 || (JSON.parse(l) as { height: number }).height <= hi);
    const colAddrs = new Set(cols.map((l) => (JSON.parse(l) as { object_addr: string }).object_addr));
    write(dir, 'collections', cols);
    let tokens = lines(full, 'tokens').filter((l) => colAddrs.has((JSON.parse(l) as { collection_addr: string }).collection_addr));
    let holders = lines(full, 'richlist');
    if (i === 0 && opts.mutateBase) [tokens, holders] = [stateAtCut(tokens, hi), holdersAtCut(holders)];
    write(dir, 'tokens', tokens);
    if (holders.length) write(dir, 'richlist', holders);
    if (lines(full, 'denom_contracts').length) write(dir, 'denom_contracts', lines(full, 'denom_contracts'));
    dirs.push(dir);
  }
  return dirs;
}

type Token = { collection_addr: string; token_id: string; owner: string; uri: string; height: number };

/**
 * The NFT state "at the cut" for the base part, different from the final one so that the
 * update has to change it: tokens minted after the cut absent, every 5th token with another
 * owner (one that owns some other token), every 7th with another uri, and tokens burned
 * after the cut (clones of the first three under new ids).
 */
function stateAtCut(tokenLines: string[], cut: number): string[] {
  const all = tokenLines.map((l) => JSON.parse(l) as Token);
  const out = all.filter((t) => t.height <= cut).map((t, k, arr) => ({
    ...t,
    owner: k % 5 === 0 ? arr[(k + 1) % arr.length].owner : t.owner,
    uri: k % 7 === 0 ? `${t.uri}#before` : t.uri,
  }));
  for (const t of out.slice(0, 3)) out.push({ ...t, token_id: `${t.token_id}-burned-later` });
  return out.map((t) => JSON.stringify(t));
}

/** The rich list at the cut: other amounts, the last holder missing, one holder more. */
function holdersAtCut(holderLines: string[]): string[] {
  if (holderLines.length < 2) return holderLines;
  const hs = holderLines.map((l) => JSON.parse(l) as { denom: string; account: string; amount: string });
  const out = hs.slice(0, -1).map((h, k) => ({ ...h, amount: k % 2 ? `${h.amount}7` : h.amount }));
  out.push({ denom: `${hs[0].denom}-gone`, account: hs[0].account, amount: '12345' });
  return out.map((h) => JSON.stringify(h));
}

const sha = (f: string): string => createHash('sha256').update(readFileSync(f)).digest('hex');

describe('import --base (incremental update)', function () {
  this.timeout(300_000);
  const work = mkdtempSync(join(tmpdir(), 'indexer-api-import-incr-'));
  after(() => rmSync(work, { recursive: true, force: true }));

  for (const vm of ['move', 'wasm', 'evm'] as const) {
    it(`${vm}: snapshot up to H, then H+1..H+k twice (with and without meta, NFT owners / rich list changed after H): every table identical to a full import`, async () => {
      const full = await demoDump(vm);
      const [p0, p1, p2] = split(full, [150, 290], join(work, vm), { metaIn: (i) => i !== 1, mutateBase: true });
      const s0 = join(work, `${vm}-s0.sqlite`);
      const s1 = join(work, `${vm}-s1.sqlite`);
      const whole = join(work, `${vm}-full.sqlite`);
      await runImport({ fromDump: p0, out: s0, force: false, quiet: true, json: false });
      const base0 = sha(s0);
      const r1 = await runImport({ base: s0, fromDump: p1, out: s1, force: false, quiet: true, json: false });
      // Only the new records go through the loader.
      expect(r1.records.blocks).to.equal(lines(p1, 'blocks').length);
      expect(r1.records.txs).to.equal(lines(p1, 'txs').length);
      expect(sha(s0), 'the base is never modified').to.equal(base0);
      // No meta in the middle part: /status follows the new highest block, the rest is the base's.
      const mid = openSnapshot(s1);
      expect(JSON.parse(mid.status)).to.include({ height: 290 });
      expect(mid.meta.countBlocks).to.equal(290);
      mid.close();
      // The next update replaces the snapshot it was built from (same path, --force).
      const r2 = await runImport({ base: s1, fromDump: p2, out: s1, force: true, quiet: true, json: false, check: 'quick' });
      expect(r2.records.txs).to.equal(lines(p2, 'txs').length);
      // No whole-file check on an update unless asked for (--check quick).
      expect(r1.stages.map((x) => x.name)).not.to.include('integrity check');
      expect(r2.stages.map((x) => x.name)).to.include('integrity check');
      await runImport({ fromDump: full, out: whole, force: false, quiet: true, json: false });
      // Row by row, every table (account ids, which depend on first-use order, as addresses).
      expect(tableDiff(s1, whole, true)).to.deep.equal([]);
      if (vm === 'wasm') await expectSameAnswers(whole, s1, 6000);
      expect(readdirSync(work).filter((f) => f.includes('.tmp-'))).to.deep.equal([]);
    });
  }

  it('the logical table comparison notices a changed count', async () => {
    const full = await demoDump('move');
    const a = join(work, 'cmp-a.sqlite');
    const b = join(work, 'cmp-b.sqlite');
    await runImport({ fromDump: full, out: a, force: false, quiet: true, json: false });
    copyFileSync(a, b);
    const db = new Database(b);
    db.prepare('UPDATE account_msg_type_sets SET signer_tx_count = signer_tx_count + 1 WHERE (account_id, set_id) IN (SELECT account_id, set_id FROM account_msg_type_sets LIMIT 1)').run();
    db.close();
    expect(tableDiff(a, b, true).map((d) => d.split(':')[0])).to.deep.equal(['account_msg_type_sets']);
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
    expect(err?.message).to.equal(`blocks.ndjson:1: height: 201 is already in the base snapshot ${out} (its highest block is 400): the new source must start at height 401`);
    expect(sha(out)).to.equal(before);
    // A gap: p1 on top of p0's base without its first block.
    const gap = join(work, 'gap');
    mkdirSync(gap, { recursive: true });
    for (const k of ['meta', 'blocks', 'txs']) {
      const rows = lines(p1, k);
      write(gap, k, k === 'blocks' ? rows.slice(1) : k === 'txs' ? rows.filter((l) => (JSON.parse(l) as { tx: { height: string } }).tx.height !== '201') : rows);
    }
    const err3 = await runImport({ base, fromDump: gap, out, force: true, quiet: true, json: false }).then(() => undefined, (e: Error) => e);
    expect(err3?.message).to.equal(`blocks.ndjson:1: height: 202 leaves a gap after the base snapshot ${base} (its highest block is 200): the new source must start at height 201`);
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
