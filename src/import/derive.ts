import { bech32AccountPattern, canonicalAddress } from '../lib/address';
import { pubkeyToAddress } from '../lib/pubkey';

/**
 * Which accounts a cosmos tx touches, with rollytics' rules (reference §5.4), for dumps that do
 * not list them: addresses grepped from the tx events, plus the signer.
 */

const MOVE_HEX = /0x[0-9a-fA-F]{1,64}/g;
const HEX_PIECE = /^0x[0-9a-fA-F]{1,64}$/;
const ADDRESS_TOPIC = /^0x0{24}[0-9a-fA-F]{40}$/;

interface Attribute { key?: unknown; value?: unknown }
interface Event { type?: unknown; attributes?: unknown }

export class AccountDeriver {
  private readonly bech32Piece: RegExp;

  constructor(private readonly prefix: string) {
    this.bech32Piece = bech32AccountPattern(prefix);
  }

  private add(out: Map<string, Buffer>, text: string): void {
    try {
      const bytes = canonicalAddress(text, this.prefix);
      out.set(bytes.toString('hex'), bytes);
    } catch {
      // Not an address after all (rollytics skips invalid ones too).
    }
  }

  /** Accounts found in `events` (the parsed events array of a Tx), keyed by hex. */
  fromEvents(events: unknown): Map<string, Buffer> {
    const out = new Map<string, Buffer>();
    if (!Array.isArray(events)) return out;
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
        } else {
          for (const piece of value.split(',')) {
            if (this.bech32Piece.test(piece) || HEX_PIECE.test(piece)) this.add(out, piece);
          }
        }
      }
    }
    return out;
  }

  private fromEvmLog(out: Map<string, Buffer>, value: string): void {
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
}

/** The signer: the address of the first signer-info public key of the cosmos tx. */
export function signerFromTx(tx: unknown): Buffer | undefined {
  const infos = (tx as { auth_info?: { signer_infos?: unknown } } | null)?.auth_info?.signer_infos;
  if (!Array.isArray(infos) || infos.length === 0) return undefined;
  return pubkeyToAddress((infos[0] as { public_key?: unknown })?.public_key);
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
