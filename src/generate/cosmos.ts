import { toBech32 } from '../lib/address';
import { Account, epochNs, moduleAddress, sha256 } from './chain';
import { Holder } from './nft';
import { Prng } from './prng';
import { BuiltMsg, Coin, Ev, coin, coinText, ev, pbBytes, pbVarint } from './tx';
import { VmAdapter, amount, b64 } from './vm';

const L1_CHAIN = 'initiation-2';
const CHANNEL = 'channel-0';
const L1_CHANNEL = 'channel-12';
const NFT_CHANNEL = 'channel-1';
const L1_NFT_CHANNEL = 'channel-31';

/** Bank and IBC messages, identical on every VM apart from the VM's own bank events. */
export class CosmosMsgs {
  readonly ibcDenom: string;
  private readonly escrow: string;
  private readonly transferModule: string;
  private packetSeq = 0;
  private recvSeq = 0;
  private l1Height = 4_200_000;

  constructor(
    private readonly vm: VmAdapter,
    private readonly prefix: string,
  ) {
    this.ibcDenom = `ibc/${sha256(`transfer/${CHANNEL}/uinit`).toString('hex').toUpperCase()}`;
    this.escrow = toBech32(sha256(`ics20-1\0transfer/${CHANNEL}`).subarray(0, 20), prefix);
    this.transferModule = toBech32(moduleAddress('transfer'), prefix);
  }

  private bankMoves(from: Holder, to: Holder, c: Coin): Ev[] {
    const amt = coinText(c);
    return [
      ev('coin_spent', ['spender', from.bech32], ['amount', amt]),
      ev('coin_received', ['receiver', to.bech32], ['amount', amt]),
      ev('transfer', ['recipient', to.bech32], ['sender', from.bech32], ['amount', amt]),
      ev('message', ['sender', from.bech32]),
      ...this.vm.bankEvents(from, to, c),
    ];
  }

  send(rng: Prng, from: Account, to: Holder): BuiltMsg {
    const c = coin(amount(rng), rng.chance(0.8) ? 'umin' : 'uusdc');
    return {
      msg: { '@type': '/cosmos.bank.v1beta1.MsgSend', from_address: from.bech32, to_address: to.bech32, amount: [c] },
      module: 'bank',
      events: this.bankMoves(from, to, c),
    };
  }

  /** An outgoing ICS-20 transfer to a random L1 address. */
  ibcTransfer(rng: Prng, from: Account, ms: number): BuiltMsg {
    const c = coin(amount(rng), rng.chance(0.7) ? 'umin' : 'uusdc');
    const receiver = toBech32(rng.bytes(20), this.prefix);
    const seq = String(++this.packetSeq);
    const timeout = epochNs(ms + 600_000, 0);
    const data = JSON.stringify({ amount: c.amount, denom: c.denom, memo: '', receiver, sender: from.bech32 });
    return {
      msg: {
        '@type': '/ibc.applications.transfer.v1.MsgTransfer',
        source_port: 'transfer',
        source_channel: CHANNEL,
        token: c,
        sender: from.bech32,
        receiver,
        timeout_height: { revision_number: '0', revision_height: '0' },
        timeout_timestamp: timeout,
        memo: '',
      },
      module: 'ibc_transfer',
      response: pbVarint(1, this.packetSeq),
      events: [
        ...this.bankMoves(from, { addr: Buffer.alloc(0), bech32: this.escrow, hex: '' }, c),
        ev(
          'send_packet',
          ['packet_data', data],
          ['packet_data_hex', Buffer.from(data).toString('hex')],
          ['packet_timeout_height', '0-0'],
          ['packet_timeout_timestamp', timeout],
          ['packet_sequence', seq],
          ['packet_src_port', 'transfer'],
          ['packet_src_channel', CHANNEL],
          ['packet_dst_port', 'transfer'],
          ['packet_dst_channel', L1_CHANNEL],
          ['packet_channel_ordering', 'ORDER_UNORDERED'],
          ['connection_id', 'connection-0'],
        ),
        ev('ibc_transfer', ['sender', from.bech32], ['receiver', receiver], ['amount', c.amount], ['denom', c.denom], ['memo', '']),
      ],
    };
  }

  /** The light-client update a relayer sends before every packet. */
  updateClient(rng: Prng, relayer: Account, ms: number): BuiltMsg {
    this.l1Height += rng.int(1, 40);
    const h = String(this.l1Height);
    return {
      msg: {
        '@type': '/ibc.core.client.v1.MsgUpdateClient',
        client_id: '07-tendermint-0',
        client_message: {
          '@type': '/ibc.lightclients.tendermint.v1.Header',
          signed_header: {
            header: { chain_id: L1_CHAIN, height: h, time: new Date(ms - 2000).toISOString(), app_hash: b64(rng, 32) },
            commit: { height: h, round: 0, block_id: { hash: b64(rng, 32) }, signatures: [] },
          },
          trusted_height: { revision_number: '2', revision_height: String(this.l1Height - 12) },
        },
        signer: relayer.bech32,
      },
      module: 'ibc_client',
      events: [
        ev(
          'update_client',
          ['client_id', '07-tendermint-0'],
          ['client_type', '07-tendermint'],
          ['consensus_height', `2-${h}`],
          ['consensus_heights', `2-${h}`],
        ),
      ],
    };
  }

