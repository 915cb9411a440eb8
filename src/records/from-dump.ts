import { amountKey, isAmount } from '../lib/amount';
import { toBech32, toHex0x } from '../lib/address';
import { normalizeName } from '../lib/normalize';
import { formatMicros, formatSeconds, toMicros, type UtcTime } from '../lib/time';
import { blockJson, Coin } from '../wire/block';
import { nftJson } from '../wire/nft';
import { STATUS_EXTENSION_MIN, STATUS_EXTENSIONS } from '../wire/status';
import { DumpError } from './dump-error';
import { loadEvm } from './evm';
import { describe, Fields } from './fields';
import { BATCH_BYTES, LineBatch, NdjsonLine } from './ndjson';
import { BufferPool } from './parse/buffers';
import { openTxParsing } from './parse/pool';
import { heapTrimmer } from './heap';
import { outputSize, TxJob, TxRows } from './parse/tx';
import { LoadCheckpoint, NO_OWNER, SnapshotWriter } from '../snapshot/writer';
import { EVM_INTERNAL_TXS_META_KEY } from '../snapshot/schema';
import { blockTxCounts, metaValues } from '../snapshot/queries/base-rows';

import { VM_TYPES, type VmType } from '../lib/vm';

export interface ImportProgress {
  /** a dump file started (or a finalize step, with file undefined) */
  stage(name: string): void;
  /** n more records of the current stage were loaded */
  records(n: number): void;
  /**
   * the current stage's size once known: `total` rows, `carried` of them already there (staged
   * by an earlier run of a resumed crawl) — for a percentage and an ETA
   */
  expect?(total: number, carried: number): void;
}

export interface ImportSummary {
  chainId: string;
  vmType: VmType;
  prefix: string;
  counts: Record<string, number>;
}

interface Meta {
  chainId: string;
  vmType: VmType;
  prefix: string;
}

const UINT_STRING = /^(0|[1-9][0-9]*)$/;
/** The main thread's heap before a collection is forced during a records source's txs (heap.ts). */
const MAIN_HEAP_BYTES = 160 * 1024 * 1024;
/** Records per parser job when a source yields records one by one. */
const JOB_RECORDS = 1000;
/** Pooled buffers of the txs stage: a line batch or a job's output fits (BufferPool). */
const JOB_BUFFER_BYTES = outputSize(BATCH_BYTES + 256 * 1024);

/**
 * Where records come from. Every source yields records in the dump format (docs/dump-format.md)
 * as JSON text, so a dump directory, a rollytics database and a live API are all validated and
 * derived by the same code. `file`/`line` name the record in errors (a file and line, or a
 * table and row, or a URL and item).
 */
export interface RecordSource {
  /** e.g. `dump ./dir`, recorded as the snapshot's source */
  describe: string;
  /** the records of one kind (`meta`, `blocks`, `txs`, ...), or undefined if the source has none */
  records(kind: string): AsyncIterable<NdjsonLine> | undefined;
  /**
   * The same records as raw line batches, for sources that read files (handed to parser threads
   * undecoded), each in a buffer from `alloc`.
   */
  lineBatches?(kind: string, alloc: (n: number) => Buffer): AsyncIterable<LineBatch> | undefined;
}

export interface LoadOptions {
  /** threads parsing txs besides the loader's (0: parse inline) */
  parseThreads: number;
  /**
   * A resumable load (an import's crawl, issue #43; the writer is SnapshotWriter.resumable):
   * the writer commits a checkpoint every `every` txs and at the end of the txs, then the
   * source is told through which sequence the txs are in (`loaded`: its staging lets them go).
   * With `from` (the writer's resumedFrom) the load goes on after that checkpoint: the kinds
   * before the txs are in the file, the txs up to its sequence too (the source yields only those
   * after it), `seen` gives the txs of each height up to it (for the blocks' tx_count check).
   */
  resumable?: {
    every: number;
    loaded(lastSequence: number): void;
    from?: LoadCheckpoint;
    seen(through: number): Map<number, number>;
  };
}

