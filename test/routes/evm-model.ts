/**
 * Expected EVM answers (reference §4.4, §4.5) computed from a dump's evm_txs.ndjson and
 * evm_internal_txs.ndjson alone, re-derived here without src/records: the EvmTx object (fixed
 * keys, `to` "" on creation), the internal tx object (numbers, even-length hex, top-level
 * output 0x) and the accounts each row is linked to.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { canonical, hexOf } from '../helpers/address';

export const EVM_TX_KEYS = ['blockHash', 'blockNumber', 'contractAddress', 'cumulativeGasUsed', 'effectiveGasPrice', 'from',
  'gasUsed', 'logs', 'logsBloom', 'status', 'to', 'transactionHash', 'transactionIndex', 'type'];
export const EVM_LOG_KEYS = ['address', 'topics', 'data', 'blockNumber', 'transactionHash', 'transactionIndex', 'blockHash',
  'logIndex', 'removed'];
export const INTERNAL_TX_KEYS = ['height', 'hash', 'parent_index', 'index', 'type', 'from', 'to', 'input', 'output', 'value',
  'gas', 'gasUsed'];

export interface EvmTxRow {
  sequence: number; height: number; hash: string; obj: Record<string, unknown>;
  /** canonical hex of `from`, and of every linked account */
  signer: string; accounts: Set<string>; failed: boolean; creation: boolean;
}
export interface InternalRow { sequence: number; height: number; hash: string; obj: Record<string, unknown>; accounts: Set<string> }
export interface EvmModel { txs: EvmTxRow[]; internals: InternalRow[] }

function lines(dir: string, name: string): Record<string, unknown>[] {
  let text: string;
  try { text = readFileSync(join(dir, `${name}.ndjson`), 'utf8'); } catch { return []; }
  return text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
}

function pick(o: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = o[k];
  return out;
}

function even(hex: string): string {
  const h = hex.replace(/^0x/, '').toLowerCase();
  return '0x' + (h.length % 2 ? `0${h}` : h);
}

export function loadEvmModel(dir: string, prefix: string): EvmModel {
  const hexAccount = (t: unknown): string | undefined => {
    if (typeof t !== 'string' || t === '') return undefined;
    const b = canonical(t, prefix);
    return b ? b.toString('hex') : undefined;
  };
  const txs = lines(dir, 'evm_txs').map((rec): EvmTxRow => {
    const r = rec.receipt as Record<string, unknown>;
    const logs = r.logs as Record<string, unknown>[] | null;
    const obj = pick(r, EVM_TX_KEYS);
    obj.to = r.to ?? '';
    obj.logs = logs === null ? null : logs.map((l) => pick(l, EVM_LOG_KEYS));
    const accounts = new Set<string>();
    const add = (t: unknown): void => { const h = hexAccount(t); if (h) accounts.add(h); };
    add(r.from); add(r.to); add(r.contractAddress);
    for (const l of logs ?? []) {
      add(l.address);
      ((l.topics as string[] | null) ?? []).slice(1).forEach((t) => { if (/^0x0{24}[0-9a-fA-F]{40}$/.test(t)) add(`0x${t.slice(26)}`); });
    }
    return {
      sequence: rec.sequence as number, height: rec.height as number, hash: String(r.transactionHash).toLowerCase(), obj,
      signer: hexAccount(r.from) as string, accounts, failed: r.status !== '0x1', creation: r.to === null,
    };
  });
  const internals = lines(dir, 'evm_internal_txs').map((c): InternalRow => {
    const addr = (v: unknown): string => (v === '' ? '' : hexOf(canonical(String(v), prefix) as Buffer));
    const obj = {
      height: c.height, hash: String(c.hash).toLowerCase(), parent_index: c.parent_index, index: c.index, type: c.type,
      from: addr(c.from), to: addr(c.to), input: even(String(c.input)), output: c.index === 0 ? '0x' : even(String(c.output)),
      value: even(String(c.value)), gas: even(String(c.gas)), gasUsed: even(String(c.gasUsed)),
    };
    const accounts = new Set<string>();
    for (const a of [obj.from, obj.to]) if (a) accounts.add(a.slice(2));
    const args = obj.input.slice(10);
    for (let i = 0; i + 64 <= args.length; i += 64) {
      const w = args.slice(i, i + 64);
      if (w.startsWith('0'.repeat(24))) accounts.add(w.slice(24));
    }
    return { sequence: c.sequence as number, height: c.height as number, hash: obj.hash, obj, accounts };
  });
  return { txs, internals };
}

/** Accounts by number of linked rows, most first (ties by hex). */
export function byLinkCount<T extends { accounts: Set<string> }>(rows: T[]): [string, number][] {
  const n = new Map<string, number>();
  for (const r of rows) for (const a of r.accounts) n.set(a, (n.get(a) ?? 0) + 1);
  return [...n.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
}
