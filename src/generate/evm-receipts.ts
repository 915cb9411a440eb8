import { Prng } from './prng';
import { BuiltTx, TxDraft } from './tx';
import { NdjsonFile } from './writer';

/**
 * The EVM side of a generated EVM chain: for every cosmos tx that is one MsgCall / MsgCreate
 * (what minievm's JSON-RPC turns into an Ethereum tx), the receipt `eth_getBlockReceipts` would
 * give (evm_txs.ndjson) and the `callTracer` frames flattened depth-first as rollytics stores
 * them (evm_internal_txs.ndjson). Logs are the tx's own `evm` log events. Failed txs get a
 * status 0x0 receipt without logs and no frames (rollytics drops failed traces). Deterministic:
 * everything random comes from the `rng` stream given.
 */

interface Frame {
  type: string;
  from: string;
  to: string;
  input: string;
  output: string;
  value: string;
  gas: string;
  gasUsed: string;
  calls?: Frame[];
}

interface Log {
  address: string;
  topics: string[];
  data: string;
}

const quantity = (n: number | bigint): string => '0x' + n.toString(16);

function word(hex: string): string {
  return hex.replace(/^0x/, '').padStart(64, '0');
}

/** A proxy's implementation contract behind every ERC-20 (a DELEGATECALL frame). */
const IMPLEMENTATION = '0x' + 'a1'.repeat(20);

export class EvmRecorder {
  private height = 0;
  private txIndex = 0;
  private logIndex = 0;
  private cumulativeGas = 0;
  private evmSequence = 0;
  private internalSequence = 0;
  /** the highest height with frames (/status internal_tx_height) */
  lastInternalHeight = 0;

  constructor(
    private readonly rng: Prng,
    private readonly receipts: NdjsonFile,
    private readonly internals: NdjsonFile,
  ) {}

  /** Records the EVM tx of one cosmos tx, if it is one. */
  add(draft: TxDraft, built: BuiltTx, height: number, blockHashHex: string): void {
    if (draft.msgs.length !== 1) return;
    const msg = draft.msgs[0].msg as Record<string, unknown> & { '@type': string };
    const create = msg['@type'] === '/minievm.evm.v1.MsgCreate';
    if (!create && msg['@type'] !== '/minievm.evm.v1.MsgCall') return;
    if (height !== this.height) {
      this.height = height;
      this.txIndex = 0;
      this.logIndex = 0;
      this.cumulativeGas = 0;
    }
    const rng = this.rng;
    const hash = '0x' + rng.bytes(32).toString('hex');
    const blockHash = '0x' + blockHashHex.toLowerCase();
    const from = draft.signer.hex;
    const ok = !draft.fail;
    const logs: Log[] = [];
    if (ok) {
      for (const e of draft.msgs[0].events) {
        const a = e.type === 'evm' ? e.attributes.find((x) => x.key === 'log') : undefined;
        if (a) logs.push(JSON.parse(a.value) as Log);
      }
    }
    // A creation's address is the `contract` of its contract_created event.
    const created = create ? draft.msgs[0].events.find((e) => e.type === 'contract_created')?.attributes[0].value : undefined;
    const to = create ? (created ?? '') : String(msg.contract_addr);
    this.cumulativeGas += built.gasUsed;
    const txIndex = quantity(this.txIndex++);
    const blockNumber = quantity(height);
    const receipt = {
      // Nodes send more than the API keeps (dropped at import): these two stand for them.
      blobGasUsed: '0x0',
      blockHash,
      blockNumber,
      contractAddress: create ? to : null,
      cumulativeGasUsed: quantity(this.cumulativeGas),
      effectiveGasPrice: quantity(rng.chance(0.5) ? 0 : rng.int(1, 4095) * 1_000_000),
      from,
      gasUsed: quantity(built.gasUsed),
      logs: logs.map((l) => ({
        address: l.address.toLowerCase(),
        topics: l.topics,
        data: l.data,
        blockNumber,
        transactionHash: hash,
        transactionIndex: txIndex,
        blockHash,
        logIndex: quantity(this.logIndex++),
        removed: false,
      })),
      logsBloom: '0x' + (logs.length ? rng.bytes(256).toString('hex') : '00'.repeat(256)),
      status: ok ? '0x1' : '0x0',
      // go-ethereum prints a creation's `to` as null; the API must serve "".
      to: create ? null : to,
      transactionHash: hash,
      transactionIndex: txIndex,
      type: rng.chance(0.7) ? '0x2' : '0x0',
    };
    this.evmSequence++;
    this.receipts.writeObject({ sequence: this.evmSequence, height, receipt });
    if (!ok) return;

    const input = create ? String(msg.code) : String(msg.input);
    const top = this.frames(
      create ? 'CREATE' : 'CALL',
      from,
      to,
      input,
      built.gasWanted,
      built.gasUsed,
      logs.map((l) => l.address.toLowerCase()),
    );
    this.flatten(top, -1, { next: 0 }, height, hash);
  }