/** What the stages of an import share: the chain's meta and what later kinds are checked against. */
class LoadState {
  private loadedMeta: Meta | undefined;
  readonly counts: Record<string, number> = {};
  /** proposer → moniker and operator address, for the blocks */
  readonly validators = new Map<string, { moniker: string; operatorAddress: string }>();
  /** height → expected tx count and line, to check against txs.ndjson */
  readonly blocks = new Map<number, { txCount: number; line: number; seen: number }>();
  /** the highest block so far: on top of a base snapshot the new blocks continue its heights */
  lastHeight: number;
  /** collection address (hex) → names, for the tokens */
  readonly collections = new Map<string, { name: string; originName: string }>();
  readonly seenTokens = new Set<string>();
  readonly denoms = new Set<string>();
  /** the kinds the source has (each() found records for them, possibly none) */
  readonly present = new Set<string>();

  constructor(
    readonly source: RecordSource,
    readonly writer: SnapshotWriter,
    readonly progress: ImportProgress,
    readonly options: LoadOptions,
  ) {
    this.lastHeight = writer.base?.height ?? 0;
  }

  get hasMeta(): boolean {
    return this.loadedMeta !== undefined;
  }
  /** the meta record; every kind after `meta` reads it */
  get meta(): Meta {
    if (!this.loadedMeta) throw new Error('the meta record is read first');
    return this.loadedMeta;
  }
  set meta(m: Meta) {
    this.loadedMeta = m;
  }

  /** Runs `fn` on every record of one kind (a missing optional kind loads nothing). */
  async each(name: string, required: boolean, fn: (f: Fields) => void, allowed: readonly string[], present?: () => void): Promise<void> {
    const records = this.source.records(name);
    if (!records && required) throw new DumpError(`${name}.ndjson`, 0, '(file)', `missing from ${this.source.describe}`);
    this.counts[name] = 0;
    if (!records) return;
    this.present.add(name);
    this.writer.beginKind(name);
    present?.();
    this.progress.stage(name);
    let batch = 0;
    for await (const at of records) {
      fn(new Fields(at, allowed));
      this.counts[name]++;
      if (++batch === 1000) {
        this.progress.records(batch);
        batch = 0;
      }
    }
    this.progress.records(batch);
  }
}

/**
 * One kind of record (one dump file, docs/dump-format.md): its fields, whether a source must
 * have it, its parser (validates one record into R; checks against earlier kinds) and its
 * writer (R into the snapshot). `before`/`after` run whether or not the source has the kind;
 * `begin` only when it has it (before its first record).
 */
interface RecordKind<R> {
  name: string;
  fields: readonly string[];
  required?(s: LoadState): boolean;
  before?(s: LoadState): void;
  begin?(s: LoadState): void;
  parse(f: Fields, s: LoadState): R;
  write(r: R, f: Fields, s: LoadState): void;
  after?(s: LoadState): void;
}

/** A step of the import: a record kind, or a stage with its own loop (txs, the EVM kinds). */
interface Stage {
  name: string;
  load(s: LoadState): Promise<void>;
}

function recordKind<R>(k: RecordKind<R>): Stage {
  return {
    name: k.name,
    async load(s) {
      k.before?.(s);
      await s.each(k.name, k.required?.(s) ?? false, (f) => k.write(k.parse(f, s), f, s), k.fields, k.begin && (() => k.begin?.(s)));
      k.after?.(s);
    },
  };
}

/** Duplicate keys that a temporary unique index (or the primary key) finds, as the record's error. */
function onConstraint(f: Fields, code: string, field: string, reason: string, insert: () => void): void {
  try {
    insert();
  } catch (e) {
    if ((e as { code?: string }).code === code) throw f.error(field, reason);
    throw e;
  }
}

interface MetaRecord extends Meta {
  version: string;
  commitHash: string;
  source: string;
  height?: number;
  internalTxHeight?: number;
  /** EVM: false when the source does not index internal txs (rollytics' internal-tx extension off); absent: as before (a new file: indexed) */
  evmInternalTxs?: boolean;
  /** absent on top of a base: the base's stays (follow refreshes the rich list apart from the blocks) */
  richListHeight?: number;
  /** rollytics' /status extension fields given in the dump (src/wire/status.ts) */
  extensions: [string, number][];
}

interface BlockRecord {
  height: number;
  timestamp: UtcTime;
  txCount: number;
  json: string;
}

interface TokenRecord {
  collectionAddr: Buffer;
  tokenId: string;
  objectAddr?: Buffer;
  /** undefined: owner "" — no owner account (rollytics serves such NFTs with owner ""; no account lists them) */
  owner: Buffer | undefined;
  height: number;
  json: string;
}

