/**
 * Expected API answers computed straight from a dump directory (docs/dump-format.md), with no
 * import code: the wire objects of API-CONTRACT §1 / reference §4 and the rows each list holds.
 * Everything here is deliberately re-derived (addresses, accounts a tx touches, signers,
 * timestamps) so a bug in src/records cannot hide behind the same bug in the expectation.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bech32Of, canonical, hexOf, mustCanonical, pubkeyAccount } from './address';

export type Vm = 'move' | 'wasm' | 'evm';

export const TX_KEYS = ['txhash', 'height', 'codespace', 'code', 'data', 'raw_log', 'logs', 'info', 'gas_wanted',
  'gas_used', 'tx', 'timestamp', 'events'] as const;

export interface Coin { denom: string; amount: string }
export interface Block {
  chain_id: string; height: string; hash: string; block_time: string; timestamp: string; gas_used: string;
  gas_wanted: string; tx_count: string; total_fee: Coin[] | null;
  proposer: { moniker: string; identity: string; operator_address: string };
}
export type Tx = Record<(typeof TX_KEYS)[number], unknown>;
export interface Collection {
  object_addr: string;
  collection: { creator: string; name: string; origin_name: string; nfts: { handle: string; length: number } };
  height: number;
  timestamp: string;
}
export interface Nft {
  collection_addr: string; collection_name: string; collection_origin_name: string; object_addr: string; owner: string;
  nft: { token_id: string; uri: string }; height: number; timestamp: string;
}
export interface Holder { account: string; amount: string }

export interface BlockRow { height: number; timeUs: bigint; txCount: number; obj: Block }
export interface TxRow {
  sequence: number; height: number; hash: string; obj: Tx;
  /** the dump line, for byte-level checks of the stored fragments */
  line: string;
  /** canonical hex of the signer, and of every account the tx touches (signer included) */
  signer?: string; accounts: Set<string>; msgTypes: Set<string>;
}
export interface CollectionRow { addr: Buffer; height: number; name: string; originName: string; obj: Collection }
export interface TokenRow { collection: Buffer; tokenId: string; height: number; owner: Buffer; object?: Buffer; obj: Nft }
export interface HolderRow { denom: string; account: Buffer; amount: bigint; obj: Holder }

export interface DumpModel {
  dir: string;
  vm: Vm;
  prefix: string;
  meta: Record<string, unknown>;
  blocks: BlockRow[];
  txs: TxRow[];
  collections: CollectionRow[];
  tokens: TokenRow[];
  /** Wasm / EVM: `${collection hex}\0${token_id}` → sequences */
  tokenTxs: Map<string, number[]>;
  holders: HolderRow[];
  denomContracts: Map<string, string>;
}

function records(dir: string, name: string): { line: string; rec: Record<string, unknown> }[] {
  let text: string;
  try {
    text = readFileSync(join(dir, `${name}.ndjson`), 'utf8');
  } catch {
    return [];
  }
  return text.split('\n').filter((l) => l.trim() !== '').map((line) => ({ line, rec: JSON.parse(line) as Record<string, unknown> }));
}

const TIME = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z$/;

/** RFC 3339 UTC with at most `digits` fractional digits, truncated, trailing zeros trimmed. */
export function timeWith(text: string, digits: number): string {
  const m = TIME.exec(text);
  if (!m) throw new Error(`test fixture: bad time ${text}`);
  const frac = (m[2] ?? '').slice(0, digits).replace(/0+$/, '');
  return frac ? `${m[1]}.${frac}Z` : `${m[1]}Z`;
}

function micros(text: string): bigint {
  const m = TIME.exec(text) as RegExpExecArray;
  return BigInt(Date.parse(`${m[1]}Z`)) * 1000n + BigInt((m[2] ?? '').slice(0, 6).padEnd(6, '0'));
}

function canonicalAmount(text: string): string {
  return BigInt(text).toString();
}

const MOVE_HEX = /0x[0-9a-fA-F]{1,64}/g;
const HEX_PIECE = /^0x[0-9a-fA-F]{1,64}$/;
const ADDRESS_TOPIC = /^0x0{24}[0-9a-fA-F]{40}$/;

