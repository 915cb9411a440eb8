import { bech32AccountPattern, canonicalAddress } from '../lib/address';
import { pubkeyToAddress } from '../lib/pubkey';
import { BoundedCache } from './parse/cache';

/**
 * Which accounts a cosmos tx touches, with rollytics' rules (docs/api-contract.md#accounts-linked-to-a-tx), for dumps that do
 * not list them: addresses grepped from the tx events, plus the signer.
 */

const MOVE_HEX = /0x[0-9a-fA-F]{1,64}/g;
const HEX_PIECE = /^0x[0-9a-fA-F]{1,64}$/;
/** An EVM log topic holding an address (24 zero digits, then 40 hex): rollytics links it (docs/api-contract.md#accounts-linked-to-a-tx). */
export const ADDRESS_TOPIC = /^0x0{24}[0-9a-fA-F]{40}$/;

/**
 * Address texts / signer keys remembered per generation (BoundedCache): ≈5 MB each, and on the
 * 1M-tx generated chain as many hits as with twice the size.
 */
const CACHE_ENTRIES = 32_768;

interface Attribute {
  key?: unknown;
  value?: unknown;
}
interface Event {
  type?: unknown;
  attributes?: unknown;
}
interface PublicKey {
  '@type'?: unknown;
  key?: unknown;
}

/** A conversion that failed, remembered with its reason. */
interface Invalid {
  error: string;
}

/**
 * Derives accounts and signers as canonical lower-case hex (the writer's account key). Both
 * conversions are memoized: a chain has far fewer accounts and signer keys than txs, and the
 * bech32 decoding / key hashing dominated the import's per-tx cost.
 */
export class AccountDeriver {
  private readonly bech32Piece: RegExp;
  /** lengths of `<prefix>1` + 38 / 58 characters, the only ones bech32Piece matches */
  private readonly bech32Lengths: [number, number];
  /** address texts → canonical hex, or why they are none */
  private readonly addresses = new BoundedCache<string | Invalid>(CACHE_ENTRIES);
  /** event attribute pieces of bech32 length → hex, or null when they are no bech32 account */
  private readonly pieces = new BoundedCache<string | null>(CACHE_ENTRIES);
  private readonly signers = new BoundedCache<string | null>(CACHE_ENTRIES);

  constructor(private readonly prefix: string) {
    this.bech32Piece = bech32AccountPattern(prefix);
    this.bech32Lengths = [prefix.length + 1 + 38, prefix.length + 1 + 58];
  }

  /** The canonical hex of an address text, or why it is none. */
  hex(text: string): string | Invalid {
    let v = this.addresses.get(text);
    if (v === undefined) {
      v = this.convert(text);
      this.addresses.set(text, v);
    }
    return v;
  }

  private convert(text: string): string | Invalid {
    try {
      return canonicalAddress(text, this.prefix).toString('hex');
    } catch (e) {
      return { error: (e as Error).message };
    }
  }

  private add(out: Set<string>, text: string): void {
    const v = this.hex(text);
    // Not an address after all (rollytics skips invalid ones too).
    if (typeof v === 'string') out.add(v);
  }

  /** Accounts found in `events` (the parsed events array of a Tx), in first-seen order, into `out`. */
  eventAccounts(events: unknown, out: Set<string>): void {
    if (!Array.isArray(events)) return;
    for (const ev of events as Event[]) {
      if (!ev || !Array.isArray(ev.attributes)) continue;
      for (const attr of ev.attributes as Attribute[]) {
        if (!attr || typeof attr.value !== 'string') continue;
        const value = attr.value;
        if (ev.type === 'move' && attr.key === 'data') {
          for (const m of value.match(MOVE_HEX) ?? []) this.add(out, m);
        } else if (ev.type === 'evm' && attr.key === 'log') {
          this.fromEvmLog(out, value);
        } else if (ev.type === 'call' && attr.key === 'ret') {
          // EVM call return data is ignored by rollytics.
        } else if (value.includes(',')) {
          for (const piece of value.split(',')) this.addPiece(out, piece);
        } else {
          this.addPiece(out, value);
        }
      }
    }
  }

  /** Accounts found in `events`, keyed by hex. */
  fromEvents(events: unknown): Map<string, Buffer> {
    const found = new Set<string>();
    this.eventAccounts(events, found);
    return new Map([...found].map((hex) => [hex, Buffer.from(hex, 'hex')]));
  }

