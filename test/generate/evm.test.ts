import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateDump } from '../../src/generate';

type Rec = Record<string, unknown>;
interface Msg { '@type': string; contract_addr?: string }
interface TxRec { sequence: number; tx: { height: string; code: number; tx: { body: { messages: Msg[] } }; events: { type: string; attributes: { key: string; value: string }[] }[] } }
interface Receipt { blockNumber: string; from: string; to: string | null; contractAddress: string | null; status: string; transactionHash: string;
  transactionIndex: string; logs: { address: string; topics: string[]; logIndex: string }[]; gasUsed: string; cumulativeGasUsed: string }
interface Frame { sequence: number; height: number; hash: string; index: number; parent_index: number; type: string; value: string; gas: string }

const records = <T>(dir: string, name: string): T[] =>
  readFileSync(join(dir, `${name}.ndjson`), 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as T);

describe('generate --vm evm: receipts and call trees', function () {
  this.timeout(120_000);
  const root = mkdtempSync(join(tmpdir(), 'indexer-api-generate-evm-'));
  after(() => rmSync(root, { recursive: true, force: true }));
  let dir = '';
  before(async () => {
    dir = join(root, 'evm');
    await generateDump({ vm: 'evm', out: dir, preset: 'demo', seed: 1 });
  });

  it('writes one receipt per cosmos tx that is a single MsgCall / MsgCreate, in sequence order, matching that tx', () => {
    const txs = records<TxRec>(dir, 'txs');
    const evmTxs = txs.filter((t) => t.tx.tx.body.messages.length === 1 && /^\/minievm\.evm\.v1\.Msg(Call|Create)$/.test(t.tx.tx.body.messages[0]['@type']));
    const receipts = records<{ sequence: number; height: number; receipt: Receipt }>(dir, 'evm_txs');
    expect(receipts.map((r) => r.sequence)).to.deep.equal(receipts.map((_, i) => i + 1));
    expect(receipts.length).to.equal(evmTxs.length);
    receipts.forEach((r, i) => {
      const t = evmTxs[i];
      const msg = t.tx.tx.body.messages[0];
      expect(r.height).to.equal(Number(t.tx.height));
      expect(r.receipt.blockNumber).to.equal(`0x${r.height.toString(16)}`);
      expect(r.receipt.status).to.equal(t.tx.code === 0 ? '0x1' : '0x0');
      if (msg['@type'].endsWith('MsgCreate')) {
        expect(r.receipt.to).to.equal(null);
        expect(r.receipt.contractAddress).to.match(/^0x[0-9a-f]{40}$/);
      } else {
        expect([r.receipt.to, r.receipt.contractAddress]).to.deep.equal([msg.contract_addr, null]);
      }
      // the logs are the tx's own evm log events
      const logs = t.tx.events.filter((e) => e.type === 'evm').map((e) => JSON.parse(e.attributes.find((a) => a.key === 'log')?.value ?? '{}') as { address: string; topics: string[] });
      expect(r.receipt.logs.map((l) => [l.address, l.topics])).to.deep.equal(logs.map((l) => [l.address.toLowerCase(), l.topics]));
    });
    expect(receipts.some((r) => r.receipt.to === null)).to.equal(true);
    expect(receipts.some((r) => r.receipt.status === '0x0')).to.equal(true);
    expect(receipts.some((r) => r.receipt.logs.some((l) => l.topics.slice(1).some((x) => /^0x0{24}/.test(x))))).to.equal(true);
  });

  it('writes call trees depth-first for successful txs only, nested, with odd-length hex quantities', () => {
    const receipts = records<{ receipt: Receipt }>(dir, 'evm_txs');
    const frames = records<Frame>(dir, 'evm_internal_txs');
    const status = new Map(receipts.map((r) => [r.receipt.transactionHash, r.receipt.status]));
    const byHash = new Map<string, Frame[]>();
    for (const f of frames) byHash.set(f.hash, [...(byHash.get(f.hash) ?? []), f]);
    for (const [hash, fs] of byHash) {
      expect(status.get(hash), hash).to.equal('0x1');
      expect(fs.map((f) => f.index)).to.deep.equal(fs.map((_, i) => i));
      expect(fs[0].parent_index).to.equal(-1);
      fs.slice(1).forEach((f) => expect(f.parent_index).to.be.within(0, f.index - 1));
    }
    expect([...status.values()].filter((s) => s === '0x1').length).to.equal(byHash.size);
    expect(frames.some((f) => f.parent_index > 0), 'calls nested deeper than one level').to.equal(true);
    expect([...new Set(frames.map((f) => f.type))]).to.include.members(['CALL', 'CREATE', 'STATICCALL', 'DELEGATECALL']);
    expect(frames.some((f) => f.gas.length % 2 === 1), 'odd-length quantities').to.equal(true);
    expect(frames.map((f) => f.sequence)).to.deep.equal(frames.map((_, i) => i + 1));
  });

  it('is deterministic', async () => {
    const again = join(root, 'again');
    await generateDump({ vm: 'evm', out: again, preset: 'demo', seed: 1 });
    for (const f of ['evm_txs', 'evm_internal_txs', 'meta']) {
      expect(readFileSync(join(again, `${f}.ndjson`)).equals(readFileSync(join(dir, `${f}.ndjson`))), f).to.equal(true);
    }
  });

  it('records internal_tx_height by rollytics\' rule in meta', () => {
    const [meta] = records<Rec>(dir, 'meta');
    const frames = records<Frame>(dir, 'evm_internal_txs');
    const blocks = records<{ height: number; tx_count: number }>(dir, 'blocks');
    const top = Math.max(...frames.map((f) => f.height));
    const want = blocks.some((b) => b.height > top && b.tx_count > 0) ? top : blocks[blocks.length - 1].height;
    expect(meta.internal_tx_height).to.equal(want);
  });
});
