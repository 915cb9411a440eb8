import { existsSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { amountKey, canonicalAmount, isAmount } from '../lib/amount';
import { toBech32, toHex0x } from '../lib/address';
import { normalizeName } from '../lib/normalize';
import { formatMicros, formatSeconds, toMicros } from '../lib/time';
import { blockJson, Coin } from '../wire/block';
import { nftJson } from '../wire/nft';
import { holderJson } from '../wire/richlist';
import { STATUS_EXTENSION_MIN, STATUS_EXTENSIONS } from '../wire/status';
import { DumpError } from './dump-error';
import { loadEvm } from './evm';
import { describe, Fields } from './fields';
import { BATCH_BYTES, findDumpFile, LineBatch, NdjsonLine, readLineBatches, readNdjson } from './ndjson';
import { BufferPool } from './parse/buffers';
import { openTxParsing } from './parse/pool';
import { heapTrimmer } from './heap';
import { outputSize, TxJob, TxRows } from './parse/tx';
import { NO_OWNER, SnapshotWriter } from './writer';

import { VM_TYPES, type VmType } from '../lib/vm';

export { VM_TYPES, type VmType };

export interface ImportProgress {
  /** a dump file started (or a finalize step, with file undefined) */
  stage(name: string): void;
  /** n more records of the current stage were loaded */
  records(n: number): void;
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
  /** threads parsing txs besides the loader's (0: parse inline); default: one per CPU */
  parseThreads?: number;
}

/** A dump directory of NDJSON files (plain or .gz). */
export function dumpSource(dir: string): RecordSource {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new DumpError(dir, 0, '(dir)', 'dump directory not found');
  return {
    describe: `dump ${dir}`,
    records(kind) {
      const f = findDumpFile(dir, kind);
      return f ? readNdjson(dir, f) : undefined;
    },
    lineBatches(kind, alloc) {
      const f = findDumpFile(dir, kind);
      return f ? readLineBatches(dir, f, alloc) : undefined;
    },
  };
}

/** Reads a dump directory into `writer`; see loadRecords. */
export function loadDump(dir: string, writer: SnapshotWriter, progress: ImportProgress, options: LoadOptions = {}): Promise<ImportSummary> {
  return loadRecords(dumpSource(dir), writer, progress, options);
}

/**
 * Reads every record of `source` into `writer`, validating each. Throws DumpError naming
 * file:line:field on the first bad one.
 */
export async function loadRecords(source: RecordSource, writer: SnapshotWriter, progress: ImportProgress,
  options: LoadOptions = {}): Promise<ImportSummary> {
  const counts: Record<string, number> = {};
  async function each(name: string, required: boolean, fn: (f: Fields) => void, allowed: readonly string[]): Promise<void> {
    const records = source.records(name);
    if (!records && required) throw new DumpError(`${name}.ndjson`, 0, '(file)', `missing from ${source.describe}`);
    counts[name] = 0;
    if (!records) return;
    writer.beginKind(name);
    progress.stage(name);
    let batch = 0;
    for await (const at of records) {
      fn(new Fields(at, allowed));
      counts[name]++;
      if (++batch === 1000) { progress.records(batch); batch = 0; }
    }
    progress.records(batch);
  }

  // meta
  let meta: Meta | undefined;
  await each('meta', true, (f) => {
    if (meta) throw f.error('(line)', 'meta.ndjson must hold exactly one record');
    const vm = f.string('vm_type');
    if (!VM_TYPES.includes(vm as VmType)) throw f.error('vm_type', `must be one of ${VM_TYPES.join(', ')}, got ${describe(vm)}`);
    const prefix = f.string('bech32_prefix', { nonEmpty: true });
    if (!/^[a-z0-9]+$/.test(prefix)) throw f.error('bech32_prefix', `must be lower-case letters and digits, got ${describe(prefix)}`);
    meta = { chainId: f.string('chain_id', { nonEmpty: true }), vmType: vm as VmType, prefix };
    writer.setMeta('chain_id', meta.chainId);
    writer.setMeta('vm_type', meta.vmType);
    writer.setMeta('bech32_prefix', prefix);
    writer.setMeta('version', f.string('version', { optional: 'dev' }));
    writer.setMeta('commit_hash', f.string('commit_hash', { optional: 'unknown' }));
    writer.setMeta('source', f.string('source', { optional: source.describe }));
    if (f.has('height')) writer.setMeta('height', f.uint('height'));
    // Absent: computed from evm_internal_txs at the end (src/import/evm.ts).
    if (f.has('internal_tx_height')) writer.setMeta('internal_tx_height', f.uint('internal_tx_height'));
    writer.setMeta('rich_list_height', f.uint('rich_list_height', { optional: 0 }));
    // rollytics' /status extension fields: recorded when given, served as recorded (src/wire/status.ts).
    for (const k of STATUS_EXTENSIONS) if (f.has(k)) writer.setMeta(k, f.int(k, STATUS_EXTENSION_MIN[k]));
  }, ['chain_id', 'vm_type', 'bech32_prefix', 'version', 'commit_hash', 'source', 'height', 'internal_tx_height', 'rich_list_height',
    ...STATUS_EXTENSIONS]);
  if (!meta) throw new DumpError('meta.ndjson', 1, '(file)', 'holds no record');
  const m: Meta = meta;

  // validators
  const validators = new Map<string, { moniker: string; operatorAddress: string }>();
  await each('validators', false, (f) => {
    const proposer = f.string('proposer', { nonEmpty: true });
    if (validators.has(proposer)) throw f.error('proposer', `duplicate proposer ${describe(proposer)}`);
    const v = { moniker: f.string('moniker'), operatorAddress: f.string('operator_address', { nonEmpty: true }) };
    validators.set(proposer, v);
    writer.insertValidator(proposer, v.moniker, v.operatorAddress);
  }, ['proposer', 'moniker', 'operator_address']);

  // blocks: keep height → expected tx count and line, to check against txs.ndjson
  const blocks = new Map<number, { txCount: number; line: number; seen: number }>();
  // On top of a base snapshot the new blocks continue its heights, without overlap or gap.
  const base = writer.base;
  let lastHeight = base?.height ?? 0;
  await each('blocks', !base, (f) => {
    const height = f.uint('height', { min: 1 });
    if (base && blocks.size === 0 && height !== base.height + 1) {
      throw f.error('height', height <= base.height
        ? `${height} is already in the base snapshot ${base.file} (its highest block is ${base.height}): the new source must start at height ${base.height + 1}`
        : `${height} leaves a gap after the base snapshot ${base.file} (its highest block is ${base.height}): the new source must start at height ${base.height + 1}`);
    }
    if (height <= lastHeight) throw f.error('height', `must ascend: ${height} after ${lastHeight}`);
    lastHeight = height;
    const timestamp = f.time('timestamp');
    const txCount = f.uint('tx_count');
    const totalFee = coins(f, 'total_fee');
    if ((txCount === 0) !== (totalFee === null)) {
      throw f.error('total_fee', txCount === 0 ? 'must be null for a block without txs' : 'must be an array for a block with txs');
    }
    const proposer = f.string('proposer');
    const v = validators.get(proposer);
    blocks.set(height, { txCount, line: f.at.line, seen: 0 });
    writer.insertBlock(height, toMicros(timestamp), txCount, blockJson({
      chainId: f.string('chain_id', { optional: m.chainId }), height, hashHex: f.hex32('hash'),
      blockTimeMs: f.uint('block_time'), timestamp: formatSeconds(timestamp),
      gasUsed: f.uint('gas_used'), gasWanted: f.uint('gas_wanted'), txCount, totalFee,
      proposer: { moniker: v?.moniker ?? '', operatorAddress: v?.operatorAddress ?? proposer },
    }));
  }, ['height', 'chain_id', 'hash', 'timestamp', 'block_time', 'proposer', 'gas_used', 'gas_wanted', 'tx_count', 'total_fee']);
  if (blocks.size === 0 && !base) throw new DumpError('blocks.ndjson', 1, '(file)', 'holds no block');
  writer.setMeta('max_height', lastHeight);

  // txs
  counts.txs = await loadTxs(source, m.prefix, blocks, writer, progress, options.parseThreads ?? availableParallelism());
  for (const [height, b] of blocks) {
    if (b.seen !== b.txCount) {
      throw new DumpError('blocks.ndjson', b.line, 'tx_count', `block ${height} says ${b.txCount} txs, txs.ndjson has ${b.seen}`);
    }
  }
  blocks.clear();

  // collections
  const collections = new Map<string, { name: string; originName: string }>();
  await each('collections', false, (f) => {
    const addr = f.address('object_addr', m.prefix);
    const key = addr.toString('hex');
    if (collections.has(key)) throw f.error('object_addr', `duplicate collection ${toHex0x(addr)}`);
    const name = f.string('name');
    const originName = f.string('origin_name', { optional: '' });
    collections.set(key, { name, originName });
    writer.insertCollection(addr, f.uint('height'), name, originName, normalizeName(name), normalizeName(originName),
      writer.accountId(f.address('creator', m.prefix)), formatMicros(f.time('timestamp')));
  }, ['object_addr', 'creator', 'name', 'origin_name', 'height', 'timestamp']);

  // tokens
  const seenTokens = new Set<string>();
  await each('tokens', false, (f) => {
    const collectionAddr = f.address('collection_addr', m.prefix);
    const c = collections.get(collectionAddr.toString('hex'));
    if (!c) throw f.error('collection_addr', `collection ${toHex0x(collectionAddr)} is not in collections.ndjson`);
    const tokenId = f.string('token_id', { nonEmpty: true });
    const key = collectionAddr.toString('hex') + '\u0000' + tokenId;
    if (seenTokens.has(key)) throw f.error('token_id', `duplicate token ${describe(tokenId)} in collection ${toHex0x(collectionAddr)}`);
    seenTokens.add(key);
    let objectAddr: Buffer | undefined;
    if (m.vmType === 'move') objectAddr = f.address('object_addr', m.prefix);
    else if (f.has('object_addr')) throw f.error('object_addr', `only Move NFTs have an object address (this is a ${m.vmType} chain)`);
    // "" — no owner account (rollytics serves such NFTs with owner ""; no account lists them).
    const owner = f.string('owner') === '' ? undefined : f.address('owner', m.prefix);
    const height = f.uint('height');
    writer.insertNft(collectionAddr, tokenId, height, owner ? writer.accountId(owner) : NO_OWNER,
      objectAddr ? writer.accountId(objectAddr) : null, nftJson({
        collectionAddr: toHex0x(collectionAddr), collectionName: c.name, collectionOriginName: c.originName,
        objectAddr: objectAddr ? toHex0x(objectAddr) : '', owner: owner ? toBech32(owner, m.prefix) : '', tokenId,
        uri: f.string('uri'), height, timestamp: formatMicros(f.time('timestamp')),
      }));
  }, ['collection_addr', 'token_id', 'object_addr', 'owner', 'uri', 'height', 'timestamp']);
  seenTokens.clear();

  // token_txs
  await each('token_txs', false, (f) => {
    const collectionAddr = f.address('collection_addr', m.prefix);
    const tokenId = f.string('token_id', { nonEmpty: true });
    const sequence = f.uint('sequence', { min: 1 });
    if (!writer.txExists(sequence)) throw f.error('sequence', `no tx with sequence ${sequence} in txs.ndjson`);
    try {
      writer.insertNftTx(collectionAddr, tokenId, sequence);
    } catch (e) {
      if ((e as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw f.error('sequence', 'duplicate link');
      throw e;
    }
  }, ['collection_addr', 'token_id', 'sequence']);

  // richlist: (denom, account) must be unique; a temporary index makes a duplicate fail on its line.
  writer.db.exec('CREATE UNIQUE INDEX richlist_unique ON richlist (denom, account)');
  await each('richlist', false, (f) => {
    const denom = f.string('denom', { nonEmpty: true }).toLowerCase();
    const account = f.address('account', m.prefix);
    const amount = f.string('amount');
    if (!isAmount(amount)) throw f.error('amount', `must be a decimal integer string, got ${describe(amount)}`);
    try {
      writer.insertHolder(denom, amountKey(amount), account, holderJson(
        m.vmType === 'evm' ? toHex0x(account) : toBech32(account, m.prefix), canonicalAmount(amount)));
    } catch (e) {
      if ((e as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') throw f.error('account', `duplicate holder for denom ${describe(denom)}`);
      throw e;
    }
  }, ['denom', 'account', 'amount']);
  writer.db.exec('DROP INDEX richlist_unique');

  // denom_contracts
  const denoms = new Set<string>();
  await each('denom_contracts', false, (f) => {
    if (m.vmType !== 'evm') throw f.error('(file)', `denom_contracts is for EVM chains (this is a ${m.vmType} chain)`);
    const denom = f.string('denom', { nonEmpty: true }).toLowerCase();
    if (denoms.has(denom)) throw f.error('denom', `duplicate denom ${describe(denom)}`);
    denoms.add(denom);
    const contract = f.address('contract', m.prefix);
    if (contract.length !== 20) throw f.error('contract', 'must be a 20-byte ERC-20 address');
    writer.insertDenomContract(denom, toHex0x(contract));
  }, ['denom', 'contract']);

  // evm_txs, evm_internal_txs
  await loadEvm(each, m.vmType, m.prefix, writer);

  return { chainId: m.chainId, vmType: m.vmType, prefix: m.prefix, counts };
}

/**
 * The txs stage: records are parsed in jobs (parse/tx.ts) on `threads` parser threads, in
 * order; the checks against other records (ascending sequence, existing block) and the
 * inserts stay on this thread. Returns the number of txs.
 */
async function loadTxs(source: RecordSource, prefix: string, blocks: Map<number, { seen: number }>, writer: SnapshotWriter,
  progress: ImportProgress, threads: number): Promise<number> {
  let count = 0;
  let lastSequence = writer.base?.sequence ?? 0;
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
  };
  const jobs = txJobs(source, (n) => buffers.take(n));
  if (!jobs) return 0;
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

