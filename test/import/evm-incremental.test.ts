import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runImport } from '../../src/import/run';
import { openSnapshot } from '../../src/snapshot/open';
import { lines, write } from './helpers/dump-files';
import { demoDump, expectSameAnswers } from '../helpers/same-answers';


const heightOf = (l: string): number => {
  const r = JSON.parse(l) as { height?: number; tx?: { height: string } };
  return r.height ?? Number(r.tx?.height);
};

describe('import --base on an EVM chain', function () {
  this.timeout(300_000);
  const work = mkdtempSync(join(tmpdir(), 'indexer-api-evm-incr-'));
  after(() => rmSync(work, { recursive: true, force: true }));

  it('carries EVM txs, internal txs and their links over and appends the new heights: identical to a full import', async () => {
    const full = await demoDump('evm');
    const cut = 200;
    const parts = [join(work, 'p0'), join(work, 'p1')];
    const tokenTxs = lines(full, 'token_txs');
    parts.forEach((dir, i) => {
      const inPart = (l: string): boolean => (i === 0 ? heightOf(l) <= cut : heightOf(l) > cut);
      // The base derives internal_tx_height (no value in its meta); the update has no meta, so
      // the value is derived again over all heights rather than copied from the base.
      const { internal_tx_height: _, ...meta } = JSON.parse(lines(full, 'meta')[0]) as Record<string, unknown>;
      if (i === 0) write(dir, 'meta', [JSON.stringify({ ...meta, height: cut })]);
      if (i === 0) write(dir, 'validators', lines(full, 'validators'));
      for (const k of ['blocks', 'txs', 'evm_txs', 'evm_internal_txs']) write(dir, k, lines(full, k).filter(inPart));
      const seqs = new Set(lines(dir, 'txs').map((l) => (JSON.parse(l) as { sequence: number }).sequence));
      write(dir, 'token_txs', tokenTxs.filter((l) => seqs.has((JSON.parse(l) as { sequence: number }).sequence)));
      for (const k of ['collections', 'tokens', 'richlist', 'denom_contracts']) if (i === 1) write(dir, k, lines(full, k));
    });
    expect(lines(parts[1], 'evm_internal_txs').length).to.be.greaterThan(100);
    const s0 = join(work, 's0.sqlite');
    const s1 = join(work, 's1.sqlite');
    const whole = join(work, 'full.sqlite');
    await runImport({ fromDump: parts[0], out: s0, force: false, quiet: true, json: false });
    const base = openSnapshot(s0);
    const baseStatus = JSON.parse(base.status) as { internal_tx_height: number };
    base.close();
    expect(baseStatus.internal_tx_height).to.be.at.most(cut);
    await runImport({ base: s0, fromDump: parts[1], out: s1, force: false, quiet: true, json: false });
    await runImport({ fromDump: full, out: whole, force: false, quiet: true, json: false });
    await expectSameAnswers(whole, s1, 6000);
  });
});