/** Accounts grepped from tx events with rollytics' rules (reference §5.4, dump-format txs.accounts). */
export function eventAccounts(events: unknown, prefix: string): Set<string> {
  const out = new Set<string>();
  const bech = new RegExp(`^${prefix}1([a-z0-9]{38}|[a-z0-9]{58})$`);
  const add = (s: string): void => { const b = canonical(s, prefix); if (b) out.add(b.toString('hex')); };
  if (!Array.isArray(events)) return out;
  for (const ev of events as { type?: string; attributes?: { key?: string; value?: unknown }[] }[]) {
    for (const a of ev?.attributes ?? []) {
      if (typeof a.value !== 'string') continue;
      if (ev.type === 'move' && a.key === 'data') {
        for (const m of a.value.match(MOVE_HEX) ?? []) add(m);
      } else if (ev.type === 'evm' && a.key === 'log') {
        let log: { address?: unknown; topics?: unknown };
        try { log = JSON.parse(a.value) as typeof log; } catch { continue; }
        if (typeof log.address === 'string') add(log.address);
        if (Array.isArray(log.topics)) for (const t of log.topics.slice(1)) if (typeof t === 'string' && ADDRESS_TOPIC.test(t)) add(t);
      } else if (ev.type === 'call' && a.key === 'ret') {
        continue;
      } else {
        for (const piece of a.value.split(',')) if (bech.test(piece) || HEX_PIECE.test(piece)) add(piece);
      }
    }
  }
  return out;
}

