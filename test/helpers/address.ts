/**
 * Address arithmetic for expected values, written independently of src/lib/address.ts from the
 * reference (rollytics-behaviour §2.3): bech32 (20 or 32 bytes) or hex with any number of leading
 * zeros, canonicalized to 20 bytes when it fits, else 32.
 */
import { keccak_256 } from '@noble/hashes/sha3';
import { bech32 } from 'bech32';
import { createHash, ECDH } from 'node:crypto';

export function canonical(input: string, prefix: string): Buffer | undefined {
  if (!input.startsWith('0x') && !input.startsWith('0X')) {
    try {
      const d = bech32.decode(input, 1023);
      const bytes = Buffer.from(bech32.fromWords(d.words));
      if (d.prefix === prefix && (bytes.length === 20 || bytes.length === 32)) return bytes;
    } catch { /* not bech32: try hex below */ }
  }
  let hex = input.slice(input.startsWith('0x') || input.startsWith('0X') ? 2 : 0);
  while (hex.startsWith('0')) hex = hex.slice(1);
  hex = hex.toLowerCase();
  if (hex.length > 64 || !/^[0-9a-f]*$/.test(hex)) return undefined;
  return Buffer.from(hex.padStart(hex.length <= 40 ? 40 : 64, '0'), 'hex');
}

export function mustCanonical(input: string, prefix: string): Buffer {
  const b = canonical(input, prefix);
  if (!b) throw new Error(`test fixture: not an address: ${input}`);
  return b;
}

export function bech32Of(bytes: Buffer, prefix: string): string {
  return bech32.encode(prefix, bech32.toWords(bytes), 1023);
}

export function hexOf(bytes: Buffer): string {
  return '0x' + bytes.toString('hex');
}

/** EIP-55 mixed-case checksum of a 20-byte address. */
export function eip55(bytes: Buffer): string {
  const lower = bytes.toString('hex');
  const hash = Buffer.from(keccak_256(Buffer.from(lower, 'ascii'))).toString('hex');
  let out = '0x';
  for (let i = 0; i < lower.length; i++) out += parseInt(hash[i], 16) >= 8 ? lower[i].toUpperCase() : lower[i];
  return out;
}

/** Every input form of API-CONTRACT §2 for the same bytes. */
export function addressForms(bytes: Buffer, prefix: string): Record<string, string> {
  const hex = bytes.toString('hex');
  const stripped = hex.replace(/^0+/, '');
  const forms: Record<string, string> = {
    bech32: bech32Of(bytes, prefix),
    'bech32 upper-case': bech32Of(bytes, prefix).toUpperCase(),
    '0x lower': '0x' + hex,
    '0x upper digits': '0x' + hex.toUpperCase(),
    'no 0x': hex,
    '0x leading zeros stripped': '0x' + stripped,
    '0x extra leading zeros': '0x000' + hex,
  };
  if (bytes.length === 20) forms['EIP-55'] = eip55(bytes);
  return forms;
}

/** The account of a Cosmos public key, as the chain derives it (secp256k1 / ethsecp256k1). */
/**
 * go-amino's prefix of a registered concrete type name, computed from the name (the code under
 * test uses the constants): SHA256, drop leading zero bytes, drop 3, drop zeros again, take 4.
 */
function aminoPrefix(name: string): Buffer {
  let h = createHash('sha256').update(name).digest();
  while (h[0] === 0) h = h.subarray(1);
  h = h.subarray(3);
  while (h[0] === 0) h = h.subarray(1);
  return h.subarray(0, 4);
}

const AMINO_NAME: Record<string, string> = {
  '/cosmos.crypto.secp256k1.PubKey': 'tendermint/PubKeySecp256k1',
  '/cosmos.crypto.ed25519.PubKey': 'tendermint/PubKeyEd25519',
  '/cosmos.crypto.multisig.LegacyAminoPubKey': 'tendermint/PubKeyMultisigThreshold',
};

function varint(n: number): number[] {
  const out = [];
  for (; n > 127; n = Math.floor(n / 128)) out.push(128 + (n % 128));
  out.push(n);
  return out;
}

/** Legacy Amino bytes of a key as cosmos-sdk's multisig codec writes them; undefined for types it does not register. */
function aminoKey(pk: PublicKeyJson): Buffer | undefined {
  const name = AMINO_NAME[pk['@type'] ?? ''];
  if (!name) return undefined;
  if (pk.public_keys === undefined) {
    const key = Buffer.from(pk.key ?? '', 'base64');
    return Buffer.concat([aminoPrefix(name), Buffer.from(varint(key.length)), key]);
  }
  const subs = pk.public_keys.map(aminoKey);
  if (subs.some((b) => b === undefined)) return undefined;
  const k = Number(pk.threshold);
  return Buffer.concat([
    aminoPrefix(name), Buffer.from(k ? [8, ...varint(k)] : []),
    ...(subs as Buffer[]).map((b) => Buffer.concat([Buffer.from([0x12, ...varint(b.length)]), b])),
  ]);
}

export interface PublicKeyJson { '@type'?: string; key?: string; threshold?: number | string; public_keys?: PublicKeyJson[] }

export function pubkeyAccount(pk: PublicKeyJson | undefined): Buffer | undefined {
  if (pk?.['@type'] === '/cosmos.crypto.multisig.LegacyAminoPubKey') {
    const amino = aminoKey(pk);
    return amino && createHash('sha256').update(amino).digest().subarray(0, 20);
  }
  if (!pk || typeof pk.key !== 'string') return undefined;
  const key = Buffer.from(pk.key, 'base64');
  switch (pk['@type']) {
    case '/cosmos.crypto.secp256k1.PubKey':
      return createHash('ripemd160').update(createHash('sha256').update(key).digest()).digest();
    case '/initia.crypto.v1beta1.ethsecp256k1.PubKey':
    case '/ethermint.crypto.v1.ethsecp256k1.PubKey': {
      const full = key.length === 65 ? key : ECDH.convertKey(key, 'secp256k1', undefined, undefined, 'uncompressed') as Buffer;
      return Buffer.from(keccak_256(full.subarray(1))).subarray(12);
    }
    case '/cosmos.crypto.ed25519.PubKey':
      return createHash('sha256').update(key).digest().subarray(0, 20);
    default:
      return undefined;
  }
}
