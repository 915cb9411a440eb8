import { toBech32 } from '../lib/address';
import { Population, createValidators, moduleAddress } from './chain';
import { ComposeEnv, composeTx } from './compose';
import { CosmosMsgs } from './cosmos';
import { EvmVm } from './evm';
import { EvmRecorder } from './evm-receipts';
import { MoveVm } from './move';
import { NftBook } from './nft';
import type { VmType } from '../lib/vm';
import { DEMO_COMMIT, DEMO_SOURCE, GENERATE_DEFAULTS, Preset, resolveParams } from './params';
import { Prng } from './prng';
import { writeRichList } from './richlist';
import { buildTx } from './tx';
import { VmAdapter } from './vm';
import { WasmVm } from './wasm';
import { DumpFile, DumpWriter, prepareOutputDir } from './writer';
import { BlockClock, planBlocks } from './blocks';

export interface GenerateDumpOptions {
  vm: VmType;
  out: string;
  preset?: Preset;
  /** Overrides the preset's tx count. */
  txs?: number;
  /**
   * Rich-list holders per denom, on every VM (EVM: per ERC-20 contract; Wasm / Move: per bank
   * denom). Default: the preset's on EVM, none elsewhere.
   */
  holders?: number;
  /**
   * NFTs beyond those the txs mint (NftBook.extraTokens: spread over the collections, minted at
   * each one's creation without txs), for size benches; default 0.
   */
  nfts?: number;
  seed?: number;
  gzip?: boolean;
  force?: boolean;
  /**
   * The chain as it was at this height: the same blocks and txs up to it (every stream is
   * consumed block by block), the NFT and rich-list state of that moment, `/status` at it.
   * For tests of `follow`, whose source grows block by block. Default: the whole chain.
   */
  untilHeight?: number;
  /** Called after every block with the running totals. */
  onProgress?: (progress: GenerateProgress) => void;
}

export interface GenerateProgress {
  blocks: number;
  totalBlocks: number;
  txs: number;
  totalTxs: number;
}

export interface GenerateSummary {
  chainId: string;
  vm: VmType;
  preset: Preset;
  seed: number;
  out: string;
  blocks: number;
  txs: number;
  collections: number;
  tokens: number;
  files: { name: DumpFile; path: string; records: number; bytes: number }[];
  /** Uncompressed bytes over all files. */
  bytes: number;
}

/**
 * Writes a synthetic chain as an NDJSON dump (docs/dump-format.md). Output is a pure function of
 * (vm, preset, txs, seed). Blocks and txs are streamed; only accounts, collections and tokens
 * are held in memory.
 */