  /** Adds a piece of an attribute value that is entirely a bech32 account or 0x + 1–64 hex digits. */
  private addPiece(out: Set<string>, piece: string): void {
    // Length and first characters first: most attribute values (amounts, names) fail there.
    const n = piece.length;
    if (n === this.bech32Lengths[0] || n === this.bech32Lengths[1]) {
      // Accounts repeat: the pattern test is remembered with the conversion.
      let v = this.pieces.get(piece);
      if (v === undefined) {
        const hex = this.bech32Piece.test(piece) ? this.convert(piece) : null;
        v = typeof hex === 'string' ? hex : null;
        this.pieces.set(piece, v);
      }
      if (v !== null) {
        out.add(v);
        return;
      }
    }
    if (n >= 3 && n <= 66 && piece.charCodeAt(0) === 0x30 && piece.charCodeAt(1) === 0x78 && HEX_PIECE.test(piece)) this.add(out, piece);
  }

  private fromEvmLog(out: Set<string>, value: string): void {
    let log: { address?: unknown; topics?: unknown };
    try {
      log = JSON.parse(value) as typeof log;
    } catch {
      return;
    }
    if (typeof log.address === 'string') this.add(out, log.address);
    if (Array.isArray(log.topics)) {
      for (const t of log.topics.slice(1)) if (typeof t === 'string' && ADDRESS_TOPIC.test(t)) this.add(out, t);
    }
  }

  /** signerFromTx as hex, memoized by key type and key. */
  signerHex(tx: unknown): string | undefined {
    const pk = signerPublicKey(tx);
    if (!pk || typeof pk !== 'object') return undefined;
    const { '@type': type, key } = pk as PublicKey;
    if (typeof type !== 'string') return undefined;
    // a multisig key has no `key`: its whole JSON (threshold and sub-keys) is the memo key
    const memoKey = typeof key === 'string' ? `${type}\u0000${key}` : JSON.stringify(pk);
    let v = this.signers.get(memoKey);
    if (v === undefined) {
      v = pubkeyToAddress(pk)?.toString('hex') ?? null;
      this.signers.set(memoKey, v);
    }
    return v ?? undefined;
  }
}

function signerPublicKey(tx: unknown): unknown {
  const infos = (tx as { auth_info?: { signer_infos?: unknown } } | null)?.auth_info?.signer_infos;
  if (!Array.isArray(infos) || infos.length === 0) return undefined;
  return (infos[0] as { public_key?: unknown })?.public_key;
}

/** The signer: the address of the first signer-info public key of the cosmos tx. */
export function signerFromTx(tx: unknown): Buffer | undefined {
  return pubkeyToAddress(signerPublicKey(tx));
}

/** Message type URLs of the tx body, without the leading '/', distinct, in body order. */
export function msgTypesOf(tx: unknown): string[] {
  const msgs = (tx as { body?: { messages?: unknown } } | null)?.body?.messages;
  if (!Array.isArray(msgs)) return [];
  const out = new Set<string>();
  for (const m of msgs) {
    const t = (m as Record<string, unknown> | null)?.['@type'];
    if (typeof t === 'string' && t !== '') out.add(t.replace(/^\//, ''));
  }
  return [...out];
}

/** keccak256("Transfer(address,address,uint256)"); an ERC-721 Transfer indexes the token id too (4 topics). */
const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

/**
 * The (collection, token id) pairs a tx's events can name as NFTs (rollytics' tx_nfts): every
 * event with a `_contract_address` and a `token_id` (Wasm cw721 actions; a pair that is no NFT
 * finds no nft_dict row), every ERC-721 Transfer log (EVM). Over-inclusive on purpose.
 */
export function nftKeysOfEvents(events: unknown, deriver: AccountDeriver, add: (collectionHex: string, tokenId: string) => void): void {
  if (!Array.isArray(events)) return;
  for (const ev of events as { type?: unknown; attributes?: unknown }[]) {
    if (!ev || !Array.isArray(ev.attributes)) continue;
    let contract: string | undefined;
    const tokenIds: string[] = [];
    for (const a of ev.attributes as { key?: unknown; value?: unknown }[]) {
      if (!a || typeof a.value !== 'string') continue;
      if (a.key === '_contract_address') contract = a.value;
      else if (a.key === 'token_id') tokenIds.push(a.value);
      else if (ev.type === 'evm' && a.key === 'log') {
        let log: { address?: unknown; topics?: unknown };
        try {
          log = JSON.parse(a.value) as typeof log;
        } catch {
          continue;
        }
        if (
          typeof log.address !== 'string' ||
          !Array.isArray(log.topics) ||
          log.topics.length !== 4 ||
          String(log.topics[0]).toLowerCase() !== TRANSFER_TOPIC ||
          !/^0x[0-9a-fA-F]{1,64}$/.test(String(log.topics[3]))
        )
          continue;
        const hex = deriver.hex(log.address);
        if (typeof hex === 'string') add(hex, BigInt(String(log.topics[3])).toString());
      }
    }
    if (contract === undefined) continue;
    const hex = deriver.hex(contract);
    if (typeof hex === 'string') for (const t of tokenIds) add(hex, t);
  }
}
