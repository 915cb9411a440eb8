/**
 * The fixture cut (`import --accounts A,B ...`, docs/ci.md): the records of a whole source,
 * narrowed to what the named accounts touched, and made consistent with each other so the
 * ordinary loader accepts them and computes every total from what is left:
 *
 * - txs: those whose accounts (the signer, and the accounts derived from events with the same
 *   rules as the loader, docs/api-contract.md#accounts-linked-to-a-tx) include one of the accounts;
 * - EVM: receipts whose accounts (from, to, contract, log addresses and topics) include one of
 *   them, or one of whose internal calls does; all internal calls of a kept receipt;
 * - blocks: exactly the heights holding a kept tx, with `tx_count`, `gas_used`, `gas_wanted`,
 *   `total_fee` summed over the kept txs and `block_time` measured from the previous kept block
 *   (the block as a snapshot of only these txs would have it);
 * - NFTs: tokens the accounts own, plus every token of the `--collections`; the collections
 *   holding them; NFT ↔ tx links of kept txs (for kept tokens, or burned ones);
 * - rich list: the accounts' rows; validators: the proposers of kept blocks;
 * - meta: `/status` height and the internal-tx height are left to the loader to derive from the
 *   kept blocks; `source` names the cut.
 *
 * A first pass over the small kinds and the txs decides what is kept (the loader reads blocks
 * before txs); the records are then read again from the source, filtered and rewritten.
 */
import { addressHexOrUndefined } from '../../lib/address';
import { formatMicros, parseUtc, toMicros } from '../../lib/time';
import type { EvmReceipt } from '../../wire/evm';
import { AccountDeriver } from '../../records/derive';
import { evmTxAccounts, internalTxAccounts } from '../../records/evm';
import type { NdjsonLine } from '../../records/ndjson';
import type { ImportSource } from '../../records/source';

export interface CutSpec {
  /** canonical lower-case hex of each account */
  accounts: Set<string>;
  /** canonical lower-case hex of each collection kept whole */
  collections: Set<string>;
  prefix: string;
  /** the snapshot's `source` */
  label: string;
}

interface Coin {
  denom: string;
  amount: string;
}
interface BlockSums {
  txs: number;
  gasUsed: bigint;
  gasWanted: bigint;
  fees: Map<string, bigint>;
}

interface Plan {
  sequences: Set<number>;
  blocks: Map<number, BlockSums>;
  evmHashes: Set<string>;
  proposers: Set<string>;
  /** `collection\0token` of kept live tokens, and of every live token */
  tokens: Set<string>;
  liveTokens: Set<string>;
  collections: Set<string>;
}

async function* each(source: ImportSource, kind: string): AsyncGenerator<{ line: NdjsonLine; value: Record<string, unknown> }> {
  const records = source.records(kind);
  if (!records) return;
  for await (const line of records) yield { line, value: JSON.parse(line.text) as Record<string, unknown> };
}

const tokenKey = (collection: string, token: string): string => `${collection}\u0000${token}`;

function sumsAt(plan: Plan, height: number): BlockSums {
  let s = plan.blocks.get(height);
  if (!s) plan.blocks.set(height, (s = { txs: 0, gasUsed: 0n, gasWanted: 0n, fees: new Map() }));
  return s;
}

function bigOf(v: unknown): bigint {
  return typeof v === 'string' && /^\d+$/.test(v) ? BigInt(v) : typeof v === 'number' && Number.isSafeInteger(v) ? BigInt(v) : 0n;
}

/** The fee coins of a Tx object (`tx.auth_info.fee.amount`). */
function feeOf(tx: Record<string, unknown>): Coin[] {
  const body = tx.tx as { auth_info?: { fee?: { amount?: unknown } } } | null | undefined;
  const amount = body?.auth_info?.fee?.amount;
  return Array.isArray(amount) ? amount.filter((c): c is Coin => typeof c?.denom === 'string' && typeof c?.amount === 'string') : [];
}

async function planCut(source: ImportSource, spec: CutSpec): Promise<Plan> {
  const { accounts, prefix } = spec;
  const deriver = new AccountDeriver(prefix);
  const touches = (set: Set<string>): boolean => {
    for (const a of set) if (accounts.has(a)) return true;
    return false;
  };
  const plan: Plan = {
    sequences: new Set(),
    blocks: new Map(),
    evmHashes: new Set(),
    proposers: new Set(),
    tokens: new Set(),
    liveTokens: new Set(),
    collections: new Set(spec.collections),
  };

  for await (const { value } of each(source, 'txs')) {
    const tx = value.tx as Record<string, unknown>;
    const touched = new Set<string>();
    if (Array.isArray(value.accounts)) {
      for (const a of value.accounts) {
        const h = addressHexOrUndefined(a, prefix);
        if (h) touched.add(h);
      }
    } else {
      deriver.eventAccounts(tx.events, touched);
    }
    const signer = value.signer === undefined ? deriver.signerHex(tx.tx) : addressHexOrUndefined(value.signer, prefix);
    if (signer) touched.add(signer);
    if (!touches(touched)) continue;
    plan.sequences.add(Number(value.sequence));
    const sums = sumsAt(plan, Number(tx.height));
    sums.txs++;
    sums.gasUsed += bigOf(tx.gas_used);
    sums.gasWanted += bigOf(tx.gas_wanted);
    for (const c of feeOf(tx)) sums.fees.set(c.denom, (sums.fees.get(c.denom) ?? 0n) + bigOf(c.amount));
  }

  for await (const { value } of each(source, 'evm_internal_txs')) {
    const s = (k: string): string => (typeof value[k] === 'string' ? (value[k] as string) : '');
    if (touches(internalTxAccounts(s('from'), s('to'), s('input'), prefix))) plan.evmHashes.add(s('hash').toLowerCase());
  }
  for await (const { value } of each(source, 'evm_txs')) {
    const r = value.receipt as EvmReceipt;
    const hash = String(r.transactionHash).toLowerCase();
    const touched = Array.isArray(value.accounts)
      ? new Set((value.accounts as unknown[]).map((a) => addressHexOrUndefined(a, prefix)).filter((a): a is string => a !== undefined))
      : evmTxAccounts(r, prefix);
    const signer = value.signer === undefined ? addressHexOrUndefined(r.from, prefix) : addressHexOrUndefined(value.signer, prefix);
    if (signer) touched.add(signer);
    if (!plan.evmHashes.has(hash) && !touches(touched)) continue;
    plan.evmHashes.add(hash);
    sumsAt(plan, Number(value.height));
  }

  for await (const { value } of each(source, 'tokens')) {
    const collection = addressHexOrUndefined(value.collection_addr, prefix) ?? '';
    const key = tokenKey(collection, String(value.token_id));
    plan.liveTokens.add(key);
    const owner = addressHexOrUndefined(value.owner, prefix);
    if ((owner !== undefined && accounts.has(owner)) || spec.collections.has(collection)) {
      plan.tokens.add(key);
      plan.collections.add(collection);
    }
  }

  for await (const { value } of each(source, 'blocks')) {
    if (plan.blocks.has(Number(value.height))) plan.proposers.add(String(value.proposer));
  }
  return plan;
}

