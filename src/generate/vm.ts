import { Account } from './chain';
import { Collection, Holder, Token } from './nft';
import { Prng } from './prng';
import { BuiltMsg, Coin, Ev } from './tx';

/** What differs between Move, Wasm and EVM rollups: contract calls and NFT mechanics. */
export interface VmAdapter {
  /** Events a bank transfer emits on top of the cosmos bank events. */
  bankEvents(from: Holder, to: Holder, c: Coin): Ev[];
  /** An everyday contract call (a swap or a fungible-token transfer). */
  execute(rng: Prng, sender: Account, other: Account): BuiltMsg;
  createCollection(rng: Prng, col: Collection): BuiltMsg;
  /** Mints `tokens` (already owned by their recipients) as the collection creator. */
  mint(rng: Prng, col: Collection, tokens: Token[]): BuiltMsg[];
  /** The events of minting `tokens`, for mints that arrive inside an IBC packet. */
  mintEvents(col: Collection, tokens: Token[]): Ev[];
  transfer(rng: Prng, token: Token, from: Holder, to: Holder): BuiltMsg;
  burn(rng: Prng, token: Token, owner: Holder): BuiltMsg;
  /** Wasm only: a contract that NFTs can be sent to (`send_nft`). */
  nftReceiver?(rng: Prng): Holder;
}

/** Base64 of random bytes: stands in for BCS arguments, proofs and packet payloads. */
export function b64(rng: Prng, n: number): string {
  return rng.bytes(n).toString('base64');
}

/** A transfer amount: mostly small, sometimes large, in base units. */
export function amount(rng: Prng): string {
  const r = rng.float();
  if (r < 0.5) return String(rng.int(1, 999) * 1000);
  if (r < 0.9) return String(rng.int(1, 99_999) * 100);
  return rng.digits(rng.int(10, 16));
}
