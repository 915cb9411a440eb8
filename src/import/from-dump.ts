import { existsSync, statSync } from 'node:fs';
import { amountKey, canonicalAmount, isAmount } from '../lib/amount';
import { toBech32, toHex0x } from '../lib/address';
import { normalizeName } from '../lib/normalize';
import { compactJson, rawMembers } from '../lib/raw-json';
import { formatMicros, formatNanos, formatSeconds, parseUtc, toMicros, UtcTime } from '../lib/time';
import { blockJson, Coin } from '../routes/block/serialize';
import { nftJson } from '../routes/nft/serialize';
import { holderJson } from '../routes/richlist/serialize';
import { txJson } from '../routes/tx/serialize';
import { AccountDeriver, msgTypesOf, signerFromTx } from './derive';
import { DumpError } from './dump-error';
import { describe, Fields, toAddress } from './fields';
import { findDumpFile, NdjsonLine, readNdjson } from './ndjson';
import { SnapshotWriter } from './writer';

export type VmType = 'move' | 'wasm' | 'evm';
export const VM_TYPES: readonly VmType[] = ['move', 'wasm', 'evm'];

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
const UPPER_OR_LOWER_HEX = /^[0-9a-fA-F]*$/;

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
  };
}

/** Reads a dump directory into `writer`; see loadRecords. */
export function loadDump(dir: string, writer: SnapshotWriter, progress: ImportProgress): Promise<ImportSummary> {
  return loadRecords(dumpSource(dir), writer, progress);
}

/**
 * Reads every record of `source` into `writer`, validating each. Throws DumpError naming
 * file:line:field on the first bad one.
 */
