/**
 * The EVM part of an import (docs/api-contract.md#evm-tx, docs/api-contract.md#evm-internal-tx, docs/api-contract.md#rollytics-tables): `evm_txs.ndjson` (receipts) and
 * `evm_internal_txs.ndjson` (callTracer frames) into the evm_* tables, their account links
 * (rollytics' rules, unless the record lists them), the hash dictionary and the counts.
 * Receipts are re-encoded here to the EvmTx key set and order, so serving only joins text.
 */
import { addressHexOrUndefined, toHex0x } from '../lib/address';
import { evmTxJson, EvmLog, EvmReceipt, internalTxJson, LOG_KEYS, RECEIPT_KEYS } from '../wire/evm';
import { ADDRESS_TOPIC } from './derive';
import { describe, Fields, toAddress } from './fields';
import { EvmTables, type EvmWriter } from '../snapshot/evm-writer';

const EVM_TX_FIELDS = ['sequence', 'height', 'receipt', 'signer', 'accounts'] as const;
const EVM_INTERNAL_TX_FIELDS = [
  'sequence',
  'height',
  'hash',
  'index',
  'parent_index',
  'type',
  'from',
  'to',
  'input',
  'output',
  'value',
  'gas',
  'gasUsed',
  'accounts',
] as const;

const HASH = /^0x[0-9a-fA-F]{64}$/;
const HEX = /^0x[0-9a-fA-F]*$/;
const ADDRESS_WORD = /^0{24}[0-9a-f]{40}$/;

type Each = (name: string, required: boolean, fn: (f: Fields) => void, allowed: readonly string[]) => Promise<void>;

/**
 * Accounts of an EVM tx (docs/api-contract.md#evm-tx): from, to, contractAddress, every log address and
 * every log topic after the first that is address-shaped (24 zero hex digits, then 40).
 */
export function evmTxAccounts(r: EvmReceipt, prefix: string): Set<string> {
  const out = new Set<string>();
  const add = (t: unknown): void => {
    const h = addressHexOrUndefined(t, prefix);
    if (h) out.add(h);
  };
  add(r.from);
  add(r.to);
  add(r.contractAddress);
  for (const l of r.logs ?? []) {
    add(l.address);
    (l.topics ?? []).forEach((t, i) => {
      if (i > 0 && ADDRESS_TOPIC.test(t)) add('0x' + t.slice(26));
    });
  }
  return out;
}

/**
 * Accounts of an internal call (docs/api-contract.md#evm-internal-tx): from, to, and every whole 32-byte ABI word
 * of the input after the 4-byte selector that starts with 24 zero hex digits.
 */
export function internalTxAccounts(from: string, to: string, input: string, prefix: string): Set<string> {
  const out = new Set<string>();
  for (const a of [from, to]) {
    const h = a === '0x' ? undefined : addressHexOrUndefined(a, prefix);
    if (h) out.add(h);
  }
  const args = input.slice(2 + 8);
  for (let i = 0; i + 64 <= args.length; i += 64) {
    const w = args.slice(i, i + 64);
    if (ADDRESS_WORD.test(w)) out.add(w.slice(24));
  }
  return out;
}

/** A tracer hex string as rollytics stores it: odd length padded by one nibble, lower case; "" → 0x. */
export function evenHex(text: string): string {
  if (text === '') return '0x';
  const h = text.slice(2).toLowerCase();
  return '0x' + (h.length % 2 ? '0' + h : h);
}