/** The kinds of an import, in load order: each one may check against the ones before it. */
const STAGES: readonly Stage[] = [
  recordKind<MetaRecord>({
    name: 'meta',
    fields: [
      'chain_id',
      'vm_type',
      'bech32_prefix',
      'version',
      'commit_hash',
      'source',
      'height',
      'internal_tx_height',
      'rich_list_height',
      'evm_internal_txs',
      ...STATUS_EXTENSIONS,
    ],
    required: () => true,
    parse(f, s) {
      if (s.hasMeta) throw f.error('(line)', 'meta.ndjson must hold exactly one record');
      const vm = f.string('vm_type');
      if (!VM_TYPES.includes(vm as VmType)) throw f.error('vm_type', `must be one of ${VM_TYPES.join(', ')}, got ${describe(vm)}`);
      if (f.has('evm_internal_txs') && vm !== 'evm') throw f.error('evm_internal_txs', `is for EVM chains (this is a ${vm} chain)`);
      const prefix = f.string('bech32_prefix', { nonEmpty: true });
      if (!/^[a-z0-9]+$/.test(prefix)) throw f.error('bech32_prefix', `must be lower-case letters and digits, got ${describe(prefix)}`);
      return {
        chainId: f.string('chain_id', { nonEmpty: true }),
        vmType: vm as VmType,
        prefix,
        version: f.string('version', { optional: 'dev' }),
        commitHash: f.string('commit_hash', { optional: 'unknown' }),
        source: f.string('source', { optional: s.source.describe }),
        height: f.has('height') ? f.uint('height') : undefined,
        // Absent: computed from evm_internal_txs at the end (src/snapshot/evm-writer.ts finishEvm).
        internalTxHeight: f.has('internal_tx_height') ? f.uint('internal_tx_height') : undefined,
        evmInternalTxs: f.has('evm_internal_txs') ? f.bool('evm_internal_txs') : undefined,
        richListHeight: f.has('rich_list_height') || !s.writer.base ? f.uint('rich_list_height', { optional: 0 }) : undefined,
        // rollytics' /status extension fields: recorded when given, served as recorded (src/wire/status.ts).
        extensions: STATUS_EXTENSIONS.filter((k) => f.has(k)).map((k): [string, number] => [k, f.int(k, STATUS_EXTENSION_MIN[k])]),
      };
    },
    write(r, _f, s) {
      const { writer } = s;
      s.meta = { chainId: r.chainId, vmType: r.vmType, prefix: r.prefix };
      writer.setMeta('chain_id', r.chainId);
      writer.setMeta('vm_type', r.vmType);
      writer.setMeta('bech32_prefix', r.prefix);
      writer.setMeta('version', r.version);
      writer.setMeta('commit_hash', r.commitHash);
      writer.setMeta('source', r.source);
      if (r.height !== undefined) writer.setMeta('height', r.height);
      if (r.internalTxHeight !== undefined) writer.setMeta('internal_tx_height', r.internalTxHeight);
      if (r.evmInternalTxs !== undefined) writer.setMeta(EVM_INTERNAL_TXS_META_KEY, r.evmInternalTxs ? 1 : 0);
      if (r.richListHeight !== undefined) writer.setMeta('rich_list_height', r.richListHeight);
      for (const [k, v] of r.extensions) writer.setMeta(k, v);
    },
    after(s) {
      if (!s.hasMeta) throw new DumpError('meta.ndjson', 1, '(file)', 'holds no record');
    },
  }),

  recordKind<{ proposer: string; moniker: string; operatorAddress: string }>({
    name: 'validators',
    fields: ['proposer', 'moniker', 'operator_address'],
    parse(f, { validators }) {
      const proposer = f.string('proposer', { nonEmpty: true });
      if (validators.has(proposer)) throw f.error('proposer', `duplicate proposer ${describe(proposer)}`);
      return { proposer, moniker: f.string('moniker'), operatorAddress: f.string('operator_address', { nonEmpty: true }) };
    },
    write(v, _f, { validators, writer }) {
      validators.set(v.proposer, { moniker: v.moniker, operatorAddress: v.operatorAddress });
      writer.insertValidator(v.proposer, v.moniker, v.operatorAddress);
    },
  }),

  recordKind<BlockRecord>({
    name: 'blocks',
    fields: ['height', 'chain_id', 'hash', 'timestamp', 'block_time', 'proposer', 'gas_used', 'gas_wanted', 'tx_count', 'total_fee'],
    required: (s) => !s.writer.base,
    parse(f, s) {
      const base = s.writer.base;
      const height = f.uint('height', { min: 1 });
      if (base && s.blocks.size === 0 && height !== base.height + 1) {
        throw f.error(
          'height',
          height <= base.height
            ? `${height} is already in the base snapshot ${base.file} (its highest block is ${base.height}): the new source must start at height ${base.height + 1}`
            : `${height} leaves a gap after the base snapshot ${base.file} (its highest block is ${base.height}): the new source must start at height ${base.height + 1}`,
        );
      }
      if (height <= s.lastHeight) throw f.error('height', `must ascend: ${height} after ${s.lastHeight}`);
      s.lastHeight = height;
      const timestamp = f.time('timestamp');
      const txCount = f.uint('tx_count');
      const totalFee = coins(f, 'total_fee');
      if ((txCount === 0) !== (totalFee === null)) {
        throw f.error('total_fee', txCount === 0 ? 'must be null for a block without txs' : 'must be an array for a block with txs');
      }
      const proposer = f.string('proposer');
      const v = s.validators.get(proposer);
      s.blocks.set(height, { txCount, line: f.at.line, seen: 0 });
      return {
        height,
        timestamp,
        txCount,
        json: blockJson({
          chainId: f.string('chain_id', { optional: s.meta.chainId }),
          height,
          hashHex: f.hex32('hash'),
          blockTimeMs: f.uint('block_time'),
          timestamp: formatSeconds(timestamp),
          gasUsed: f.uint('gas_used'),
          gasWanted: f.uint('gas_wanted'),
          txCount,
          totalFee,
          proposer: { moniker: v?.moniker ?? '', operatorAddress: v?.operatorAddress ?? proposer },
        }),
      };
    },
    write(b, _f, { writer }) {
      writer.insertBlock(b.height, toMicros(b.timestamp), b.txCount, b.json);
    },
    after(s) {
      if (s.blocks.size === 0 && !s.writer.base) throw new DumpError('blocks.ndjson', 1, '(file)', 'holds no block');
      s.writer.setMeta('max_height', s.lastHeight);
    },
  }),

  {
    // parsed on threads (parse/); its own loop
    name: 'txs',
    async load(s) {
      const r = s.options.resumable;
      const from = r?.from;
      // a resumable load commits every r.every txs and at the end (the source then lets them go)
      const checkpoint =
        r &&
        ((count: number, lastSequence: number): void => {
          s.writer.checkpoint({ ...s.counts, txs: count }, lastSequence);
          r.loaded(lastSequence);
        });
      s.counts.txs = await loadTxs(
        s.source,
        s.meta.prefix,
        s.blocks,
        s.writer,
        s.progress,
        s.options.parseThreads,
        checkpoint && { every: r.every, at: checkpoint, count: from?.counts.txs ?? 0, lastSequence: from?.lastSequence },
      );
      for (const [height, b] of s.blocks) {
        if (b.seen !== b.txCount) {
          throw new DumpError('blocks.ndjson', b.line, 'tx_count', `block ${height} says ${b.txCount} txs, txs.ndjson has ${b.seen}`);
        }
      }
      s.blocks.clear();
    },
  },

  recordKind<{ addr: Buffer; height: number; name: string; originName: string; creator: Buffer; timestamp: string }>({
    name: 'collections',
    fields: ['object_addr', 'creator', 'name', 'origin_name', 'height', 'timestamp'],
    parse(f, s) {
      const addr = f.address('object_addr', s.meta.prefix);
      if (s.collections.has(addr.toString('hex'))) throw f.error('object_addr', `duplicate collection ${toHex0x(addr)}`);
      const name = f.string('name');
      const originName = f.string('origin_name', { optional: '' });
      return { addr, name, originName, height: f.uint('height'), creator: f.address('creator', s.meta.prefix), timestamp: formatMicros(f.time('timestamp')) };
    },
    write(c, _f, { collections, writer }) {
      collections.set(c.addr.toString('hex'), { name: c.name, originName: c.originName });
      writer.insertCollection(
        c.addr,
        c.height,
        c.name,
        c.originName,
        normalizeName(c.name),
        normalizeName(c.originName),
        writer.accountId(c.creator),
        c.timestamp,
      );
    },
  }),

  recordKind<TokenRecord>({
    name: 'tokens',
    fields: ['collection_addr', 'token_id', 'object_addr', 'owner', 'uri', 'height', 'timestamp'],
    parse(f, s) {
      const m = s.meta;
      const collectionAddr = f.address('collection_addr', m.prefix);
      const c = s.collections.get(collectionAddr.toString('hex'));
      if (!c) throw f.error('collection_addr', `collection ${toHex0x(collectionAddr)} is not in collections.ndjson`);
      const tokenId = f.string('token_id', { nonEmpty: true });
      const key = collectionAddr.toString('hex') + '\u0000' + tokenId;
      if (s.seenTokens.has(key)) throw f.error('token_id', `duplicate token ${describe(tokenId)} in collection ${toHex0x(collectionAddr)}`);
      s.seenTokens.add(key);
      let objectAddr: Buffer | undefined;
      if (m.vmType === 'move') objectAddr = f.address('object_addr', m.prefix);
      else if (f.has('object_addr')) throw f.error('object_addr', `only Move NFTs have an object address (this is a ${m.vmType} chain)`);
      const owner = f.string('owner') === '' ? undefined : f.address('owner', m.prefix);
      const height = f.uint('height');
      return {
        collectionAddr,
        tokenId,
        objectAddr,
        owner,
        height,
        json: nftJson({
          collectionAddr: toHex0x(collectionAddr),
          collectionName: c.name,
          collectionOriginName: c.originName,
          objectAddr: objectAddr ? toHex0x(objectAddr) : '',
          owner: owner ? toBech32(owner, m.prefix) : '',
          tokenId,
          uri: f.string('uri'),
          height,
          timestamp: formatMicros(f.time('timestamp')),
        }),
      };
    },
    write(t, _f, { writer }) {
      writer.insertNft(
        t.collectionAddr,
        t.tokenId,
        t.height,
        t.owner ? writer.accountId(t.owner) : NO_OWNER,
        t.objectAddr ? writer.accountId(t.objectAddr) : null,
        t.json,
      );
    },
    after(s) {
      s.seenTokens.clear();
    },
  }),

  recordKind<{ collectionAddr: Buffer; tokenId: string; sequence: number }>({
    name: 'token_txs',
    fields: ['collection_addr', 'token_id', 'sequence'],
    parse(f, s) {
      const collectionAddr = f.address('collection_addr', s.meta.prefix);
      const tokenId = f.string('token_id', { nonEmpty: true });
      const sequence = f.uint('sequence', { min: 1 });
      if (!s.writer.txExists(sequence)) throw f.error('sequence', `no tx with sequence ${sequence} in txs.ndjson`);
      return { collectionAddr, tokenId, sequence };
    },
    write(l, f, { writer }) {
      onConstraint(f, 'SQLITE_CONSTRAINT_PRIMARYKEY', 'sequence', 'duplicate link', () => writer.insertNftTx(l.collectionAddr, l.tokenId, l.sequence));
    },
  }),

  // (denom, account) must be unique; a temporary index makes a duplicate fail on its line. Built
  // only when the source has a rich list: on a base (follow) it would cost O(rich list) for nothing.
  recordKind<{ denom: string; account: Buffer; amount: string }>({
    name: 'richlist',
    fields: ['denom', 'account', 'amount'],
    begin({ writer }) {
      writer.beginHolders();
    },
    parse(f, s) {
      const denom = f.string('denom', { nonEmpty: true }).toLowerCase();
      const account = f.address('account', s.meta.prefix);
      const amount = f.string('amount');
      if (!isAmount(amount)) throw f.error('amount', `must be a decimal integer string, got ${describe(amount)}`);
      return { denom, account, amount };
    },
    write(h, f, { writer }) {
      onConstraint(f, 'SQLITE_CONSTRAINT_UNIQUE', 'account', `duplicate holder for denom ${describe(h.denom)}`, () =>
        writer.insertHolder(h.denom, amountKey(h.amount), h.account),
      );
    },
    after({ writer, present }) {
      if (present.has('richlist')) writer.endHolders();
    },
  }),

  recordKind<{ denom: string; contract: Buffer }>({
    name: 'denom_contracts',
    fields: ['denom', 'contract'],
    parse(f, s) {
      if (s.meta.vmType !== 'evm') throw f.error('(file)', `denom_contracts is for EVM chains (this is a ${s.meta.vmType} chain)`);
      const denom = f.string('denom', { nonEmpty: true }).toLowerCase();
      if (s.denoms.has(denom)) throw f.error('denom', `duplicate denom ${describe(denom)}`);
      s.denoms.add(denom);
      const contract = f.address('contract', s.meta.prefix);
      if (contract.length !== 20) throw f.error('contract', 'must be a 20-byte ERC-20 address');
      return { denom, contract };
    },
    write(d, _f, { writer }) {
      writer.insertDenomContract(d.denom, toHex0x(d.contract));
    },
  }),

  {
    // evm_txs, evm_internal_txs: their parsers and writers are in ./evm
    name: 'evm',
    load: (s) => loadEvm(s.each.bind(s), s.meta.vmType, s.meta.prefix, s.writer),
  },
];

