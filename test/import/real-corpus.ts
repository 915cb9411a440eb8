/**
 * The real-tx corpus (test/fixtures/real/README.md): real Initia tx responses as public
 * repositories hold them (`<vm>/tx-responses.ndjson`), and the dump (docs/dump-format.md) made
 * of them (`<vm>/dump/`). `realDumpFiles` is the one conversion, written from rollytics' rules:
 * a tx is what rollytics stores and serves — the REST tx (no `@type`: rollytics reads
 * `txs/block/{h}`, whose txs are not Anys) and the events, both in PostgreSQL jsonb key order
 * (key byte length, then bytes) — and its accounts, signer and message types are left for import
 * to derive. Blocks are not part of the sources: each holds the corpus txs of its height, with a
 * synthetic hash and proposer (documented in the README).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers/app';

export const REAL_VMS = ['move', 'wasm', 'evm'] as const;
export type RealVm = typeof REAL_VMS[number];

export const realDir = (vm: RealVm): string => join(ROOT, 'test', 'fixtures', 'real', vm);

export interface RealSource { repository: string; path: string; export: string; commit: string; last_changed_in: string }
export interface TxResponse {
  txhash: string; height: string; codespace: string; code: number; data: string; raw_log: string; logs: unknown[]; info: string;
  gas_wanted: string; gas_used: string; tx: Record<string, unknown>; timestamp: string; events: unknown[];
}

export function realResponses(vm: RealVm): { source: RealSource; tx_response: TxResponse }[] {
  return readFileSync(join(realDir(vm), 'tx-responses.ndjson'), 'utf8').split('\n').filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { source: RealSource; tx_response: TxResponse });
}

/** PostgreSQL jsonb key order at every level: shorter keys first, then by bytes. */
export function jsonbOrder(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(jsonbOrder);
  if (v === null || typeof v !== 'object') return v;
  const keys = Object.keys(v).sort((a, b) => Buffer.byteLength(a) - Buffer.byteLength(b) || Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = jsonbOrder((v as Record<string, unknown>)[k]);
  return out;
}

/** The Tx object rollytics serves for a tx response (reference §4.3 key order). */
export function rollyticsTx(r: TxResponse): Record<string, unknown> {
  const { '@type': _any, ...restTx } = r.tx;
  return {
    txhash: r.txhash, height: r.height, codespace: r.codespace, code: r.code, data: r.data, raw_log: r.raw_log, logs: r.logs,
    info: r.info, gas_wanted: r.gas_wanted, gas_used: r.gas_used, tx: jsonbOrder(restTx), timestamp: r.timestamp, events: jsonbOrder(r.events),
  };
}

/** meta, blocks and txs NDJSON of a VM's corpus, as committed under `<vm>/dump/`. */
export function realDumpFiles(vm: RealVm): Record<'meta' | 'blocks' | 'txs', string> {
  const rows = realResponses(vm).map((x, i) => ({ i, r: x.tx_response })).sort((a, b) => Number(a.r.height) - Number(b.r.height) || a.i - b.i);
  const heights = [...new Set(rows.map((x) => Number(x.r.height)))];
  const blocks = heights.map((height) => {
    const txs = rows.filter((x) => Number(x.r.height) === height).map((x) => x.r);
    const fees = new Map<string, bigint>();
    for (const t of txs) {
      const amount = ((t.tx.auth_info as { fee?: { amount?: { denom: string; amount: string }[] } }).fee?.amount) ?? [];
      for (const c of amount) fees.set(c.denom, (fees.get(c.denom) ?? 0n) + BigInt(c.amount));
    }
    const sum = (k: 'gas_used' | 'gas_wanted'): string => String(txs.reduce((n, t) => n + BigInt(t[k]), 0n));
    return {
      height,
      hash: createHash('sha256').update(`indexer-api real corpus ${vm} ${height}`).digest('hex').toUpperCase(),
      timestamp: txs[0].timestamp, block_time: 0, proposer: 'synthetic-proposer',
      gas_used: sum('gas_used'), gas_wanted: sum('gas_wanted'), tx_count: txs.length,
      total_fee: [...fees].filter(([, a]) => a !== 0n).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([denom, a]) => ({ denom, amount: String(a) })),
    };
  });
  const meta = {
    chain_id: `real-corpus-${vm}`, vm_type: vm, bech32_prefix: 'init', version: 'real-corpus', commit_hash: 'unknown',
    source: 'public Initia txs, test/fixtures/real/README.md',
  };
  const lines = (xs: unknown[]): string => xs.map((x) => JSON.stringify(x)).join('\n') + '\n';
  return {
    meta: lines([meta]),
    blocks: lines(blocks),
    txs: lines(rows.map((x, n) => ({ sequence: n + 1, tx: rollyticsTx(x.r) }))),
  };
}
