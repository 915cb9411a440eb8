import { toHex0x } from '../lib/address';
import { Account, sha256 } from './chain';
import { Collection, Holder, Token } from './nft';
import { Prng } from './prng';
import { BuiltMsg, Coin, Ev, ev } from './tx';
import { VmAdapter, amount, b64 } from './vm';

/** A `move` event: attribute 0 is the type tag, attribute 1 the JSON data (clients rely on it). */
function moveEvent(typeTag: string, data: Record<string, string>): Ev {
  return ev('move', ['type_tag', typeTag], ['data', JSON.stringify(data)]);
}

function metadata(denom: string): string {
  return toHex0x(sha256(`move-metadata:${denom}`));
}

/** Primary fungible store of (owner, metadata); a 32-byte object the importer links as an account. */
function store(owner: Holder, meta: string): string {
  return toHex0x(sha256(Buffer.concat([owner.addr, Buffer.from(meta)])));
}

function execute(sender: Holder, module: string, fn: string, typeArgs: string[], args: string[], events: Ev[]): BuiltMsg {
  const [moduleAddress, moduleName] = module.split('::');
  return {
    msg: {
      '@type': '/initia.move.v1.MsgExecute',
      sender: sender.bech32,
      module_address: moduleAddress,
      module_name: moduleName,
      function_name: fn,
      type_args: typeArgs,
      args,
    },
    module: 'move',
    events,
  };
}

export class MoveVm implements VmAdapter {
  private readonly pools = new Map<string, Holder>();

  bankEvents(from: Holder, to: Holder, c: Coin): Ev[] {
    const meta = metadata(c.denom);
    return [
      moveEvent('0x1::fungible_asset::WithdrawEvent', { store_addr: store(from, meta), metadata_addr: meta, amount: c.amount }),
      moveEvent('0x1::fungible_asset::DepositEvent', { store_addr: store(to, meta), metadata_addr: meta, amount: c.amount }),
    ];
  }

  private pool(pair: string): Holder {
    let p = this.pools.get(pair);
    if (!p) {
      const addr = sha256(`dex-pool:${pair}`);
      p = { addr, bech32: '', hex: toHex0x(addr) };
      this.pools.set(pair, p);
    }
    return p;
  }

  execute(rng: Prng, sender: Account, other: Account): BuiltMsg {
    if (rng.chance(0.25)) {
      const score = String(rng.int(1, 100_000));
      return execute(
        sender,
        `${other.hex}::arcade`,
        'submit_score',
        [],
        [b64(rng, 8)],
        [moveEvent(`${other.hex}::arcade::ScoreEvent`, { player: sender.hex, score, round: String(rng.int(1, 500)) })],
      );
    }
    const [offer, ask] = rng.chance(0.5) ? ['umin', 'uusdc'] : ['uusdc', 'umin'];
    const pool = this.pool('umin-uusdc');
    const offerAmount = amount(rng);
    const returnAmount = String(Math.max(1, Math.floor(Number(offerAmount) * (0.5 + rng.float()))));
    const events = [
      ...this.bankEvents(sender, pool, { denom: offer, amount: offerAmount }),
      moveEvent('0x1::dex::SwapEvent', {
        offer_coin: metadata(offer),
        return_coin: metadata(ask),
        liquidity_token: pool.hex,
        offer_amount: offerAmount,
        return_amount: returnAmount,
        fee_amount: String(Math.floor(Number(offerAmount) * 0.003)),
      }),
      ...this.bankEvents(pool, sender, { denom: ask, amount: returnAmount }),
    ];
    return execute(sender, '0x1::dex', 'swap_script', [], [b64(rng, 32), b64(rng, 32), b64(rng, 8), b64(rng, 9)], events);
  }

  createCollection(rng: Prng, col: Collection): BuiltMsg {
    const c = toHex0x(col.addr);
    return execute(
      col.creator,
      '0x1::simple_nft',
      'create_collection',
      [],
      [b64(rng, 24), b64(rng, 9), Buffer.from(col.name).toString('base64'), b64(rng, 8), b64(rng, 40), b64(rng, 16)],
      [
        moveEvent('0x1::object::CreateEvent', { object: c, owner: col.creator.hex, version: '1' }),
        moveEvent('0x1::collection::CreateCollectionEvent', { collection: c, creator: col.creator.hex, name: col.name }),
      ],
    );
  }

  /** Mint events only: the IBC receive path reuses them inside MsgRecvPacket. */
  mintEvents(col: Collection, tokens: Token[]): Ev[] {
    const out: Ev[] = [];
    for (const t of tokens) {
      const nft = toHex0x(t.objectAddr as Buffer);
      out.push(
        moveEvent('0x1::object::CreateEvent', { object: nft, owner: col.creator.hex, version: '1' }),
        moveEvent('0x1::collection::MintEvent', { collection: toHex0x(col.addr), index: String(t.index), nft }),
      );
      if (t.owner.hex !== col.creator.hex) {
        out.push(moveEvent('0x1::object::TransferEvent', { object: nft, from: col.creator.hex, to: t.owner.hex }));
      }
    }
    return out;
  }

  mint(rng: Prng, col: Collection, tokens: Token[]): BuiltMsg[] {
    const events = this.mintEvents(col, tokens);
    if (tokens.length === 1) {
      return [execute(col.creator, '0x1::simple_nft', 'mint', [], [b64(rng, 20), b64(rng, 12), b64(rng, 40), b64(rng, 33)], events)];
    }
    return [execute(col.creator, `${col.creator.hex}::launchpad`, 'mint_batch', [], [b64(rng, 32), b64(rng, 8 * tokens.length)], events)];
  }

  transfer(rng: Prng, token: Token, from: Holder, to: Holder): BuiltMsg {
    const nft = toHex0x(token.objectAddr as Buffer);
    return execute(
      from,
      '0x1::object',
      'transfer_call',
      ['0x1::nft::Nft'],
      [(token.objectAddr as Buffer).toString('base64'), to.addr.toString('base64')],
      [moveEvent('0x1::object::TransferEvent', { object: nft, from: from.hex, to: to.hex })],
    );
  }

  burn(rng: Prng, token: Token, owner: Holder): BuiltMsg {
    const nft = toHex0x(token.objectAddr as Buffer);
    return execute(
      owner,
      '0x1::simple_nft',
      'burn',
      ['0x1::simple_nft::SimpleNft'],
      [(token.objectAddr as Buffer).toString('base64')],
      [moveEvent('0x1::collection::BurnEvent', { collection: toHex0x(token.col.addr), index: String(token.index), nft })],
    );
  }
}
