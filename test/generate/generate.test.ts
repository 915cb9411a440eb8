import { expect } from 'chai';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { toBech32 } from '../../src/lib/address';
import { pubkeyToAddress } from '../../src/lib/pubkey';
import { generateDump } from '../../src/generate';
import { jsonbStringify } from '../../src/generate/jsonb';
import type { VmType } from '../../src/lib/vm';

interface Attr { key: string; index: boolean; value: string }
interface Ev { type: string; attributes: Attr[] }
interface Msg { '@type': string; [k: string]: unknown }
interface Tx {
  txhash: string; height: string; code: number; gas_wanted: string; gas_used: string; timestamp: string;
  tx: {
    body: { messages: Msg[] };
    auth_info: {
      fee: { amount: { denom: string; amount: string }[] };
      signer_infos: { public_key: { '@type': string; key: string }; mode_info: { single: { mode: string } } }[];
    };
  };
  events: Ev[];
}
interface TxRecord { sequence: number; tx: Tx }
interface Block {
  height: number; timestamp: string; gas_used: number; gas_wanted: number; tx_count: number;
  total_fee: { denom: string; amount: string }[] | null;
}

const TX_KEYS = ['txhash', 'height', 'codespace', 'code', 'data', 'raw_log', 'logs', 'info', 'gas_wanted',
  'gas_used', 'tx', 'timestamp', 'events'];

const root = mkdtempSync(join(tmpdir(), 'indexer-api-generate-'));

function lines(dir: string, name: string): string[] {
  let text: string;
  try {
    text = readFileSync(join(dir, `${name}.ndjson`), 'utf8');
  } catch {
    return [];
  }
  return text.split('\n').filter((l) => l !== '');
}

function records<T>(dir: string, name: string): T[] {
  return lines(dir, name).map((l) => JSON.parse(l) as T);
}

function filesOf(dir: string): Map<string, Buffer> {
  return new Map(readdirSync(dir).sort().map((f) => [f, readFileSync(join(dir, f))]));
}

/** jsonb order: UTF-8 byte length, then bytes (reference §5.3). */
function jsonbOrdered(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return true;
  if (Array.isArray(value)) return value.every(jsonbOrdered);
  const keys = Object.keys(value).map((k) => Buffer.from(k));
  for (let i = 1; i < keys.length; i++) {
    const [a, b] = [keys[i - 1], keys[i]];
    if (a.length > b.length || (a.length === b.length && Buffer.compare(a, b) >= 0)) return false;
  }
  return Object.values(value).every(jsonbOrdered);
}