export function loadDump(dir: string): DumpModel {
  const meta = records(dir, 'meta')[0].rec;
  const vm = meta.vm_type as Vm;
  const prefix = meta.bech32_prefix as string;
  const chainId = meta.chain_id as string;
  const addr = (s: unknown): Buffer => mustCanonical(String(s), prefix);

  const validators = new Map(records(dir, 'validators').map(({ rec }) => [rec.proposer as string, rec]));
  const blocks: BlockRow[] = records(dir, 'blocks').map(({ rec }) => {
    const v = validators.get(rec.proposer as string);
    const ts = rec.timestamp as string;
    return {
      height: Number(rec.height), timeUs: micros(ts), txCount: Number(rec.tx_count),
      obj: {
        chain_id: (rec.chain_id as string | undefined) ?? chainId,
        height: String(rec.height),
        hash: (rec.hash as string).replace(/^0x/, '').toUpperCase(),
        block_time: String(rec.block_time),
        timestamp: timeWith(ts, 0),
        gas_used: String(rec.gas_used),
        gas_wanted: String(rec.gas_wanted),
        tx_count: String(rec.tx_count),
        total_fee: rec.total_fee as Coin[] | null,
        proposer: v
          ? { moniker: v.moniker as string, identity: '', operator_address: v.operator_address as string }
          : { moniker: '', identity: '', operator_address: rec.proposer as string },
      },
    };
  });

  const txs: TxRow[] = records(dir, 'txs').map(({ line, rec }) => {
    const t = rec.tx as Record<string, unknown>;
    const obj = {} as Tx;
    for (const k of TX_KEYS) obj[k] = t[k];
    obj.txhash = (t.txhash as string).toUpperCase();
    obj.data = (t.data as string).toUpperCase();
    obj.timestamp = timeWith(t.timestamp as string, 9);
    const cosmos = t.tx as { body?: { messages?: { '@type'?: string }[] }; auth_info?: { signer_infos?: { public_key?: { '@type'?: string; key?: string } }[] } } | null;
    const signerBytes = rec.signer !== undefined ? addr(rec.signer) : pubkeyAccount(cosmos?.auth_info?.signer_infos?.[0]?.public_key);
    const accounts = Array.isArray(rec.accounts)
      ? new Set((rec.accounts as string[]).map((a) => addr(a).toString('hex')))
      : eventAccounts(t.events, prefix);
    if (signerBytes) accounts.add(signerBytes.toString('hex'));
    const msgTypes = new Set((cosmos?.body?.messages ?? []).map((m) => String(m['@type']).replace(/^\//, '')));
    return {
      sequence: Number(rec.sequence), height: Number(t.height), hash: obj.txhash as string, obj, line,
      signer: signerBytes?.toString('hex'), accounts, msgTypes,
    };
  });

  const tokenRecs = records(dir, 'tokens').map(({ rec }) => rec);
  const counts = new Map<string, number>();
  for (const r of tokenRecs) {
    const k = addr(r.collection_addr).toString('hex');
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  const collections: CollectionRow[] = records(dir, 'collections').map(({ rec }) => {
    const a = addr(rec.object_addr);
    const originName = (rec.origin_name as string | undefined) ?? '';
    return {
      addr: a, height: Number(rec.height), name: rec.name as string, originName,
      obj: {
        object_addr: hexOf(a),
        collection: {
          creator: bech32Of(addr(rec.creator), prefix), name: rec.name as string, origin_name: originName,
          nfts: { handle: '', length: counts.get(a.toString('hex')) ?? 0 },
        },
        height: Number(rec.height),
        timestamp: timeWith(rec.timestamp as string, 6),
      },
    };
  });
  const byAddr = new Map(collections.map((c) => [c.addr.toString('hex'), c]));
  const tokens: TokenRow[] = tokenRecs.map((r) => {
    const c = addr(r.collection_addr);
    const col = byAddr.get(c.toString('hex'));
    const object = r.object_addr !== undefined ? addr(r.object_addr) : undefined;
    const owner = addr(r.owner);
    return {
      collection: c, tokenId: r.token_id as string, height: Number(r.height), owner, object,
      obj: {
        collection_addr: hexOf(c), collection_name: col?.name ?? '', collection_origin_name: col?.originName ?? '',
        object_addr: object ? hexOf(object) : '', owner: bech32Of(owner, prefix),
        nft: { token_id: r.token_id as string, uri: r.uri as string },
        height: Number(r.height), timestamp: timeWith(r.timestamp as string, 6),
      },
    };
  });

  const tokenTxs = new Map<string, number[]>();
  for (const { rec } of records(dir, 'token_txs')) {
    const k = `${addr(rec.collection_addr).toString('hex')}\u0000${rec.token_id as string}`;
    const list = tokenTxs.get(k) ?? [];
    list.push(Number(rec.sequence));
    tokenTxs.set(k, list);
  }

  const holders: HolderRow[] = records(dir, 'richlist').map(({ rec }) => {
    const account = addr(rec.account);
    return {
      denom: (rec.denom as string).toLowerCase(), account, amount: BigInt(rec.amount as string),
      obj: { account: vm === 'evm' ? hexOf(account) : bech32Of(account, prefix), amount: canonicalAmount(rec.amount as string) },
    };
  });
  const denomContracts = new Map(records(dir, 'denom_contracts')
    .map(({ rec }) => [(rec.denom as string).toLowerCase(), hexOf(addr(rec.contract))]));

  return { dir, vm, prefix, meta, blocks, txs, collections, tokens, tokenTxs, holders, denomContracts };
}

/** rollytics' by_name normalization (reference §4.6.3), re-stated. */
export function normalizeName(s: string): string {
  return s.replace(/[^\p{L}\p{M}\p{N}]/gu, '').toLowerCase();
}

/** Byte order of UTF-8 text (SQLite BINARY collation). */
export function compareText(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/**
 * The raw text of member `key` of the JSON object `text` (a dump line or fragment), exactly as
 * written — for byte-level checks of fragments that must be served as stored.
 */
export function rawMember(text: string, key: string): string {
  let depth = 0;
  let i = 0;
  const n = text.length;
  const skipString = (): number => {
    let j = i + 1;
    while (j < n && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
    return j + 1;
  };
  while (i < n) {
    const c = text[i];
    if (c === '"') {
      const end = skipString();
      if (depth === 1 && JSON.parse(text.slice(i, end)) === key) {
        let j = end;
        while (text[j] === ' ' || text[j] === ':') j++;
        const start = j;
        let d = 0;
        for (; j < n; j++) {
          const ch = text[j];
          if (ch === '"') { i = j; j = skipString() - 1; if (d === 0) { j++; break; } continue; }
          if (ch === '{' || ch === '[') d++;
          else if (ch === '}' || ch === ']') { if (d === 0) break; d--; if (d === 0) { j++; break; } }
          else if (d === 0 && ch === ',') break;
        }
        return text.slice(start, j).trim();
      }
      i = end;
      continue;
    }
    if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
    i++;
  }
  throw new Error(`test fixture: no member ${key}`);
}

/** JSON text with the whitespace outside strings removed (what "stored compact" means). */
export function compact(text: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      out += c;
      if (c === '\\') { out += text[i + 1]; i++; } else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
      out += c;
    } else if (c !== ' ' && c !== '\n' && c !== '\r' && c !== '\t') {
      out += c;
    }
  }
  return out;
}