/** Reads the two EVM kinds of a source (validated, FILE:LINE: FIELD errors) into the writer. */
export async function loadEvm(each: Each, vmType: string, prefix: string, writer: EvmWriter): Promise<void> {
  const tables = new EvmTables(writer);
  const onlyEvm = (f: Fields, kind: string): void => {
    if (vmType !== 'evm') throw f.error('(file)', `${kind} is for EVM chains (this is a ${vmType} chain)`);
  };
  const accountsOf = (f: Fields): string[] | undefined => {
    if (!f.has('accounts')) return undefined;
    const v = f.raw('accounts');
    if (!Array.isArray(v)) throw f.error('accounts', `must be an array of addresses, got ${describe(v)}`);
    return v.map((a, i) => {
      if (typeof a !== 'string' || a === '') throw f.error(`accounts[${i}]`, `must be an address, got ${describe(a)}`);
      return toAddress(a, prefix, (reason) => f.error(`accounts[${i}]`, reason)).toString('hex');
    });
  };
  const sequenceOf = (f: Fields, last: number): number => {
    const n = f.uint('sequence', { min: 1 });
    if (n <= last) throw f.error('sequence', `must ascend: ${n} after ${last}`);
    return n;
  };
  const baseHeight = writer.base?.height ?? 0;
  const heightOf = (f: Fields, file: string): number => {
    const h = f.uint('height', { min: 1 });
    if (h <= baseHeight)
      throw f.error('height', `${h} is in the base snapshot ${writer.base?.file ?? ''} (its highest block is ${baseHeight}): only new heights may be added`);
    if (!tables.blockExists(h)) throw f.error('height', `no block ${h} in blocks.ndjson (${file})`);
    return h;
  };

  let lastSequence = writer.evm.baseTxSequence;
  await each(
    'evm_txs',
    false,
    (f) => {
      onlyEvm(f, 'evm_txs');
      const sequence = sequenceOf(f, lastSequence);
      lastSequence = sequence;
      const height = heightOf(f, 'evm_txs');
      const receipt = parseReceipt(f, height);
      let signer: string | undefined;
      if (f.has('signer')) {
        signer = f.raw('signer') === null ? undefined : f.address('signer', prefix).toString('hex');
      } else {
        signer = addressHexOrUndefined(receipt.from, prefix);
      }
      const accounts = accountsOf(f) ?? evmTxAccounts(receipt, prefix);
      tables.insertTx(sequence, height, Buffer.from(receipt.transactionHash.slice(2), 'hex'), evmTxJson(receipt), signer, accounts);
    },
    EVM_TX_FIELDS,
  );

  lastSequence = writer.evm.baseInternalSequence;
  let prev: { hash: string; height: number; index: number } | undefined;
  await each(
    'evm_internal_txs',
    false,
    (f) => {
      onlyEvm(f, 'evm_internal_txs');
      const sequence = sequenceOf(f, lastSequence);
      lastSequence = sequence;
      const height = heightOf(f, 'evm_internal_txs');
      const hash = f.string('hash');
      if (!HASH.test(hash)) throw f.error('hash', `must be 0x + 64 hex digits, got ${describe(hash)}`);
      const index = f.uint('index');
      const parentIndex = f.raw('parent_index');
      if (typeof parentIndex !== 'number' || !Number.isInteger(parentIndex) || parentIndex < -1) {
        throw f.error('parent_index', `must be an integer ≥ -1, got ${describe(parentIndex)}`);
      }
      // Calls of one trace are consecutive, numbered depth-first from 0; the top-level call has parent −1.
      const key = hash.toLowerCase();
      const continues = prev !== undefined && prev.hash === key && prev.height === height;
      if (continues && index !== (prev as { index: number }).index + 1) {
        throw f.error('index', `must be ${(prev as { index: number }).index + 1} (the next call of tx ${key}), got ${index}`);
      }
      if (!continues && index !== 0) throw f.error('index', `must be 0 (the first call of tx ${key}), got ${index}`);
      if (index === 0 ? parentIndex !== -1 : parentIndex < 0 || parentIndex >= index) {
        throw f.error(
          'parent_index',
          index === 0 ? `must be -1 for the top-level call, got ${parentIndex}` : `must be the index of an earlier call (0..${index - 1}), got ${parentIndex}`,
        );
      }
      prev = { hash: key, height, index };
      const addr = (field: string): string => {
        const v = f.string(field);
        if (v === '') return '';
        // rollytics serves "0x" for an account id missing from its dictionary; kept, and linked to no account
        if (v === '0x') return '0x';
        const b = f.address(field, prefix);
        if (b.length !== 20) throw f.error(field, `must be a 20-byte EVM address or "", got ${describe(v)}`);
        return toHex0x(b);
      };
      const hex = (field: string): string => {
        const v = f.string(field, { optional: '' });
        if (v !== '' && !HEX.test(v)) throw f.error(field, `must be 0x-prefixed hex, got ${describe(v)}`);
        return evenHex(v);
      };
      // rollytics does not record the top-level call's output: it serves 0x (docs/api-contract.md#evm-internal-tx).
      const output = hex('output');
      const t = {
        height,
        hash: key,
        parentIndex,
        index,
        type: f.string('type', { nonEmpty: true }),
        from: addr('from'),
        to: addr('to'),
        input: hex('input'),
        output: index === 0 ? '0x' : output,
        value: hex('value'),
        gas: hex('gas'),
        gasUsed: hex('gasUsed'),
      };
      const accounts = accountsOf(f) ?? internalTxAccounts(t.from, t.to, t.input, prefix);
      tables.insertInternal(sequence, height, Buffer.from(key.slice(2), 'hex'), internalTxJson(t), accounts);
    },
    EVM_INTERNAL_TX_FIELDS,
  );
}