describe('generate', function () {
  this.timeout(60_000);

  after(() => rmSync(root, { recursive: true, force: true }));

  it('orders object keys like jsonb: UTF-8 byte length, then bytes, at every level', () => {
    const value = { é: 1, ab: [{ zz: 1, a: 2 }], b: { key: 'k', value: 'v', index: true }, '@type': 'x' };
    expect(jsonbStringify(value)).to.equal('{"b":{"key":"k","index":true,"value":"v"},"ab":[{"a":2,"zz":1}],"é":1,"@type":"x"}');
  });

  it('writes byte-identical dumps for the same seed', async () => {
    const [a, b] = [join(root, 'same-a'), join(root, 'same-b')];
    await generateDump({ vm: 'move', out: a, seed: 7, txs: 400 });
    await generateDump({ vm: 'move', out: b, seed: 7, txs: 400 });
    expect(filesOf(a)).to.deep.equal(filesOf(b));
  });

  it('writes a different chain for a different seed', async () => {
    const [a, b] = [join(root, 'seed-1'), join(root, 'seed-2')];
    await generateDump({ vm: 'wasm', out: a, seed: 1, txs: 400 });
    await generateDump({ vm: 'wasm', out: b, seed: 2, txs: 400 });
    expect(readFileSync(join(a, 'txs.ndjson'))).to.not.deep.equal(readFileSync(join(b, 'txs.ndjson')));
  });

  it('writes gzip files that are deterministic and hold the plain dump', async () => {
    const [plain, gz1, gz2] = ['plain', 'gz-1', 'gz-2'].map((d) => join(root, d));
    await generateDump({ vm: 'evm', out: plain, txs: 300 });
    await generateDump({ vm: 'evm', out: gz1, txs: 300, gzip: true });
    await generateDump({ vm: 'evm', out: gz2, txs: 300, gzip: true });
    expect(filesOf(gz1)).to.deep.equal(filesOf(gz2));
    for (const [name, bytes] of filesOf(plain)) {
      expect(gunzipSync(readFileSync(join(gz1, `${name}.gz`)))).to.deep.equal(bytes);
    }
  });

  it('--holders: a rich list on Wasm / Move too (bech32 holders of bank denoms), and a prefix chain has the rich list of its height', async () => {
    const [whole, prefix] = [join(root, 'holders-whole'), join(root, 'holders-prefix')];
    const s = await generateDump({ vm: 'move', out: whole, txs: 400, holders: 100 });
    await generateDump({ vm: 'move', out: prefix, txs: 400, holders: 100, untilHeight: s.blocks - 3 });
    const rows = records<{ denom: string; account: string; amount: string }>(whole, 'richlist');
    expect([...new Set(rows.map((r) => r.denom))]).to.deep.equal(['uinit', 'umin', 'uusdc']);
    expect(rows.length).to.be.within(3 * 70, 3 * 100);
    for (const r of rows) expect(r.account).to.match(/^init1[0-9a-z]{38}$/);
    expect(records<{ rich_list_height: number }>(whole, 'meta')[0].rich_list_height).to.equal(s.blocks);
    expect(records(whole, 'denom_contracts')).to.deep.equal([]);
    const earlier = new Map(records<{ denom: string; account: string; amount: string }>(prefix, 'richlist').map((r) => [`${r.denom} ${r.account}`, r.amount]));
    const changed = rows.filter((r) => earlier.has(`${r.denom} ${r.account}`) && earlier.get(`${r.denom} ${r.account}`) !== r.amount);
    expect(changed.length, 'amounts that differ at the earlier height').to.be.greaterThan(0);
    expect(rows.filter((r) => !earlier.has(`${r.denom} ${r.account}`)).length, 'holders not there yet').to.be.greaterThan(0);
  });

  it('--nfts: extra NFTs on every VM, spread over the collections at their creation, the same in a prefix chain', async () => {
    type Tok = { collection_addr: string; token_id: string; object_addr?: string; height: number };
    type Col = { object_addr: string; height: number };
    for (const vm of ['move', 'wasm', 'evm'] as VmType[]) {
      const [plain, whole, prefix] = ['plain', 'whole', 'prefix'].map((n) => join(root, `nfts-${vm}-${n}`));
      const base = await generateDump({ vm, out: plain, txs: 400 });
      const s = await generateDump({ vm, out: whole, txs: 400, nfts: 1000 });
      expect(s.tokens, vm).to.equal(base.tokens + 1000);
      const minted = new Set(records<Tok>(plain, 'tokens').map((t) => `${t.collection_addr} ${t.token_id}`));
      const extra = records<Tok>(whole, 'tokens').filter((t) => !minted.has(`${t.collection_addr} ${t.token_id}`));
      expect(extra.length, vm).to.equal(1000);
      expect(new Set(extra.map((t) => `${t.collection_addr} ${t.token_id}`)).size, `${vm}: distinct`).to.equal(1000);
      const cols = new Map(records<Col>(whole, 'collections').map((c) => [c.object_addr, c.height]));
      const per = new Map<string, number>();
      for (const t of extra) {
        expect(t.height, `${vm} ${t.token_id}`).to.equal(cols.get(t.collection_addr));
        per.set(t.collection_addr, (per.get(t.collection_addr) ?? 0) + 1);
        if (vm === 'move') expect(t.object_addr).to.match(/^0x[0-9a-f]{64}$/);
      }
      expect(per.size, vm).to.equal(cols.size);
      expect(Math.max(...per.values()) - Math.min(...per.values()), vm).to.be.at.most(1);
      // a prefix: the extra NFTs of the collections that exist by then, unchanged
      await generateDump({ vm, out: prefix, txs: 400, nfts: 1000, untilHeight: Math.floor(s.blocks / 2) });
      const early = new Map(records<Tok>(prefix, 'tokens').map((t) => [`${t.collection_addr} ${t.token_id}`, JSON.stringify(t)]));
      const kept = extra.filter((t) => early.has(`${t.collection_addr} ${t.token_id}`));
      expect(kept.length, vm).to.be.greaterThan(0);
      for (const t of kept) expect(early.get(`${t.collection_addr} ${t.token_id}`)).to.equal(JSON.stringify(t));
    }
  });

  it('refuses a non-empty output directory unless forced, then replaces both dump forms', async () => {
    const dir = join(root, 'busy');
    await generateDump({ vm: 'move', out: dir, txs: 50 });
    writeFileSync(join(dir, 'txs.ndjson.gz'), 'stale');
    let error: Error | undefined;
    await generateDump({ vm: 'move', out: dir, txs: 50 }).catch((e: Error) => { error = e; });
    expect(error?.message).to.equal(`output directory ${dir} is not empty (use --force to overwrite)`);
    await generateDump({ vm: 'move', out: dir, txs: 50, force: true });
    expect(readdirSync(dir).filter((f) => f.endsWith('.gz'))).to.deep.equal([]);
  });

  for (const vm of ['move', 'wasm', 'evm'] as VmType[]) {
    describe(`the ${vm} demo chain`, () => {
      const dir = join(root, `demo-${vm}`);
      let blocks: Block[] = [];
      let txs: TxRecord[] = [];
      let txLines: string[] = [];

      before(async () => {
        await generateDump({ vm, out: dir, preset: 'demo' });
        blocks = records<Block>(dir, 'blocks');
        txLines = lines(dir, 'txs');
        txs = txLines.map((l) => JSON.parse(l) as TxRecord);
      });

      it('has ~400 blocks and 3,000 txs, with empty blocks and 40+ tx blocks', () => {
        expect(blocks.length).to.be.within(350, 450);
        expect(txs.length).to.equal(3000);
        expect(blocks.some((b) => b.tx_count === 0)).to.equal(true);
        expect(blocks.some((b) => b.tx_count >= 40)).to.equal(true);
        const meta = records<{ chain_id: string; vm_type: string }>(dir, 'meta');
        expect(meta).to.have.length(1);
        expect(meta[0].chain_id).to.equal(`mini${vm}-demo-1`);
        expect(meta[0].vm_type).to.equal(vm);
      });

      it('lists blocks in ascending height, each tx_count matching its txs', () => {
        const perHeight = new Map<number, number>();
        for (const r of txs) perHeight.set(Number(r.tx.height), (perHeight.get(Number(r.tx.height)) ?? 0) + 1);
        blocks.forEach((b, i) => {
          if (i > 0) expect(b.height).to.be.greaterThan(blocks[i - 1].height);
          expect(b.tx_count).to.equal(perHeight.get(b.height) ?? 0);
        });
      });

      it('numbers txs from 1 in block order and stamps them with their block time', () => {
        const times = new Map(blocks.map((b) => [b.height, b.timestamp]));
        txs.forEach((r, i) => {
          expect(r.sequence).to.equal(i + 1);
          if (i > 0) expect(Number(r.tx.height)).to.be.at.least(Number(txs[i - 1].tx.height));
          expect(r.tx.timestamp).to.equal(times.get(Number(r.tx.height)));
          expect(r.tx.timestamp).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$/);
        });
      });

      it('sets total_fee null exactly for empty blocks, and sums gas and fees over the txs', () => {
        const sums = new Map<number, { used: number; wanted: number; fees: Map<string, bigint> }>();
        for (const { tx } of txs) {
          const s = sums.get(Number(tx.height)) ?? { used: 0, wanted: 0, fees: new Map<string, bigint>() };
          s.used += Number(tx.gas_used);
          s.wanted += Number(tx.gas_wanted);
          for (const c of tx.tx.auth_info.fee.amount) s.fees.set(c.denom, (s.fees.get(c.denom) ?? 0n) + BigInt(c.amount));
          sums.set(Number(tx.height), s);
        }
        for (const b of blocks) {
          const s = sums.get(b.height);
          expect(b.total_fee === null).to.equal(b.tx_count === 0);
          expect(b.gas_used).to.equal(s?.used ?? 0);
          expect(b.gas_wanted).to.equal(s?.wanted ?? 0);
          const fees = [...(s?.fees ?? new Map<string, bigint>())].filter(([, a]) => a > 0n).sort(([a], [c]) => a.localeCompare(c))
            .map(([denom, a]) => ({ denom, amount: a.toString() }));
          if (b.total_fee !== null) expect(b.total_fee).to.deep.equal(fees);
        }
      });

      it('derives every signer from its public key, matching the sender in messages and events', () => {
        const types = new Set<string>();
        for (const { tx } of txs) {
          const info = tx.tx.auth_info.signer_infos[0];
          types.add(info.public_key['@type']);
          expect(info.mode_info.single.mode).to.equal('SIGN_MODE_DIRECT');
          const signer = toBech32(pubkeyToAddress(info.public_key) as Buffer, 'init');
          const payer = tx.events.find((e) => e.type === 'tx' && e.attributes[0].key === 'fee');
          expect(payer?.attributes[1].value).to.equal(signer);
          for (const m of tx.tx.body.messages) {
            const sender = m.from_address ?? m.sender ?? m.signer;
            expect(sender, m['@type']).to.equal(signer);
          }
          for (const e of tx.events.filter((x) => x.type === 'message' && x.attributes[0].key === 'action')) {
            expect(e.attributes[1]).to.deep.equal({ key: 'sender', index: true, value: signer });
          }
        }
        const expected = vm === 'evm' ? ['/initia.crypto.v1beta1.ethsecp256k1.PubKey']
          : ['/cosmos.crypto.secp256k1.PubKey', '/initia.crypto.v1beta1.ethsecp256k1.PubKey'];
        expect([...types].sort()).to.deep.equal(expected);
      });

      it('writes the Tx keys in API order and `tx` and `events` in jsonb order', () => {
        for (const { tx } of txs) {
          expect(Object.keys(tx)).to.deep.equal(TX_KEYS);
          expect(jsonbOrdered(tx.tx), tx.txhash).to.equal(true);
          expect(jsonbOrdered(tx.events), tx.txhash).to.equal(true);
        }
        expect(txLines[0]).to.contain('"attributes":[{"key":');
      });

      it('gives every msg_index a valid message index, and failed txs no message events', () => {
        let failed = 0;
        for (const { tx } of txs) {
          const idx = tx.events.flatMap((e) => e.attributes.filter((a) => a.key === 'msg_index').map((a) => Number(a.value)));
          if (tx.code !== 0) {
            failed++;
            expect(idx).to.deep.equal([]);
          }
          for (const i of idx) expect(i).to.be.within(0, tx.tx.body.messages.length - 1);
        }
        expect(failed).to.be.greaterThan(0);
      });

      it('mixes bank, VM, IBC and multi-message txs', () => {
        const types = new Set(txs.flatMap((r) => r.tx.tx.body.messages.map((m) => m['@type'])));
        const vmType = { move: '/initia.move.v1.MsgExecute', wasm: '/cosmwasm.wasm.v1.MsgExecuteContract', evm: '/minievm.evm.v1.MsgCall' }[vm];
        for (const t of ['/cosmos.bank.v1beta1.MsgSend', vmType, '/ibc.applications.transfer.v1.MsgTransfer',
          '/ibc.core.channel.v1.MsgRecvPacket']) expect(types).to.include(t);
        expect(txs.some((r) => r.tx.tx.body.messages.length > 1)).to.equal(true);
        const eventTypes = new Set(txs.flatMap((r) => r.tx.events.map((e) => e.type)));
        for (const t of ['send_packet', 'recv_packet', { move: 'move', wasm: 'wasm', evm: 'evm' }[vm]]) expect(eventTypes).to.include(t);
      });

      it('keeps every token in an existing collection, with ids unique per collection', () => {
        const cols = records<{ object_addr: string; name: string; origin_name: string }>(dir, 'collections');
        const tokens = records<{ collection_addr: string; token_id: string; object_addr?: string }>(dir, 'tokens');
        expect(cols.length).to.be.within(5, 8);
        expect(cols.some((c) => /[\u0080-\uffff]/.test(c.name))).to.equal(true);
        expect(cols.filter((c) => c.origin_name !== '')).to.have.length(1);
        const addrs = new Set(cols.map((c) => c.object_addr));
        const ids = new Set<string>();
        for (const t of tokens) {
          expect(addrs.has(t.collection_addr)).to.equal(true);
          const id = `${t.collection_addr} ${t.token_id}`;
          expect(ids.has(id), id).to.equal(false);
          ids.add(id);
          expect(t.object_addr !== undefined).to.equal(vm === 'move');
        }
        if (vm !== 'evm') {
          for (const c of ['#', '/', ' ']) expect(tokens.some((t) => t.token_id.includes(c)), c).to.equal(true);
        }
        const heights = new Map<string, number>();
        for (const t of records<{ height: number }>(dir, 'tokens')) heights.set(String(t.height), (heights.get(String(t.height)) ?? 0) + 1);
        expect(Math.max(...heights.values())).to.be.at.least(5);
      });

      it('links token_txs to existing sequences (Wasm and EVM only)', () => {
        const links = records<{ sequence: number }>(dir, 'token_txs');
        if (vm === 'move') return expect(links).to.deep.equal([]);
        expect(links.length).to.be.greaterThan(0);
        for (const l of links) expect(l.sequence).to.be.within(1, txs.length);
      });

      it(vm === 'evm' ? 'writes a rich list unique per (denom, account) with amounts beyond 2^64 and 2^128'
        : 'writes no rich list', () => {
        const rows = records<{ denom: string; account: string; amount: string }>(dir, 'richlist');
        if (vm !== 'evm') {
          expect(rows).to.deep.equal([]);
          return expect(records(dir, 'denom_contracts')).to.deep.equal([]);
        }
        const keys = new Set(rows.map((r) => `${r.denom} ${r.account}`));
        expect(keys.size).to.equal(rows.length);
        const denoms = new Set(rows.map((r) => r.denom));
        expect(denoms.size).to.be.within(2, 3);
        for (const d of denoms) {
          expect(d).to.match(/^0x[0-9a-f]{40}$/);
          expect(rows.filter((r) => r.denom === d).length).to.be.at.least(200);
        }
        const amounts = rows.map((r) => BigInt(r.amount));
        expect(amounts.filter((a) => a >= 2n ** 64n).length).to.be.greaterThan(1);
        expect(amounts.filter((a) => a >= 2n ** 128n)).to.have.length(1);
        expect(new Set(rows.map((r) => r.amount)).size).to.be.lessThan(rows.length * 0.8);
        const contracts = records<{ denom: string; contract: string }>(dir, 'denom_contracts');
        expect(contracts.map((c) => c.contract).sort()).to.deep.equal([...denoms].sort());
        expect(contracts.map((c) => c.denom)).to.include.members(['umin', 'uusdc']);
      });
    });
  }
});
