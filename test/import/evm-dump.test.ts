import { expect } from 'chai';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runGenerate } from '../../src/commands/generate';
import { runImport } from '../../src/import/run';

type Rec = Record<string, unknown>;

describe('dump import: evm_txs.ndjson and evm_internal_txs.ndjson are validated with FILE:LINE: FIELD', function () {
  this.timeout(120_000);
  const work = mkdtempSync(join(tmpdir(), 'indexer-api-evm-dump-'));
  const evm = join(work, 'evm');
  const wasm = join(work, 'wasm');
  let n = 0;
  after(() => rmSync(work, { recursive: true, force: true }));
  before(async () => {
    await runGenerate({ vm: 'evm', out: evm, preset: 'demo', txs: 300, seed: 7, gzip: false, force: true, quiet: true });
    await runGenerate({ vm: 'wasm', out: wasm, preset: 'demo', txs: 60, seed: 7, gzip: false, force: true, quiet: true });
  });

  const read = (dir: string, name: string): string[] => readFileSync(join(dir, `${name}.ndjson`), 'utf8').split('\n').filter((l) => l !== '');

  /** Imports a copy of `from` with `file` edited; returns the error message (or undefined). */
  async function importWith(from: string, file: string, edit: (lines: string[]) => string[]): Promise<string | undefined> {
    const dir = join(work, `case${++n}`);
    cpSync(from, dir, { recursive: true });
    const src = existsSync(join(dir, `${file}.ndjson`)) ? read(dir, file) : read(evm, file);
    writeFileSync(join(dir, `${file}.ndjson`), edit(src).join('\n') + '\n');
    const out = join(work, `case${n}.sqlite`);
    const err = await runImport({ fromDump: dir, out, force: false, quiet: true, json: false }).then(() => undefined, (e: Error) => e.message);
    if (err) expect(existsSync(out), 'no snapshot is written').to.equal(false);
    return err;
  }
  const line = (i: number, fn: (r: Rec) => void) => (ls: string[]): string[] => ls.map((l, k) => {
    if (k !== i - 1) return l;
    const r = JSON.parse(l) as Rec;
    fn(r);
    return JSON.stringify(r);
  });
  const receipt = (r: Rec): Rec => r.receipt as Rec;

  it('the generated EVM dump imports cleanly', async () => {
    expect(await importWith(evm, 'evm_txs', (ls) => ls)).to.equal(undefined);
  });

  const cases: { label: string; file: string; edit: (ls: string[]) => string[]; want: RegExp }[] = [
    { label: 'a missing receipt field', file: 'evm_txs', edit: line(2, (r) => { delete receipt(r).from; }), want: /^evm_txs\.ndjson:2: receipt\.from: missing$/ },
    { label: 'a blockNumber that is not the height', file: 'evm_txs', edit: line(3, (r) => { receipt(r).blockNumber = '0x999'; }), want: /^evm_txs\.ndjson:3: receipt\.blockNumber: must be the hex quantity of height/ },
    { label: 'a bad transactionHash', file: 'evm_txs', edit: line(1, (r) => { receipt(r).transactionHash = '0x12'; }), want: /^evm_txs\.ndjson:1: receipt\.transactionHash: must be 0x \+ 64 hex digits/ },
    { label: 'a log whose removed is not a boolean', file: 'evm_txs',
      edit: (ls) => { const i = ls.findIndex((l) => (receipt(JSON.parse(l) as Rec).logs as unknown[]).length > 0); return line(i + 1, (r) => { ((receipt(r).logs as Rec[])[0]).removed = 'false'; })(ls); },
      want: /^evm_txs\.ndjson:\d+: receipt\.logs\[0\]\.removed: must be a boolean/ },
    { label: 'a sequence that does not ascend', file: 'evm_txs', edit: line(3, (r) => { r.sequence = 1; }), want: /^evm_txs\.ndjson:3: sequence: must ascend: 1 after 2$/ },
    { label: 'a height without a block', file: 'evm_txs', edit: line(1, (r) => { r.height = 99999; receipt(r).blockNumber = '0x1869f'; }), want: /^evm_txs\.ndjson:1: height: no block 99999/ },
    { label: 'an unknown field', file: 'evm_internal_txs', edit: line(1, (r) => { r.colour = 'red'; }), want: /^evm_internal_txs\.ndjson:1: colour: unknown field/ },
    { label: 'a gap in a call tree', file: 'evm_internal_txs', edit: (ls) => {
      const idx = ls.map((l) => (JSON.parse(l) as Rec).index);
      const at = idx.findIndex((v, i) => v === 1 && idx[i + 1] === 2);
      return ls.filter((_, i) => i !== at);
    }, want: /^evm_internal_txs\.ndjson:\d+: index: must be 1 \(the next call of tx 0x[0-9a-f]{64}\), got 2$/ },
    { label: 'a top-level call with a parent', file: 'evm_internal_txs', edit: line(1, (r) => { r.parent_index = 0; }), want: /^evm_internal_txs\.ndjson:1: parent_index: must be -1 for the top-level call, got 0$/ },
    { label: 'a value that is not hex', file: 'evm_internal_txs', edit: line(2, (r) => { r.value = '12'; }), want: /^evm_internal_txs\.ndjson:2: value: must be 0x-prefixed hex/ },
    { label: 'a from that is no 20-byte address', file: 'evm_internal_txs', edit: line(2, (r) => { r.from = `0x${'ab'.repeat(32)}`; }), want: /^evm_internal_txs\.ndjson:2: from: must be a 20-byte EVM address/ },
  ];
  for (const c of cases) {
    it(`refuses ${c.label}`, async () => {
      expect(await importWith(evm, c.file, c.edit)).to.match(c.want);
    });
  }

  it('refuses EVM files in a dump of another VM', async () => {
    expect(await importWith(wasm, 'evm_txs', (ls) => ls.slice(0, 1))).to.match(/^evm_txs\.ndjson:1: \(file\): evm_txs is for EVM chains \(this is a wasm chain\)$/);
    expect(await importWith(wasm, 'evm_internal_txs', (ls) => ls.slice(0, 1))).to.match(/^evm_internal_txs\.ndjson:1: \(file\): evm_internal_txs is for EVM chains/);
  });
});