/** The receipt member: every EvmTx key typed as the node gives it; other keys are dropped. */
function parseReceipt(f: Fields, height: number): EvmReceipt {
  const r = f.raw('receipt');
  if (!r || typeof r !== 'object' || Array.isArray(r)) throw f.error('receipt', `must be an object (the node's receipt), got ${describe(r)}`);
  const o = r as Record<string, unknown>;
  const str = (obj: Record<string, unknown>, at: string, k: string): string => {
    const v = obj[k];
    if (typeof v !== 'string') throw f.error(`${at}.${k}`, v === undefined ? 'missing' : `must be a string, got ${describe(v)}`);
    return v;
  };
  const out: Record<string, unknown> = {};
  for (const k of RECEIPT_KEYS) {
    if (k === 'logs' || k === 'contractAddress' || k === 'to') continue;
    out[k] = str(o, 'receipt', k);
  }
  const hash = out.transactionHash as string;
  if (!HASH.test(hash)) throw f.error('receipt.transactionHash', `must be 0x + 64 hex digits, got ${describe(hash)}`);
  const bn = out.blockNumber as string;
  if (!/^0x[0-9a-fA-F]+$/.test(bn) || Number.parseInt(bn.slice(2), 16) !== height) {
    throw f.error('receipt.blockNumber', `must be the hex quantity of height ${height} (0x${height.toString(16)}), got ${describe(bn)}`);
  }
  // A creation has no `to` (null, or absent on some nodes): rollytics serves "" (the client needs a string).
  const to = o.to;
  if (to !== undefined && to !== null && typeof to !== 'string') throw f.error('receipt.to', `must be a string or null, got ${describe(to)}`);
  out.to = to ?? '';
  const ca = o.contractAddress;
  if (ca !== undefined && ca !== null && typeof ca !== 'string') throw f.error('receipt.contractAddress', `must be a string or null, got ${describe(ca)}`);
  out.contractAddress = ca ?? null;
  const logs = o.logs;
  if (logs === null) {
    out.logs = null;
  } else {
    if (!Array.isArray(logs)) throw f.error('receipt.logs', logs === undefined ? 'missing' : `must be an array or null, got ${describe(logs)}`);
    out.logs = logs.map((l, i) => parseLog(f, `receipt.logs[${i}]`, l, str));
  }
  return out as unknown as EvmReceipt;
}

function parseLog(f: Fields, at: string, l: unknown, str: (obj: Record<string, unknown>, at: string, k: string) => string): EvmLog {
  if (!l || typeof l !== 'object' || Array.isArray(l)) throw f.error(at, `must be an object, got ${describe(l)}`);
  const o = l as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of LOG_KEYS) {
    if (k === 'topics' || k === 'removed') continue;
    out[k] = str(o, at, k);
  }
  const topics = o.topics;
  if (topics !== null) {
    if (!Array.isArray(topics))
      throw f.error(`${at}.topics`, topics === undefined ? 'missing' : `must be an array of strings or null, got ${describe(topics)}`);
    topics.forEach((t, i) => {
      if (typeof t !== 'string') throw f.error(`${at}.topics[${i}]`, `must be a string, got ${describe(t)}`);
    });
  }
  out.topics = topics;
  if (typeof o.removed !== 'boolean') throw f.error(`${at}.removed`, o.removed === undefined ? 'missing' : `must be a boolean, got ${describe(o.removed)}`);
  out.removed = o.removed;
  return out as unknown as EvmLog;
}
