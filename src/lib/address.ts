import { bech32 } from 'bech32';

/**
 * Address canonicalization shared by import and serve: matches rollytics `util/util.go`
 * (docs/api-contract.md#addresses) so that every input form maps to the same bytes rollytics stores.
 */

export class AddressError extends Error {}

const HEX_RE = /^[0-9a-f]*$/;

/** bech32 payload lengths the SDK address verifier accepts. */
const BECH32_LENGTHS = new Set([20, 32]);

function tryBech32(input: string, prefix: string): Buffer | undefined {
  try {
    // bech32 rejects mixed case itself; all-upper is accepted (lower-cased by the decoder).
    const { prefix: hrp, words } = bech32.decode(input, 1023);
    if (hrp !== prefix) return undefined;
    const bytes = Buffer.from(bech32.fromWords(words));
    return BECH32_LENGTHS.has(bytes.length) ? bytes : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Turns a user-supplied address (bech32 with `prefix`, or hex with or without `0x`, any case,
 * any number of leading zeros) into its canonical bytes: 20 bytes when it fits, else 32.
 * Throws AddressError with a reason; callers add the parameter name and raw value.
 */
export function canonicalAddress(input: string, prefix: string): Buffer {
  if (!/^0[xX]/.test(input)) {
    const b = tryBech32(input, prefix);
    if (b) return b;
  }
  let hex = input
    .replace(/^0[xX]/, '')
    .replace(/^0+/, '')
    .toLowerCase();
  // Neither form: say which forms there are (Go's "invalid byte: U+006E 'n'" tells a newcomer
  // nothing about a mistyped bech32 address, which ends up here too).
  if (/[^0-9a-f]/.test(hex)) throw new AddressError('not a bech32 or 0x address');
  if (hex.length > 64) throw new AddressError('invalid address format');
  hex = hex.padStart(hex.length <= 40 ? 40 : 64, '0');
  if (!HEX_RE.test(hex)) throw new AddressError('invalid address format');
  return Buffer.from(hex, 'hex');
}

/**
 * An address text of a record → canonical hex, or undefined when it is none: the loaders link a
 * tx only to what parses as an address, and skip the rest rather than refuse the record.
 */
export function addressHexOrUndefined(text: unknown, prefix: string): string | undefined {
  if (typeof text !== 'string' || text === '') return undefined;
  try {
    return canonicalAddress(text, prefix).toString('hex');
  } catch {
    return undefined;
  }
}

export function toBech32(bytes: Uint8Array, prefix: string): string {
  return bech32.encode(prefix, bech32.toWords(bytes), 1023);
}

export function toHex0x(bytes: Uint8Array): string {
  return '0x' + Buffer.from(bytes).toString('hex');
}

/** bech32 account regexes used when grepping event attributes (docs/api-contract.md#accounts-linked-to-a-tx). */
export function bech32AccountPattern(prefix: string): RegExp {
  const p = prefix.replace(/[^a-z0-9]/g, '');
  return new RegExp(`^${p}1([a-z0-9]{38}|[a-z0-9]{58})$`);
}
