import { toHex0x } from '../lib/address';
import { Account, checksumAddress } from './chain';
import { addressResponse } from './cosmos';
import { Collection, Holder, Token } from './nft';
import { Prng } from './prng';
import { BuiltMsg, Coin, Ev, ev } from './tx';
import { VmAdapter, amount } from './vm';

const TRANSFER = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';
const OWNERSHIP = '0x8be0079c531659141344cd1fd0a4f28419497f9722a3daafe3b4186f6b6457e0';
const SWAP = '0xd78ad95fa46c994b6551d0da85fc275fe613ce37657fb8d5e3d130840159d822';
const ZERO: Holder = { addr: Buffer.alloc(20), bech32: '', hex: '0x' + '00'.repeat(20) };

/** An ERC-20 contract and the bank denom it backs. */
export interface Erc20 {
  denom: string;
  addr: Buffer;
  hex: string;
  checksum: string;
}

function word(hexOrDec: string | bigint): string {
  const v = typeof hexOrDec === 'bigint' ? hexOrDec.toString(16) : hexOrDec.replace(/^0x/, '');
  return v.padStart(64, '0');
}

function topic(h: Holder): string {
  return '0x' + word(h.hex);
}

/** The `evm` event of one log: a JSON {"address","topics","data"} in the `log` attribute. */
function logEvent(address: string, topics: string[], data: string): Ev {
  return ev('evm', ['log', JSON.stringify({ address, topics, data })]);
}

function call(sender: Holder, contract: string, input: string, events: Ev[]): BuiltMsg {
  return {
    msg: {
      '@type': '/minievm.evm.v1.MsgCall',
      sender: sender.bech32,
      contract_addr: contract,
      input,
      value: '0',
      access_list: [],
      auth_list: [],
    },
    module: 'evm',
    events,
  };
}

export class EvmVm implements VmAdapter {
  readonly erc20: Erc20[];
  private readonly pair: Holder;
  private readonly checksums = new Map<string, string>();

  constructor(rng: Prng) {
    const make = (denom: string | undefined): Erc20 => {
      const addr = rng.objectAddress().subarray(0, 20);
      const hex = toHex0x(addr);
      return { denom: denom ?? `evm/${hex.slice(2)}`, addr, hex, checksum: checksumAddress(addr) };
    };
    this.erc20 = [make('umin'), make('uusdc'), make(undefined)];
    const pairAddr = rng.objectAddress().subarray(0, 20);
    this.pair = { addr: pairAddr, bech32: '', hex: toHex0x(pairAddr) };
  }

  private checksum(addr: Buffer): string {
    const key = addr.toString('hex');
    let c = this.checksums.get(key);
    if (!c) {
      c = checksumAddress(addr);
      if (this.checksums.size < 100_000) this.checksums.set(key, c);
    }
    return c;
  }

  private erc20Transfer(t: Erc20, from: Holder, to: Holder, amt: string): Ev {
    return logEvent(t.checksum, [TRANSFER, topic(from), topic(to)], '0x' + word(BigInt(amt)));
  }

  bankEvents(from: Holder, to: Holder, c: Coin): Ev[] {
    const t = this.erc20.find((e) => e.denom === c.denom);
    return t ? [this.erc20Transfer(t, from, to, c.amount)] : [];
  }

  execute(rng: Prng, sender: Account, other: Account): BuiltMsg {
    const t = rng.pick(this.erc20);
    const amt = amount(rng);
    if (rng.chance(0.7)) {
      return call(sender, t.hex, `0xa9059cbb${word(other.hex)}${word(BigInt(amt))}`, [this.erc20Transfer(t, sender, other, amt)]);
    }
    const ask = this.erc20[(this.erc20.indexOf(t) + 1) % this.erc20.length];
    const ret = String(Math.max(1, Math.floor(Number(amt) * (0.5 + rng.float()))));
    return call(sender, this.pair.hex, `0x38ed1739${word(BigInt(amt))}${word(1n)}${word(sender.hex)}`, [
      this.erc20Transfer(t, sender, this.pair, amt),
      this.erc20Transfer(ask, this.pair, sender, ret),
      logEvent(this.checksum(this.pair.addr), [SWAP, topic(sender), topic(sender)], '0x' + word(BigInt(amt)) + word(0n) + word(0n) + word(BigInt(ret))),
    ]);
  }

  createCollection(rng: Prng, col: Collection): BuiltMsg {
    const hex = toHex0x(col.addr);
    return {
      msg: {
        '@type': '/minievm.evm.v1.MsgCreate',
        sender: col.creator.bech32,
        code: '0x60806040' + rng.bytes(180).toString('hex'),
        value: '0',
        access_list: [],
        auth_list: [],
      },
      module: 'evm',
      response: addressResponse(2, hex),
      events: [ev('contract_created', ['contract', hex]), logEvent(this.checksum(col.addr), [OWNERSHIP, topic(ZERO), topic(col.creator)], '0x')],
    };
  }

  /** ERC-721 Transfer: 4 topics (sig, from, to, tokenId) and empty data, as the NFT indexer expects. */
  private nftLog(t: Token, from: Holder, to: Holder): Ev {
    return logEvent(this.checksum(t.col.addr), [TRANSFER, topic(from), topic(to), '0x' + word(BigInt(t.tokenId))], '0x');
  }

  mintEvents(col: Collection, tokens: Token[]): Ev[] {
    return tokens.map((t) => this.nftLog(t, ZERO, t.owner));
  }

  mint(rng: Prng, col: Collection, tokens: Token[]): BuiltMsg[] {
    const input =
      tokens.length === 1
        ? `0x40c10f19${word(tokens[0].owner.hex)}${word(BigInt(tokens[0].tokenId))}`
        : `0x4684d7e9${word(tokens[0].owner.hex)}${word(BigInt(tokens.length))}`;
    return [call(col.creator, toHex0x(col.addr), input, this.mintEvents(col, tokens))];
  }

  transfer(rng: Prng, token: Token, from: Holder, to: Holder): BuiltMsg {
    return call(from, toHex0x(token.col.addr), `0x42842e0e${word(from.hex)}${word(to.hex)}${word(BigInt(token.tokenId))}`, [this.nftLog(token, from, to)]);
  }

  burn(rng: Prng, token: Token, owner: Holder): BuiltMsg {
    return call(owner, toHex0x(token.col.addr), `0x42966c68${word(BigInt(token.tokenId))}`, [this.nftLog(token, owner, ZERO)]);
  }
}