export async function generateDump(opts: GenerateDumpOptions): Promise<GenerateSummary> {
  // generate's one resolve step, for the command and for code alike (the command's table shows the same defaults)
  const seed = opts.seed ?? GENERATE_DEFAULTS.seed;
  const preset = opts.preset ?? GENERATE_DEFAULTS.preset;
  const nfts = opts.nfts ?? GENERATE_DEFAULTS.nfts;
  const gzip = opts.gzip ?? GENERATE_DEFAULTS.gzip;
  const force = opts.force ?? GENERATE_DEFAULTS.force;
  const p = resolveParams(opts.vm, preset, opts.txs, seed);
  const last = Math.min(p.blocks, opts.untilHeight ?? p.blocks);
  if (!Number.isSafeInteger(last) || last < 1) throw new Error(`untilHeight must be a whole number ≥ 1, got ${opts.untilHeight}`);
  const holders = opts.holders ?? (p.vm === 'evm' ? p.richHolders : 0);
  const stream = (name: string) => new Prng(`indexer-api/generate/${p.vm}/${preset}/${seed}/${name}`);
  prepareOutputDir(opts.out, force);
  const out = new DumpWriter(opts.out, gzip);

  const validators = createValidators(p, stream('validators'));
  const pop = new Population(p, stream('accounts'));
  const contractsRng = stream('contracts');
  const vm: VmAdapter = p.vm === 'move' ? new MoveVm() : p.vm === 'wasm' ? new WasmVm(contractsRng, p.prefix) : new EvmVm(contractsRng);
  const book = new NftBook(p);
  const env: ComposeEnv = {
    p,
    pop,
    book,
    vm,
    cosmos: new CosmosMsgs(vm, p.prefix),
    tokenTxs: p.vm === 'move' ? undefined : out.file('token_txs'),
  };
  const feeEnv = { feeCollector: toBech32(moduleAddress('fee_collector'), p.prefix) };

  // Written once the blocks are known: internal_tx_height follows the chain's internal txs.
  const meta = (internalTxHeight: number): void =>
    out.file('meta').writeObject({
      chain_id: p.chainId,
      vm_type: p.vm,
      bech32_prefix: p.prefix,
      version: `v1.0.0-${preset}`,
      commit_hash: DEMO_COMMIT,
      source: preset === 'demo' ? DEMO_SOURCE : DEMO_SOURCE.replace('demo', 'scale'),
      height: last,
      internal_tx_height: internalTxHeight,
      rich_list_height: holders > 0 ? last : 0,
    });
  for (const v of validators) {
    out.file('validators').writeObject({ proposer: v.proposer, moniker: v.moniker, operator_address: v.proposer });
  }

  const counts = planBlocks(p, stream('plan'));
  const clock = new BlockClock(p.genesisMs);
  const blockRng = stream('blocks');
  const txRng = stream('txs');
  const proposerWeights = validators.map((_, i) => (i === 0 ? 3 : 1));
  const blocks = out.file('blocks');
  const txs = out.file('txs');
  const evm = vm instanceof EvmVm ? new EvmRecorder(stream('evm'), out.file('evm_txs'), out.file('evm_internal_txs')) : undefined;
  let sequence = 0;
  for (let height = 1; height <= last; height++) {
    const t = clock.next(blockRng);
    const proposer = validators[blockRng.weighted(proposerWeights)].proposer;
    const hash = blockRng.bytes(32).toString('hex').toUpperCase();
    const block = { height, timeText: t.text };
    let gasUsed = 0;
    let gasWanted = 0;
    const fees = new Map<string, bigint>();
    for (let i = 0; i < counts[height - 1]; i++) {
      sequence++;
      const slot = { ...block, ms: t.ms, sequence, ordinal: sequence - 1 };
      const draft = composeTx(env, txRng, slot);
      const built = buildTx(feeEnv, draft, block, sequence, txRng);
      txs.write(built.line);
      evm?.add(draft, built, height, hash);
      gasUsed += built.gasUsed;
      gasWanted += built.gasWanted;
      for (const c of built.fee) fees.set(c.denom, (fees.get(c.denom) ?? 0n) + BigInt(c.amount));
    }
    const n = counts[height - 1];
    const totalFee =
      n === 0
        ? null
        : [...fees.entries()]
            .filter(([, a]) => a > 0n)
            .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
            .map(([denom, a]) => ({ denom, amount: a.toString() }));
    blocks.writeObject({
      height,
      hash,
      timestamp: t.text,
      block_time: t.blockTime,
      proposer,
      gas_used: gasUsed,
      gas_wanted: gasWanted,
      tx_count: n,
      total_fee: totalFee,
    });
    await out.flush();
    opts.onProgress?.({ blocks: height, totalBlocks: p.blocks, txs: sequence, totalTxs: p.txs });
  }

  // rollytics' /status rule (docs/api-contract.md#status): the highest height with internal txs, or the
  // latest block when no later block has txs.
  const top = evm?.lastInternalHeight ?? 0;
  const lastTxHeight = counts.slice(0, last).reduce((h, n, i) => (n > 0 ? i + 1 : h), 0);
  meta(top === 0 ? 0 : lastTxHeight > top ? top : last);

  let tokens = 0;
  for (const col of book.collections) {
    out.file('collections').writeObject(book.collectionRecord(col));
    for (const token of col.tokens) {
      if (token.burned) continue;
      out.file('tokens').writeObject(book.tokenRecord(token));
      if (++tokens % 4096 === 0) await out.flush();
    }
  }
  for (const token of book.extraTokens(nfts, pop.accounts, seed)) {
    out.file('tokens').writeObject(book.tokenRecord(token));
    if (++tokens % 4096 === 0) await out.flush();
  }
  if (holders > 0) await writeRichList(p, pop, vm instanceof EvmVm ? vm.erc20 : undefined, stream('richlist'), out, holders, last);

  const files = await out.close();
  return {
    chainId: p.chainId,
    vm: p.vm,
    preset,
    seed,
    out: opts.out,
    blocks: last,
    txs: sequence,
    collections: book.collections.length,
    tokens,
    files,
    bytes: files.reduce((a, f) => a + f.bytes, 0),
  };
}