  /** A received packet; `inner` are the events the receiving application emitted. */
  private recvPacket(rng: Prng, relayer: Account, ms: number, port: string, channels: [string, string], data: string, inner: Ev[]): BuiltMsg {
    const seq = String(++this.recvSeq);
    const timeout = epochNs(ms + 600_000, 0);
    const packet = [
      ['packet_data', data],
      ['packet_data_hex', Buffer.from(data).toString('hex')],
      ['packet_timeout_height', '0-0'],
      ['packet_timeout_timestamp', timeout],
      ['packet_sequence', seq],
      ['packet_src_port', port],
      ['packet_src_channel', channels[1]],
      ['packet_dst_port', port],
      ['packet_dst_channel', channels[0]],
    ] as [string, string][];
    return {
      msg: {
        '@type': '/ibc.core.channel.v1.MsgRecvPacket',
        packet: {
          sequence: seq,
          source_port: port,
          source_channel: channels[1],
          destination_port: port,
          destination_channel: channels[0],
          data: Buffer.from(data).toString('base64'),
          timeout_height: { revision_number: '0', revision_height: '0' },
          timeout_timestamp: timeout,
        },
        proof_commitment: b64(rng, 96),
        proof_height: { revision_number: '2', revision_height: String(this.l1Height) },
        signer: relayer.bech32,
      },
      module: 'ibc_channel',
      response: pbVarint(1, 2),
      events: [
        ev('recv_packet', ...packet, ['packet_channel_ordering', 'ORDER_UNORDERED'], ['connection_id', 'connection-0']),
        ...inner,
        ev(
          'write_acknowledgement',
          ...packet,
          ['packet_ack', '{"result":"AQ=="}'],
          ['packet_ack_hex', Buffer.from('{"result":"AQ=="}').toString('hex')],
          ['connection_id', 'connection-0'],
        ),
      ],
    };
  }

  /** Incoming ICS-20 transfer of L1 INIT: the voucher is minted to `to`. */
  ibcReceive(rng: Prng, relayer: Account, to: Account, ms: number): BuiltMsg {
    const c = coin(amount(rng), this.ibcDenom);
    const sender = toBech32(rng.bytes(20), this.prefix);
    const data = JSON.stringify({ amount: c.amount, denom: 'uinit', receiver: to.bech32, sender });
    const module = { addr: Buffer.alloc(0), bech32: this.transferModule, hex: '' };
    return this.recvPacket(rng, relayer, ms, 'transfer', [CHANNEL, L1_CHANNEL], data, [
      ev('denomination', ['trace_hash', this.ibcDenom.slice(4)], ['denom', `transfer/${CHANNEL}/uinit`]),
      ev('coinbase', ['minter', this.transferModule], ['amount', coinText(c)]),
      ev('coin_received', ['receiver', this.transferModule], ['amount', coinText(c)]),
      ...this.bankMoves(module, to, c),
      ev(
        'fungible_token_packet',
        ['module', 'transfer'],
        ['sender', sender],
        ['receiver', to.bech32],
        ['denom', 'uinit'],
        ['amount', c.amount],
        ['memo', ''],
        ['success', 'true'],
      ),
    ]);
  }

  /** Incoming ICS-721 transfer: the VM's mint events (`vmEvents`) run inside the packet. */
  nftReceive(rng: Prng, relayer: Account, ms: number, classId: string, originName: string, tokenIds: string[], receiver: Account, vmEvents: Ev[]): BuiltMsg {
    const sender = toBech32(rng.bytes(20), this.prefix);
    const classData = Buffer.from(JSON.stringify({ name: originName })).toString('base64');
    const data = JSON.stringify({
      classData,
      classId,
      classUri: '',
      memo: '',
      receiver: receiver.bech32,
      sender,
      tokenData: tokenIds.map(() => ''),
      tokenIds,
      tokenUris: tokenIds.map(() => ''),
    });
    return this.recvPacket(rng, relayer, ms, 'nft-transfer', [NFT_CHANNEL, L1_NFT_CHANNEL], data, [
      ...vmEvents,
      ev(
        'non_fungible_token_packet',
        ['module', 'nft-transfer'],
        ['sender', sender],
        ['receiver', receiver.bech32],
        ['class_id', classId],
        ['token_ids', tokenIds.join(',')],
        ['memo', ''],
        ['success', 'true'],
      ),
    ]);
  }
}

/** Wraps a MsgInstantiate/MsgCreate response address the way the SDK encodes it. */
export function addressResponse(field: number, text: string): Buffer {
  return pbBytes(field, Buffer.from(text));
}
