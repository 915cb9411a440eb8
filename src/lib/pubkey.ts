import { ECDH, createECDH, createHash } from 'node:crypto';
import { keccak_256 } from '@noble/hashes/sha3';

/**
 * Derives the account bytes of a Cosmos `public_key` JSON object, as the chain does:
 * secp256k1 → RIPEMD160(SHA256(key)); ethsecp256k1 → last 20 bytes of keccak256 of the
 * uncompressed point; ed25519 → first 20 bytes of SHA256(key). Other key types (multisig) have
 * no single-key address and return undefined.
 */
export function pubkeyToAddress(publicKey: unknown): Buffer | undefined {
  if (!publicKey || typeof publicKey !== 'object') return undefined;
  const pk = publicKey as Record<string, unknown>;
  const type = pk['@type'];
  const keyB64 = pk['key'];
  if (typeof type !== 'string' || typeof keyB64 !== 'string') return undefined;
  const key = Buffer.from(keyB64, 'base64');
  switch (type) {
    case '/cosmos.crypto.secp256k1.PubKey':
      if (key.length !== 33) return undefined;
      return createHash('ripemd160').update(createHash('sha256').update(key).digest()).digest();
    case '/initia.crypto.v1beta1.ethsecp256k1.PubKey':
    case '/ethermint.crypto.v1.ethsecp256k1.PubKey': {
      if (key.length !== 33 && key.length !== 65) return undefined;
      let uncompressed: Buffer;
      try {
        uncompressed = key.length === 65 ? key
          : ECDH.convertKey(key, 'secp256k1', undefined, undefined, 'uncompressed') as Buffer;
      } catch {
        return undefined;
      }
      return Buffer.from(keccak_256(uncompressed.subarray(1)).subarray(12));
    }
    case '/cosmos.crypto.ed25519.PubKey':
      if (key.length !== 32) return undefined;
      return createHash('sha256').update(key).digest().subarray(0, 20);
    default:
      return undefined;
  }
}

/** Compressed secp256k1 public key for a 32-byte private key (used by the fixture generator). */
export function secp256k1PublicKey(privateKey: Buffer): Buffer {
  const ecdh = createECDH('secp256k1');
  ecdh.setPrivateKey(privateKey);
  return ecdh.getPublicKey(null, 'compressed') as unknown as Buffer;
}