/**
 * Reads every record of `source` into `writer`, validating each: the stages of STAGES in
 * order. Throws DumpError naming file:line:field on the first bad one.
 */
export async function loadRecords(source: RecordSource, writer: SnapshotWriter, progress: ImportProgress, options: LoadOptions): Promise<ImportSummary> {
  const s = new LoadState(source, writer, progress, options);
  const from = options.resumable?.from;
  if (from !== undefined) resumeState(s, from, options.resumable?.seen(from.lastSequence) ?? new Map());
  for (const stage of STAGES) {
    // a resumed load: the kinds before the txs are in the file
    if (from !== undefined && (stage.name === 'meta' || stage.name === 'validators' || stage.name === 'blocks')) continue;
    await stage.load(s);
  }
  const m = s.meta;
  return { chainId: m.chainId, vmType: m.vmType, prefix: m.prefix, counts: s.counts };
}

/** A resumed load's state at its checkpoint: the meta, the record counts, the blocks with the txs seen of each. */
function resumeState(s: LoadState, from: LoadCheckpoint, seen: Map<number, number>): void {
  const db = s.writer.db;
  const meta = metaValues(db);
  s.meta = { chainId: meta.get('chain_id') as string, vmType: meta.get('vm_type') as VmType, prefix: meta.get('bech32_prefix') as string };
  Object.assign(s.counts, from.counts);
  for (const k of ['meta', 'validators', 'blocks']) if (from.counts[k] !== undefined) s.present.add(k);
  for (const [height, txCount] of blockTxCounts(db)) {
    s.blocks.set(height, { txCount, line: 0, seen: seen.get(height) ?? 0 });
  }
}

