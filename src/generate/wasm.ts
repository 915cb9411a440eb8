import { toBech32 } from '../lib/address';
import { Account } from './chain';
import { addressResponse } from './cosmos';
import { Collection, Holder, Token } from './nft';
import { Prng } from './prng';
import { BuiltMsg, Coin, Ev, coin, coinText, ev } from './tx';
import { VmAdapter, amount, b64 } from './vm';

function contract(rng: Prng, prefix: string): Holder {
  const addr = rng.objectAddress();
  return { addr, bech32: toBech32(addr, prefix), hex: '0x' + addr.toString('hex') };
}

function executeContract(sender: Holder, target: string, msg: object, events: Ev[], funds: Coin[] = []): BuiltMsg {
  return {
    msg: { '@type': '/cosmwasm.wasm.v1.MsgExecuteContract', sender: sender.bech32, contract: target, msg, funds },
    module: 'wasm',
    events: [ev('execute', ['_contract_address', target]), ...events],
  };
}

/** cw20 / cw721 / a dex pair, as CosmWasm emits them: `wasm` events keyed by `_contract_address`. */
export class WasmVm implements VmAdapter {
  private readonly cw20: Holder[];
  private readonly pair: Holder;
  private readonly market: Holder;

  constructor(
    rng: Prng,
    private readonly prefix: string,
  ) {
    this.cw20 = [contract(rng, prefix), contract(rng, prefix)];
    this.pair = contract(rng, prefix);
    this.market = contract(rng, prefix);
  }

  bankEvents(): Ev[] {
    return [];
  }

  private cw20Transfer(token: Holder, from: Holder, to: Holder, amt: string): Ev {
    return ev('wasm', ['_contract_address', token.bech32], ['action', 'transfer'], ['from', from.bech32], ['to', to.bech32], ['amount', amt]);
  }

  execute(rng: Prng, sender: Account, other: Account): BuiltMsg {
    const token = rng.pick(this.cw20);
    const amt = amount(rng);
    if (rng.chance(0.7)) {
      return executeContract(sender, token.bech32, { transfer: { recipient: other.bech32, amount: amt } }, [this.cw20Transfer(token, sender, other, amt)]);
    }
    const offer = coin(amt, 'umin');
    const ret = String(Math.max(1, Math.floor(Number(amt) * (0.5 + rng.float()))));
    return executeContract(
      sender,
      this.pair.bech32,
      {
        swap: { offer_asset: { info: { native_token: { denom: 'umin' } }, amount: amt }, max_spread: '0.005', to: null },
      },
      [
        ev('coin_spent', ['spender', sender.bech32], ['amount', coinText(offer)]),
        ev('coin_received', ['receiver', this.pair.bech32], ['amount', coinText(offer)]),
        ev('transfer', ['recipient', this.pair.bech32], ['sender', sender.bech32], ['amount', coinText(offer)]),
        ev(
          'wasm',
          ['_contract_address', this.pair.bech32],
          ['action', 'swap'],
          ['sender', sender.bech32],
          ['receiver', sender.bech32],
          ['offer_asset', 'umin'],
          ['ask_asset', token.bech32],
          ['offer_amount', amt],
          ['return_amount', ret],
          ['spread_amount', '0'],
          ['commission_amount', String(Math.floor(Number(ret) * 0.003))],
        ),
        ev('execute', ['_contract_address', token.bech32]),
        this.cw20Transfer(token, this.pair, sender, ret),
      ],
      [offer],
    );
  }

  createCollection(rng: Prng, col: Collection): BuiltMsg {
    const addr = toBech32(col.addr, this.prefix);
    const creator = col.creator.bech32;
    return {
      msg: {
        '@type': '/cosmwasm.wasm.v1.MsgInstantiateContract',
        sender: creator,
        admin: creator,
        code_id: '7',
        label: `cw721 ${col.symbol}`,
        msg: { name: col.name, symbol: col.symbol, minter: creator, withdraw_address: null },
        funds: [],
      },
      module: 'wasm',
      response: addressResponse(1, addr),
      events: [
        ev('instantiate', ['_contract_address', addr], ['code_id', '7']),
        ev(
          'wasm',
          ['_contract_address', addr],
          ['action', 'instantiate'],
          ['collection_name', col.name],
          ['collection_symbol', col.symbol],
          ['collection_creator', creator],
          ['creator', creator],
          ['minter', creator],
        ),
      ],
    };
  }

  mintEvents(col: Collection, tokens: Token[]): Ev[] {
    return tokens.flatMap((t) => this.mintEvent(col, t));
  }

  private mintEvent(col: Collection, t: Token): Ev[] {
    const addr = toBech32(col.addr, this.prefix);
    return [
      ev(
        'wasm',
        ['_contract_address', addr],
        ['action', 'mint'],
        ['minter', col.creator.bech32],
        ['owner', t.owner.bech32],
        ['token_id', t.tokenId],
        ['token_uri', t.uri],
      ),
    ];
  }

  /** cw721 has no batch mint: one MsgExecuteContract per token, so big mints are multi-message txs. */
  mint(rng: Prng, col: Collection, tokens: Token[]): BuiltMsg[] {
    const addr = toBech32(col.addr, this.prefix);
    return tokens.map((t) =>
      executeContract(col.creator, addr, { mint: { token_id: t.tokenId, owner: t.owner.bech32, token_uri: t.uri, extension: {} } }, this.mintEvent(col, t)),
    );
  }

  transfer(rng: Prng, token: Token, from: Holder, to: Holder): BuiltMsg {
    const addr = toBech32(token.col.addr, this.prefix);
    if (to === this.market) {
      return executeContract(from, addr, { send_nft: { contract: to.bech32, token_id: token.tokenId, msg: b64(rng, 24) } }, [
        ev('wasm', ['_contract_address', addr], ['action', 'send_nft'], ['sender', from.bech32], ['recipient', to.bech32], ['token_id', token.tokenId]),
        ev('execute', ['_contract_address', to.bech32]),
        ev('wasm', ['_contract_address', to.bech32], ['action', 'receive_nft'], ['collection', addr], ['token_id', token.tokenId], ['seller', from.bech32]),
      ]);
    }
    return executeContract(from, addr, { transfer_nft: { recipient: to.bech32, token_id: token.tokenId } }, [
      ev('wasm', ['_contract_address', addr], ['action', 'transfer_nft'], ['sender', from.bech32], ['recipient', to.bech32], ['token_id', token.tokenId]),
    ]);
  }

  burn(rng: Prng, token: Token, owner: Holder): BuiltMsg {
    const addr = toBech32(token.col.addr, this.prefix);
    return executeContract(owner, addr, { burn: { token_id: token.tokenId } }, [
      ev('wasm', ['_contract_address', addr], ['action', 'burn'], ['sender', owner.bech32], ['token_id', token.tokenId]),
    ]);
  }

  nftReceiver(): Holder {
    return this.market;
  }
}
