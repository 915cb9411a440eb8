import { ECDH, createECDH, createHash } from 'node:crypto';
import { keccak_256 } from '@noble/hashes/sha3';

/**
 * Derives the account bytes of a Cosmos `public_key` JSON object, as the chain and rollytics do
 * (rollytics `indexer/collector/tx/collect.go`: `sdk.AccAddress(pk.Address())` of the first
 * signer info's key): secp256k1 → RIPEMD160(SHA256(key)); ethsecp256k1 → last 20 bytes of
 * keccak256 of the uncompressed point; ed25519 → first 20 bytes of SHA256(key); a multisig
 * (`LegacyAminoPubKey`, threshold keys of secp256k1, ed25519 or multisig keys) → first 20
 * bytes of SHA256 of its legacy Amino encoding. Anything else (unknown key types, malformed
 * keys) has no address here and returns undefined.
 */
export function pubkeyToAddress(publicKey: unknown): Buffer | undefined {
  if (!publicKey || typeof publicKey !== 'object') return undefined;
  const pk = publicKey as Record<string, unknown>;
  const type = pk['@type'];
  if (type === MULTISIG) {
    const amino = multisigAmino(pk, 0);
    return amino && createHash('sha256').update(amino).digest().subarray(0, 20);
  }
  const keyB64 = pk['key'];
  if (typeof type !== 'string' || typeof keyB64 !== 'string') return undefined;
  const key = Buffer.from(keyB64, 'base64');
  switch (type) {
    case SECP256K1:
      if (key.length !== 33) return undefined;
      return createHash('ripemd160').update(createHash('sha256').update(key).digest()).digest();
    case '/initia.crypto.v1beta1.ethsecp256k1.PubKey':
    case '/ethermint.crypto.v1.ethsecp256k1.PubKey': {
      if (key.length !== 33 && key.length !== 65) return undefined;
      let uncompressed: Buffer;
      try {
        uncompressed = key.length === 65 ? key : (ECDH.convertKey(key, 'secp256k1', undefined, undefined, 'uncompressed') as Buffer);
      } catch {
        return undefined;
      }
      return Buffer.from(keccak_256(uncompressed.subarray(1)).subarray(12));
    }
    case ED25519:
      if (key.length !== 32) return undefined;
      return createHash('sha256').update(key).digest().subarray(0, 20);
    default:
      return undefined;
  }
}

const SECP256K1 = '/cosmos.crypto.secp256k1.PubKey';
const ED25519 = '/cosmos.crypto.ed25519.PubKey';
const MULTISIG = '/cosmos.crypto.multisig.LegacyAminoPubKey';

/**
 * Amino prefixes of the names cosmos-sdk's multisig codec (`crypto/keys/multisig/codec.go`,
 * `AminoCdc`) registers: SHA256 of the name, leading zero bytes dropped, 3 disambiguation bytes
 * dropped, leading zeros dropped again, the next 4 bytes. That codec registers only these three,
 * so a multisig holding any other key type (ethsecp256k1, secp256r1) panics in the SDK's
 * `Address()`: the chain's ante handler cannot accept such a signer, and rollytics could not
 * derive one; we derive none.
 */
const AMINO_PREFIX = {
  [SECP256K1]: Buffer.from('eb5ae987', 'hex'), // tendermint/PubKeySecp256k1
  [ED25519]: Buffer.from('1624de64', 'hex'), // tendermint/PubKeyEd25519
  [MULTISIG]: Buffer.from('22c1f7e2', 'hex'), // tendermint/PubKeyMultisigThreshold
};
const KEY_LENGTH: Record<string, number> = { [SECP256K1]: 33, [ED25519]: 32 };
/** cosmos-sdk's MaxSignatureTreeDepth bounds nesting on chain; this only bounds the recursion. */
const MAX_DEPTH = 16;

function uvarint(n: number): Buffer {
  const out: number[] = [];
  let v = n;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return Buffer.from(out);
}

/** A length-delimited Amino field: key byte, uvarint length, bytes. */
function field(key: number, bytes: Buffer): Buffer {
  return Buffer.concat([Buffer.from([key]), uvarint(bytes.length), bytes]);
}

/**
 * The legacy Amino bytes of a sub-key or multisig key (`AminoCdc.MustMarshal`): the type prefix,
 * then a single key as uvarint length + bytes, or a multisig's struct `{K uint; PubKeys []PubKey}`
 * as field 1 (varint threshold, omitted when 0 as Amino omits zero values) and one field 2 per
 * sub-key. Threshold arrives as a JSON number (protojson uint32) or a decimal string.
 */
function multisigAmino(pk: Record<string, unknown>, depth: number): Buffer | undefined {
  if (depth > MAX_DEPTH) return undefined;
  const type = pk['@type'];
  if (type === MULTISIG) {
    const threshold = Number(pk['threshold'] ?? 0);
    const subKeys = pk['public_keys'];
    if (!Number.isSafeInteger(threshold) || threshold < 0 || threshold > 0xffffffff || !Array.isArray(subKeys)) return undefined;
    const parts: Buffer[] = [AMINO_PREFIX[MULTISIG]];
    if (threshold > 0) parts.push(Buffer.from([0x08]), uvarint(threshold));
    for (const sub of subKeys) {
      if (!sub || typeof sub !== 'object') return undefined;
      const bytes = multisigAmino(sub as Record<string, unknown>, depth + 1);
      if (!bytes) return undefined;
      parts.push(field(0x12, bytes));
    }
    return Buffer.concat(parts);
  }
  if (type !== SECP256K1 && type !== ED25519) return undefined;
  const keyB64 = pk['key'];
  if (typeof keyB64 !== 'string') return undefined;
  const key = Buffer.from(keyB64, 'base64');
  if (key.length !== KEY_LENGTH[type]) return undefined;
  return Buffer.concat([AMINO_PREFIX[type], uvarint(key.length), key]);
}

/** Compressed secp256k1 public key for a 32-byte private key (used by the fixture generator). */
export function secp256k1PublicKey(privateKey: Buffer): Buffer {
  const ecdh = createECDH('secp256k1');
  ecdh.setPrivateKey(privateKey);
  return ecdh.getPublicKey(null, 'compressed') as unknown as Buffer;
}