/**
 * The txs stage: records are parsed in jobs (parse/tx.ts) on `threads` parser threads, in
 * order; the checks against other records (ascending sequence, existing block) and the
 * inserts stay on this thread. Returns the number of txs.
 */
async function loadTxs(
  source: RecordSource,
  prefix: string,
  blocks: Map<number, { seen: number }>,
  writer: SnapshotWriter,
  progress: ImportProgress,
  threads: number,
  checkpoint?: { every: number; at(count: number, lastSequence: number): void; count: number; lastSequence?: number },
): Promise<number> {
  let count = checkpoint?.count ?? 0;
  let lastSequence = checkpoint?.lastSequence ?? writer.base?.sequence ?? 0;
  let committed = count;
  const check = (file: string, line: number, sequence: number | undefined, height: number | undefined): void => {
    if (sequence !== undefined) {
      if (sequence <= lastSequence) throw new DumpError(file, line, 'sequence', `must ascend: ${sequence} after ${lastSequence}`);
      lastSequence = sequence;
    }
    if (height !== undefined) {
      const block = blocks.get(height);
      if (!block) throw new DumpError(file, line, 'tx.height', `no block ${height} in blocks.ndjson`);
      block.seen++;
    }
  };
  const buffers = new BufferPool(JOB_BUFFER_BYTES);
  const insert = (r: TxRows): void => {
    const out = Buffer.from(r.out.buffer, r.out.byteOffset, r.out.length);
    for (let k = 0, at = 0; k < r.sequences.length; at = r.ends[k++]) {
      check(r.files[k], r.lines[k], r.sequences[k], r.heights[k]);
      writer.insertTx(r.sequences[k], r.heights[k], out.subarray(at, at + 32), out.subarray(at + 32, r.ends[k]), r.accounts[k], r.signers[k], r.msgTypes[k]);
    }
    buffers.give(r.out.buffer as ArrayBuffer);
    buffers.give(r.input);
    count += r.sequences.length;
    progress.records(r.sequences.length);
    const bad = r.failure;
    if (bad) {
      check(bad.file, bad.line, bad.sequence, bad.height);
      throw new DumpError(bad.file, bad.line, bad.field, bad.reason);
    }
    if (checkpoint && count - committed >= checkpoint.every) {
      checkpoint.at(count, lastSequence);
      committed = count;
    }
  };
  const jobs = txJobs(source, (n) => buffers.take(n));
  if (!jobs) return count;
  progress.stage('txs');
  const parsing = openTxParsing(prefix, threads);
  try {
    const inFlight: Promise<TxRows>[] = [];
    // Line batches of a dump leave little garbage; records of a database / API a lot (heap.ts).
    let trim: (() => void) | undefined;
    for await (const job of jobs) {
      if ('packed' in job) (trim ??= heapTrimmer(MAIN_HEAP_BYTES))();
      job.out = buffers.take(JOB_BUFFER_BYTES).buffer as ArrayBuffer;
      const rows = parsing.parse(job);
      rows.catch(() => undefined); // awaited below, unless an earlier job fails first
      inFlight.push(rows);
      if (inFlight.length >= parsing.depth) insert(await (inFlight.shift() as Promise<TxRows>));
    }
    for (const rows of inFlight) insert(await rows);
    if (checkpoint && count > committed) checkpoint.at(count, lastSequence);
    return count;
  } finally {
    await parsing.close();
  }
}

