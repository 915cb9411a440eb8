import { createHash } from 'node:crypto';
import { keccak_256 } from '@noble/hashes/sha3';
import { toBech32, toHex0x } from '../lib/address';
import { pubkeyToAddress, secp256k1PublicKey } from '../lib/pubkey';
import { ChainParams } from './params';
import { Prng } from './prng';

const ETH_PUBKEY = '/initia.crypto.v1beta1.ethsecp256k1.PubKey';
const COSMOS_PUBKEY = '/cosmos.crypto.secp256k1.PubKey';

export interface PublicKey {
  '@type': string;
  key: string;
}

/** A signing account; its address is derived once from the public key, as the importer will. */
export interface Account {
  index: number;
  addr: Buffer;
  bech32: string;
  hex: string;
  publicKey: PublicKey;
  /** Next signer-info sequence (the account nonce). */
  nonce: number;
}

export interface Validator {
  proposer: string;
  moniker: string;
}

const MONIKERS = ['initia-sequencer', 'Chorus One', 'Ünïcode Stäking', 'Nodes.Guru', 'Stake & Relax'];

export function sha256(text: string | Buffer): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Cosmos SDK module account address: first 20 bytes of SHA-256 of the module name. */
export function moduleAddress(name: string): Buffer {
  return sha256(name).subarray(0, 20);
}

/** EIP-55 mixed-case rendering, as go-ethereum's Address.Hex() prints log addresses. */
export function checksumAddress(addr: Buffer): string {
  const hex = addr.toString('hex');
  const hash = Buffer.from(keccak_256(hex)).toString('hex');
  let out = '0x';
  for (let i = 0; i < hex.length; i++) {
    out += parseInt(hash[i], 16) >= 8 ? hex[i].toUpperCase() : hex[i];
  }
  return out;
}

function createAccount(index: number, seed: number, keyType: string, prefix: string): Account {
  const priv = sha256(`account-${seed}-${index}`);
  const publicKey = { '@type': keyType, key: secp256k1PublicKey(priv).toString('base64') };
  const addr = pubkeyToAddress(publicKey);
  if (!addr) throw new Error(`cannot derive an address for account ${index}`);
  return { index, addr, bech32: toBech32(addr, prefix), hex: toHex0x(addr), publicKey, nonce: 0 };
}

export function createValidators(p: ChainParams, rng: Prng): Validator[] {
  const out: Validator[] = [];
  for (let i = 0; i < p.validators; i++) {
    out.push({ proposer: toBech32(rng.bytes(20), `${p.prefix}valoper`), moniker: MONIKERS[i % MONIKERS.length] });
  }
  return out;
}

/**
 * The accounts of the chain and how they are drawn: a few hot accounts sign `hotShare` of the
 * txs; the rest is skewed towards low indexes so activity looks long-tailed.
 */
export class Population {
  readonly accounts: Account[] = [];
  readonly hot: Account[];
  /** The IBC relayer signs every MsgRecvPacket; it is the first hot account. */
  readonly relayer: Account;

  constructor(
    private readonly p: ChainParams,
    rng: Prng,
  ) {
    for (let i = 0; i < p.accounts; i++) {
      const eth = p.vm === 'evm' || rng.chance(0.25);
      this.accounts.push(createAccount(i, p.seed, eth ? ETH_PUBKEY : COSMOS_PUBKEY, p.prefix));
    }
    this.hot = this.accounts.slice(0, Math.min(p.hotAccounts, this.accounts.length));
    this.relayer = this.hot[0];
  }

  sender(rng: Prng): Account {
    if (rng.chance(this.p.hotShare)) return rng.pick(this.hot);
    return this.accounts[Math.floor(this.accounts.length * rng.float() ** 1.6)];
  }

  /** Any account but `not` (when there is another one). */
  other(rng: Prng, not: Account): Account {
    if (this.accounts.length < 2) return not;
    for (;;) {
      const a = this.accounts[rng.int(0, this.accounts.length - 1)];
      if (a !== not) return a;
    }
  }
}

/** Formats a header time as Go's RFC3339Nano in UTC: up to 9 digits, trailing zeros trimmed. */
export function formatTime(ms: number, subNs: number): string {
  const base = new Date(ms).toISOString().slice(0, 19);
  const frac = String((ms % 1000) * 1_000_000 + subNs)
    .padStart(9, '0')
    .replace(/0+$/, '');
  return `${base}${frac ? '.' + frac : ''}Z`;
}

/** Nanoseconds since the epoch as a decimal string (IBC timeout timestamps). */
export function epochNs(ms: number, subNs: number): string {
  return `${ms}${String(subNs).padStart(6, '0')}`;
}