/** Rewrites a kept block's sums to its kept txs; block_time from the previous kept block. */
function cutBlock(value: Record<string, unknown>, sums: BlockSums, previousUs: number | undefined): { text: string; us: number | undefined } {
  const t = typeof value.timestamp === 'string' ? parseUtc(value.timestamp) : undefined;
  const us = t ? toMicros(t) : undefined;
  const out: Record<string, unknown> = {
    ...value,
    // whole milliseconds, as the dump format has it; the first kept block has no predecessor
    block_time: us !== undefined && previousUs !== undefined ? Math.max(0, Math.round((us - previousUs) / 1000)) : 0,
    gas_used: sums.gasUsed.toString(),
    gas_wanted: sums.gasWanted.toString(),
    tx_count: sums.txs,
    total_fee: sums.txs === 0 ? null : [...sums.fees].map(([denom, amount]) => ({ denom, amount: amount.toString() })),
  };
  if (t) out.timestamp = formatMicros(t);
  return { text: JSON.stringify(out), us };
}

/** `source` narrowed to the accounts of `spec` (see the top of this file). */
export function cutSource(source: ImportSource, spec: CutSpec): ImportSource {
  let planned: Promise<Plan> | undefined;
  const plan = (): Promise<Plan> => (planned ??= planCut(source, spec));
  const { prefix, accounts } = spec;

  /** keep: false drops the record, true keeps its text as read (exact JSON: no re-rendering of numbers), a string replaces it */
  function filtered(kind: string, keep: (value: Record<string, unknown>, p: Plan) => string | boolean): AsyncIterable<NdjsonLine> | undefined {
    if (!source.records(kind)) return undefined;
    return (async function* () {
      const p = await plan();
      for await (const { line, value } of each(source, kind)) {
        const kept = keep(value, p);
        if (kept === false) continue;
        yield kept === true ? line : { ...line, text: kept };
      }
    })();
  }

  let previousUs: number | undefined;
  return {
    describe: spec.label,
    lineBased: false,
    records(kind) {
      switch (kind) {
        case 'meta':
          return filtered(kind, (v) => {
            const { height: _h, internal_tx_height: _i, ...rest } = v;
            return JSON.stringify({ ...rest, source: spec.label });
          });
        case 'validators':
          return filtered(kind, (v, p) => p.proposers.has(String(v.proposer)));
        case 'blocks':
          previousUs = undefined;
          return filtered(kind, (v, p) => {
            const sums = p.blocks.get(Number(v.height));
            if (!sums) return false;
            const b = cutBlock(v, sums, previousUs);
            previousUs = b.us;
            return b.text;
          });
        case 'txs':
          return filtered(kind, (v, p) => p.sequences.has(Number(v.sequence)));
        case 'collections':
          return filtered(kind, (v, p) => p.collections.has(addressHexOrUndefined(v.object_addr, prefix) ?? ''));
        case 'tokens':
          return filtered(kind, (v, p) => p.tokens.has(tokenKey(addressHexOrUndefined(v.collection_addr, prefix) ?? '', String(v.token_id))));
        case 'token_txs':
          return filtered(kind, (v, p) => {
            const key = tokenKey(addressHexOrUndefined(v.collection_addr, prefix) ?? '', String(v.token_id));
            // a burned token's history goes with the txs; a live one only with the token
            return p.sequences.has(Number(v.sequence)) && (p.tokens.has(key) || !p.liveTokens.has(key));
          });
        case 'richlist':
          return filtered(kind, (v) => accounts.has(addressHexOrUndefined(v.account, prefix) ?? ''));
        case 'evm_txs':
          return filtered(kind, (v, p) => p.evmHashes.has(String((v.receipt as EvmReceipt).transactionHash).toLowerCase()));
        case 'evm_internal_txs':
          return filtered(kind, (v, p) => p.evmHashes.has(String(v.hash).toLowerCase()));
        default:
          return source.records(kind);
      }
    },
    stats: source.stats ? () => source.stats?.() ?? {} : undefined,
    dispose() {
      source.dispose?.();
    },
    close: () => source.close(),
  };
}