/** The txs of a source as parser jobs: raw line batches when it has them, else records in groups. */
function txJobs(source: RecordSource, alloc: (n: number) => Buffer): AsyncIterable<TxJob> | undefined {
  const batches = source.lineBatches?.('txs', alloc);
  if (batches) {
    return (async function* () {
      for await (const lines of batches) yield { lines };
    })();
  }
  const records = source.records('txs');
  if (!records) return undefined;
  // Each record's text is written into the job's (pooled) buffer as it arrives, so it dies young
  // instead of waiting in an array for the job to fill (old-space garbage: +150 MB of heap on a
  // 1M-tx PostgreSQL import).
  return (async function* () {
    let bytes = alloc(BATCH_BYTES);
    let at = 0;
    let ends: number[] = [];
    let labels: string[] = [];
    let lines: number[] = [];
    const job = (): TxJob => {
      const j = { packed: { bytes: bytes.subarray(0, at), ends, labels, lines } };
      ends = [];
      labels = [];
      lines = [];
      at = 0;
      return j;
    };
    for await (const r of records) {
      const n = Buffer.byteLength(r.text);
      if (at + n > bytes.length || ends.length === JOB_RECORDS) {
        if (ends.length > 0) yield job();
        bytes = alloc(Math.max(BATCH_BYTES, n));
      }
      at += bytes.write(r.text, at);
      ends.push(at);
      labels.push(r.file);
      lines.push(r.line);
    }
    if (ends.length > 0) yield job();
  })();
}

function coins(f: Fields, field: string): Coin[] | null {
  const v = f.raw(field);
  if (v === null) return null;
  if (!Array.isArray(v)) throw f.error(field, `must be null or an array of {denom, amount}, got ${describe(v)}`);
  return v.map((c, i) => {
    const at = `${field}[${i}]`;
    if (!c || typeof c !== 'object' || Array.isArray(c)) throw f.error(at, 'must be {"denom": string, "amount": string}');
    const { denom, amount, ...rest } = c as Record<string, unknown>;
    if (Object.keys(rest).length) throw f.error(`${at}.${Object.keys(rest)[0]}`, 'unknown field');
    if (typeof denom !== 'string' || denom === '') throw f.error(`${at}.denom`, `must be a non-empty string, got ${describe(denom)}`);
    if (typeof amount !== 'string' || !UINT_STRING.test(amount)) throw f.error(`${at}.amount`, `must be a decimal integer string, got ${describe(amount)}`);
    return { denom, amount };
  });
}