export async function loadRecords(source: RecordSource, writer: SnapshotWriter, progress: ImportProgress): Promise<ImportSummary> {
  const counts: Record<string, number> = {};
  async function each(name: string, required: boolean, fn: (f: Fields | undefined, text: string, at: { file: string; line: number }) => void,
    allowed?: readonly string[]): Promise<void> {
    const records = source.records(name);
    if (!records && required) throw new DumpError(`${name}.ndjson`, 0, '(file)', `missing from ${source.describe}`);
    counts[name] = 0;
    if (!records) return;
    progress.stage(name);
    let batch = 0;
    for await (const at of records) {
      fn(allowed ? new Fields(at, allowed) : undefined, at.text, at);
      counts[name]++;
      if (++batch === 1000) { progress.records(batch); batch = 0; }
    }
    progress.records(batch);
  }

  // meta
  let meta: Meta | undefined;
  await each('meta', true, (f) => {
    if (!f) return;
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
    writer.setMeta('internal_tx_height', f.uint('internal_tx_height', { optional: 0 }));
    writer.setMeta('rich_list_height', f.uint('rich_list_height', { optional: 0 }));
  }, ['chain_id', 'vm_type', 'bech32_prefix', 'version', 'commit_hash', 'source', 'height', 'internal_tx_height', 'rich_list_height']);
  if (!meta) throw new DumpError('meta.ndjson', 1, '(file)', 'holds no record');
  const m: Meta = meta;

  // validators
  const validators = new Map<string, { moniker: string; operatorAddress: string }>();
  await each('validators', false, (f) => {
    if (!f) return;
    const proposer = f.string('proposer', { nonEmpty: true });
    if (validators.has(proposer)) throw f.error('proposer', `duplicate proposer ${describe(proposer)}`);
    const v = { moniker: f.string('moniker'), operatorAddress: f.string('operator_address', { nonEmpty: true }) };
    validators.set(proposer, v);
    writer.insertValidator(proposer, v.moniker, v.operatorAddress);
  }, ['proposer', 'moniker', 'operator_address']);

  // blocks: keep height → expected tx count and line, to check against txs.ndjson
  const blocks = new Map<number, { txCount: number; line: number; seen: number }>();
  let lastHeight = 0;
  await each('blocks', true, (f) => {
    if (!f) return;
    const height = f.uint('height', { min: 1 });
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
  if (blocks.size === 0) throw new DumpError('blocks.ndjson', 1, '(file)', 'holds no block');
  writer.setMeta('max_height', lastHeight);

  // txs
  const deriver = new AccountDeriver(m.prefix);
  let lastSequence = 0;
  await each('txs', false, (f, text) => {
    if (!f) return;
    const sequence = f.uint('sequence', { min: 1 });
    if (sequence <= lastSequence) throw f.error('sequence', `must ascend: ${sequence} after ${lastSequence}`);
    lastSequence = sequence;
    const txRawText = rawMembers(text).get('tx');
    const tx = f.raw('tx');
    if (txRawText === undefined || tx === null || typeof tx !== 'object' || Array.isArray(tx)) throw f.error('tx', 'must be the Tx object');
    const t = tx as Record<string, unknown>;
    const raw = rawMembers(txRawText);
    const fail = (field: string, reason: string): DumpError => f.error(`tx.${field}`, reason);
    const str = (k: string): string => {
      if (typeof t[k] !== 'string') throw fail(k, `must be a string, got ${describe(t[k])}`);
      return t[k] as string;
    };
    const decimal = (k: string): string => {
      const v = str(k);
      if (!UINT_STRING.test(v)) throw fail(k, `must be a decimal integer string, got ${describe(v)}`);
      return v;
    };
    for (const k of Object.keys(t)) {
      if (!TX_KEYS.includes(k)) throw fail(k, `unknown Tx field (expected: ${TX_KEYS.join(', ')})`);
    }
    const txhash = str('txhash');
    if (!/^[0-9a-fA-F]{64}$/.test(txhash)) throw fail('txhash', `must be 64 hex digits, got ${describe(txhash)}`);
    const height = Number(decimal('height'));
    const block = blocks.get(height);
    if (!block) throw fail('height', `no block ${height} in blocks.ndjson`);
    block.seen++;
    if (typeof t.code !== 'number' || !Number.isInteger(t.code) || t.code < 0) throw fail('code', `must be a JSON integer ≥ 0, got ${describe(t.code)}`);
    const data = str('data');
    if (!UPPER_OR_LOWER_HEX.test(data)) throw fail('data', `must be hex, got ${describe(data)}`);
    if (!Array.isArray(t.logs)) throw fail('logs', `must be an array, got ${describe(t.logs)}`);
    if (t.tx !== null && (typeof t.tx !== 'object' || Array.isArray(t.tx))) throw fail('tx', `must be an object or null, got ${describe(t.tx)}`);
    if (t.events !== null && !Array.isArray(t.events)) throw fail('events', `must be an array or null, got ${describe(t.events)}`);
    const ts = parseTime(str('timestamp'), (reason) => fail('timestamp', reason));
    const json = txJson({
      txhash, height, codespace: str('codespace'), code: t.code, data: data.toUpperCase(), rawLog: str('raw_log'),
      logsRaw: compactJson(raw.get('logs') as string), info: str('info'), gasWanted: decimal('gas_wanted'),
      gasUsed: decimal('gas_used'), txRaw: compactJson(raw.get('tx') as string), timestamp: formatNanos(ts),
      eventsRaw: compactJson(raw.get('events') as string),
    });
    const signer = f.has('signer') ? f.address('signer', m.prefix) : signerFromTx(t.tx);
    let accounts: Iterable<Buffer>;
    if (f.has('accounts')) {
      const list = f.raw('accounts');
      if (!Array.isArray(list)) throw f.error('accounts', 'must be an array of addresses');
      accounts = list.map((a, i) => {
        if (typeof a !== 'string') throw f.error(`accounts[${i}]`, `must be a string, got ${describe(a)}`);
        return toAddress(a, m.prefix, (reason) => f.error(`accounts[${i}]`, reason));
      });
    } else {
      accounts = deriver.fromEvents(t.events).values();
    }
    writer.insertTx(sequence, height, Buffer.from(txhash, 'hex'), json, accounts, signer, msgTypesOf(t.tx));
  }, ['sequence', 'tx', 'signer', 'accounts']);
  for (const [height, b] of blocks) {
    if (b.seen !== b.txCount) {
      throw new DumpError('blocks.ndjson', b.line, 'tx_count', `block ${height} says ${b.txCount} txs, txs.ndjson has ${b.seen}`);
    }
  }
  blocks.clear();

  // collections
  const collections = new Map<string, { name: string; originName: string }>();
  await each('collections', false, (f) => {
    if (!f) return;
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
    if (!f) return;
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
    const owner = f.address('owner', m.prefix);
    const height = f.uint('height');
    writer.insertNft(collectionAddr, tokenId, height, writer.accountId(owner),
      objectAddr ? writer.accountId(objectAddr) : null, nftJson({
        collectionAddr: toHex0x(collectionAddr), collectionName: c.name, collectionOriginName: c.originName,
        objectAddr: objectAddr ? toHex0x(objectAddr) : '', owner: toBech32(owner, m.prefix), tokenId,
        uri: f.string('uri'), height, timestamp: formatMicros(f.time('timestamp')),
      }));
  }, ['collection_addr', 'token_id', 'object_addr', 'owner', 'uri', 'height', 'timestamp']);
  seenTokens.clear();

  // token_txs
  await each('token_txs', false, (f) => {
    if (!f) return;
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
    if (!f) return;
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
    if (!f) return;
    if (m.vmType !== 'evm') throw f.error('(file)', `denom_contracts is for EVM chains (this is a ${m.vmType} chain)`);
    const denom = f.string('denom', { nonEmpty: true }).toLowerCase();
    if (denoms.has(denom)) throw f.error('denom', `duplicate denom ${describe(denom)}`);
    denoms.add(denom);
    const contract = f.address('contract', m.prefix);
    if (contract.length !== 20) throw f.error('contract', 'must be a 20-byte ERC-20 address');
    writer.insertDenomContract(denom, toHex0x(contract));
  }, ['denom', 'contract']);

  return { chainId: m.chainId, vmType: m.vmType, prefix: m.prefix, counts };
}

const TX_KEYS = ['txhash', 'height', 'codespace', 'code', 'data', 'raw_log', 'logs', 'info', 'gas_wanted', 'gas_used', 'tx', 'timestamp', 'events'];

function parseTime(text: string, fail: (reason: string) => Error): UtcTime {
  const t = parseUtc(text);
  if (!t) throw fail(`not an RFC 3339 UTC time ending in Z with 0-9 fractional digits: ${describe(text)}`);
  return t;
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

