/**
 * Questions about the dump that several tests ask: which account is busiest, which rows a
 * filter selects, in which order a list serves them. Orders are ascending (pagination.reverse
 * =false); the default descending order is the exact reverse, tie-breakers included.
 */
import { compareText, DumpModel, TokenRow, TxRow } from '../helpers/dump';

export function txsOf(d: DumpModel, pred: (t: TxRow) => boolean = () => true): TxRow[] {
  return d.txs.filter(pred).sort((a, b) => a.sequence - b.sequence);
}

export function hasMsg(types: string[]): (t: TxRow) => boolean {
  return (t) => types.some((m) => t.msgTypes.has(m));
}

/** Accounts by the number of txs that touch them, busiest first. */
export function accountsByTxCount(d: DumpModel): [string, number][] {
  const n = new Map<string, number>();
  for (const t of d.txs) for (const a of t.accounts) n.set(a, (n.get(a) ?? 0) + 1);
  return [...n.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
}

/** Accounts by the number of txs they signed, busiest first. */
export function signersByTxCount(d: DumpModel): [string, number][] {
  const n = new Map<string, number>();
  for (const t of d.txs) if (t.signer) n.set(t.signer, (n.get(t.signer) ?? 0) + 1);
  return [...n.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
}

export function busiestHeight(d: DumpModel): number {
  return [...d.blocks].sort((a, b) => b.txCount - a.txCount || a.height - b.height)[0].height;
}

/** Message types by tx count, most used first (names without the leading '/'). */
export function msgTypesByUse(d: DumpModel): [string, number][] {
  const n = new Map<string, number>();
  for (const t of d.txs) for (const m of t.msgTypes) n.set(m, (n.get(m) ?? 0) + 1);
  return [...n.entries()].sort((a, b) => b[1] - a[1]);
}

export type TokenOrder = 'token_id' | 'height';

/** Token order: (token_id, height, collection) or (height, token_id, collection), ascending. */
export function sortTokens(rows: TokenRow[], order: TokenOrder): TokenRow[] {
  return [...rows].sort((a, b) => {
    const byId = compareText(a.tokenId, b.tokenId);
    const byHeight = a.height - b.height;
    const first = order === 'token_id' ? byId || byHeight : byHeight || byId;
    return first || Buffer.compare(a.collection, b.collection);
  });
}

export function ownersByTokenCount(d: DumpModel): [string, number][] {
  const n = new Map<string, number>();
  for (const t of d.tokens) n.set(t.owner.toString('hex'), (n.get(t.owner.toString('hex')) ?? 0) + 1);
  return [...n.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
}

/** Collections in which `ownerHex` holds a token, by (height, address) ascending. */
export function collectionsOfOwner(d: DumpModel, ownerHex: string) {
  const held = new Set(d.tokens.filter((t) => t.owner.toString('hex') === ownerHex).map((t) => t.collection.toString('hex')));
  return d.collections.filter((c) => held.has(c.addr.toString('hex')))
    .sort((a, b) => a.height - b.height || Buffer.compare(a.addr, b.addr));
}

export function collectionsAsc(d: DumpModel) {
  return [...d.collections].sort((a, b) => a.height - b.height || Buffer.compare(a.addr, b.addr));
}

/** The txs an NFT's history lists: Move — txs touching the NFT object; Wasm/EVM — its tx links. */
export function nftTxs(d: DumpModel, token: TokenRow): TxRow[] {
  if (d.vm === 'move') {
    const obj = (token.object as Buffer).toString('hex');
    return txsOf(d, (t) => t.accounts.has(obj));
  }
  const seqs = new Set(d.tokenTxs.get(`${token.collection.toString('hex')}\u0000${token.tokenId}`) ?? []);
  return txsOf(d, (t) => seqs.has(t.sequence));
}

/** The live NFT with the most txs in its history. */
export function longestHistory(d: DumpModel): TokenRow {
  const counts = new Map<string, number>();
  if (d.vm === 'move') {
    for (const t of d.txs) for (const a of t.accounts) counts.set(a, (counts.get(a) ?? 0) + 1);
    return [...d.tokens].sort((a, b) => (counts.get((b.object as Buffer).toString('hex')) ?? 0) - (counts.get((a.object as Buffer).toString('hex')) ?? 0))[0];
  }
  const n = (k: TokenRow): number => d.tokenTxs.get(`${k.collection.toString('hex')}\u0000${k.tokenId}`)?.length ?? 0;
  return [...d.tokens].sort((a, b) => n(b) - n(a))[0];
}

/** Rich-list rows of a stored denom, by (amount, account) ascending. */
export function holdersAsc(d: DumpModel, denom: string) {
  return d.holders.filter((h) => h.denom === denom)
    .sort((a, b) => (a.amount < b.amount ? -1 : a.amount > b.amount ? 1 : Buffer.compare(a.account, b.account)));
}

export function reversed<T>(rows: T[]): T[] {
  return [...rows].reverse();
}
