import { Account } from './chain';
import { jsonbStringify } from './jsonb';
import { Prng } from './prng';

export interface Attr {
  key: string;
  index: boolean;
  value: string;
}

export interface Ev {
  type: string;
  attributes: Attr[];
}

export interface Coin {
  denom: string;
  amount: string;
}

/** One message of a tx body and the events it emits when it succeeds. */
export interface BuiltMsg {
  msg: { '@type': string } & Record<string, unknown>;
  /** `module` attribute of the message's `message` event. */
  module: string;
  events: Ev[];
  /** Protobuf bytes of the Msg…Response (empty when the response has no fields set). */
  response?: Buffer;
}

export interface Failure {
  code: number;
  codespace: string;
  log: string;
  outOfGas?: boolean;
}

export interface TxDraft {
  signer: Account;
  msgs: BuiltMsg[];
  gasWanted: number;
  memo?: string;
  fail?: Failure;
}

export interface BlockRef {
  height: number;
  timeText: string;
}

export interface BuiltTx {
  line: string;
  gasWanted: number;
  gasUsed: number;
  fee: Coin[];
}

export function ev(type: string, ...pairs: [string, string][]): Ev {
  return { type, attributes: pairs.map(([key, value]) => ({ key, index: true, value })) };
}

export function coin(amount: string | number | bigint, denom: string): Coin {
  return { denom, amount: String(amount) };
}

export function coinText(c: Coin): string {
  return `${c.amount}${c.denom}`;
}

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}

/** A length-delimited protobuf field. */
export function pbBytes(field: number, bytes: Buffer): Buffer {
  return Buffer.concat([varint((field << 3) | 2), varint(bytes.length), bytes]);
}

export function pbVarint(field: number, n: number): Buffer {
  return Buffer.concat([varint(field << 3), varint(n)]);
}

/** ABCI result data of a successful tx: TxMsgData{msg_responses: [Any{type_url, value}]}. */
function txMsgData(msgs: BuiltMsg[]): string {
  const parts = msgs.map((m) => {
    const any = [pbBytes(1, Buffer.from(`${m.msg['@type']}Response`))];
    if (m.response && m.response.length > 0) any.push(pbBytes(2, m.response));
    return pbBytes(2, Buffer.concat(any));
  });
  return Buffer.concat(parts).toString('hex').toUpperCase();
}

export interface FeeEnv {
  feeCollector: string;
}

function pickFee(rng: Prng, gasWanted: number): Coin[] {
  const r = rng.float();
  if (r < 0.02) return [];
  if (r < 0.1) return [coin(Math.ceil(gasWanted * 0.0025), 'uusdc')];
  return [coin(Math.ceil(gasWanted * 0.015), 'umin')];
}

/** Fee deduction and the ante handler's `tx` events, emitted even when the messages fail. */
function anteEvents(env: FeeEnv, signer: Account, fee: Coin[], seq: number, sig: string): Ev[] {
  const out: Ev[] = [];
  const feeText = fee.map(coinText).join(',');
  if (fee.length > 0) {
    out.push(
      ev('coin_spent', ['spender', signer.bech32], ['amount', feeText]),
      ev('coin_received', ['receiver', env.feeCollector], ['amount', feeText]),
      ev('transfer', ['recipient', env.feeCollector], ['sender', signer.bech32], ['amount', feeText]),
      ev('message', ['sender', signer.bech32]),
    );
  }
  out.push(ev('tx', ['fee', feeText], ['fee_payer', signer.bech32]), ev('tx', ['acc_seq', `${signer.bech32}/${seq}`]), ev('tx', ['signature', sig]));
  return out;
}

/**
 * Serializes one txs.ndjson record. The Tx object's top-level keys are in the API's fixed order
 * (docs/api-contract.md#tx); its `tx` and `events` members in jsonb order (docs/api-contract.md#jsonb-key-order).
 */
export function buildTx(env: FeeEnv, draft: TxDraft, block: BlockRef, sequence: number, rng: Prng): BuiltTx {
  const { signer, msgs, gasWanted, fail } = draft;
  const fee = pickFee(rng, gasWanted);
  const sig = rng.bytes(64).toString('base64');
  const accSeq = signer.nonce++;
  let gasUsed: number;
  if (!fail) gasUsed = Math.floor(gasWanted * (0.55 + rng.float() * 0.37));
  else if (fail.outOfGas) gasUsed = gasWanted + rng.int(1, 5000);
  else gasUsed = Math.floor(gasWanted * (0.3 + rng.float() * 0.2));

  const events = anteEvents(env, signer, fee, accSeq, sig);
  if (!fail) {
    msgs.forEach((m, i) => {
      const idx = { key: 'msg_index', index: true, value: String(i) };
      events.push({
        type: 'message',
        attributes: [
          { key: 'action', index: true, value: m.msg['@type'] },
          { key: 'sender', index: true, value: signer.bech32 },
          { key: 'module', index: true, value: m.module },
          idx,
        ],
      });
      for (const e of m.events) events.push({ type: e.type, attributes: [...e.attributes, idx] });
    });
  }

  const tx = {
    body: {
      messages: msgs.map((m) => m.msg),
      memo: draft.memo ?? '',
      timeout_height: '0',
      extension_options: [],
      non_critical_extension_options: [],
    },
    auth_info: {
      signer_infos: [
        {
          public_key: signer.publicKey,
          mode_info: { single: { mode: 'SIGN_MODE_DIRECT' } },
          sequence: String(accSeq),
        },
      ],
      fee: { amount: fee, gas_limit: String(gasWanted), payer: '', granter: '' },
      tip: null,
    },
    signatures: [sig],
  };

  const hash = rng.bytes(32).toString('hex').toUpperCase();
  const line =
    `{"sequence":${sequence},"tx":{"txhash":"${hash}","height":"${block.height}",` +
    `"codespace":${JSON.stringify(fail?.codespace ?? '')},"code":${fail?.code ?? 0},` +
    `"data":"${fail ? '' : txMsgData(msgs)}","raw_log":${JSON.stringify(fail?.log ?? '')},` +
    `"logs":[],"info":"","gas_wanted":"${gasWanted}","gas_used":"${gasUsed}",` +
    `"tx":${jsonbStringify(tx)},"timestamp":"${block.timeText}","events":${jsonbStringify(events)}}}`;
  return { line, gasWanted, gasUsed, fee };
}