  /**
   * A plausible call tree: token calls through a proxy (DELEGATECALL), swaps touching both
   * tokens (nested CALLs with a STATICCALL balance check below), mints calling back the
   * receiver. Quantities are minimal hex (odd lengths included), as tracers print them.
   */
  private frames(type: string, from: string, to: string, input: string, gas: number, gasUsed: number, logAddresses: string[]): Frame {
    const rng = this.rng;
    const sub = (t: string, f: string, target: string, inp: string, g: number, calls?: Frame[]): Frame => ({
      type: t,
      from: f,
      to: target,
      input: inp,
      output: t === 'STATICCALL' ? '0x' + word(quantity(rng.int(0, 1 << 30))) : '0x1',
      value: '0x0',
      gas: quantity(g),
      gasUsed: quantity(Math.floor(g * (0.2 + rng.float() * 0.5))),
      calls,
    });
    const top: Frame = {
      type,
      from,
      to,
      input,
      output: '0x' + word('0x1'),
      value: rng.chance(0.1) ? quantity(rng.int(1, 0xfff)) : '0x0',
      gas: quantity(gas),
      gasUsed: quantity(gasUsed),
      calls: [],
    };
    const selector = input.slice(0, 10);
    const calls = top.calls as Frame[];
    if (type === 'CREATE') {
      if (rng.chance(0.5)) calls.push(sub('STATICCALL', to, IMPLEMENTATION, '0x01ffc9a7' + word('0x80ac58cd'), 30_000));
    } else if (selector === '0x38ed1739') {
      // swap (its logs: offered token, asked token, pair): pull the offered token through its
      // proxy, check the asked token's balance, push it
      const args = input.slice(10);
      const owner = '0x' + args.slice(128 + 24, 192);
      const [offered, asked] = logAddresses;
      const pull = '0x23b872dd' + word(owner) + word(to) + args.slice(0, 64);
      calls.push(
        sub('CALL', to, offered, pull, 60_000, [sub('DELEGATECALL', offered, IMPLEMENTATION, pull, 50_000)]),
        sub('STATICCALL', to, asked, '0x70a08231' + word(to), 10_000),
        sub('CALL', to, asked, '0xa9059cbb' + word(owner) + word(quantity(rng.int(1, 1 << 20))), 60_000),
      );
    } else if (selector === '0xa9059cbb') {
      calls.push(sub('DELEGATECALL', to, IMPLEMENTATION, input, 40_000));
    } else if (logAddresses.length > 0 && rng.chance(0.6)) {
      // NFT mint / transfer: the receiver hook
      const receiver = '0x' + input.slice(10 + 24, 10 + 64);
      calls.push(sub('CALL', to, receiver, '0x150b7a02' + word(from) + word('0x0') + input.slice(-64), 25_000));
    }
    return top;
  }

  private flatten(f: Frame, parent: number, counter: { next: number }, height: number, hash: string): void {
    const index = counter.next++;
    this.internalSequence++;
    this.lastInternalHeight = height;
    this.internals.writeObject({
      sequence: this.internalSequence,
      height,
      hash,
      index,
      parent_index: parent,
      type: f.type,
      from: f.from,
      to: f.to,
      input: f.input,
      output: f.output,
      value: f.value,
      gas: f.gas,
      gasUsed: f.gasUsed,
    });
    for (const c of f.calls ?? []) this.flatten(c, index, counter, height, hash);
  }
}
