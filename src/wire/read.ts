import { rawMembers } from '../lib/raw-json';
import type { BlockFields, Coin } from './block';
import type { EvmLog, EvmReceipt, InternalTx } from './evm';
import type { CollectionFields, NftFields } from './nft';
import type { TxFields } from './tx';

/**
 * Stored JSON back into the fields its serializer takes, so that `import --base` can render a
 * base snapshot of an older wire format with the current serializers (format.ts). Members are
 * read by name and numbers accepted as JSON numbers or decimal strings, so a rendering that
 * differs in key order, number-vs-string or hex case reads the same; the raw `tx`, `events`
 * and `logs` fragments of a tx are kept byte-for-byte.
 */

type Obj = Record<string, unknown>;

function obj(json: string): Obj {
  return JSON.parse(json) as Obj;
}
const str = (o: Obj, k: string): string => (o[k] === undefined || o[k] === null ? '' : String(o[k]));
const num = (o: Obj, k: string): number => Number(o[k] ?? 0);

export function readBlock(json: string): BlockFields {
  const o = obj(json);
  const proposer = (o.proposer ?? {}) as Obj;
  return {
    chainId: str(o, 'chain_id'),
    height: num(o, 'height'),
    hashHex: str(o, 'hash'),
    blockTimeMs: num(o, 'block_time'),
    timestamp: str(o, 'timestamp'),
    gasUsed: num(o, 'gas_used'),
    gasWanted: num(o, 'gas_wanted'),
    txCount: num(o, 'tx_count'),
    totalFee:
      o.total_fee === null || o.total_fee === undefined
        ? null
        : (o.total_fee as Obj[]).map((c): Coin => ({ denom: str(c, 'denom'), amount: str(c, 'amount') })),
    proposer: { moniker: str(proposer, 'moniker'), operatorAddress: str(proposer, 'operator_address') },
  };
}

export function readTx(json: string): TxFields {
  const o = obj(json);
  const raw = rawMembers(json);
  return {
    txhash: str(o, 'txhash'),
    height: num(o, 'height'),
    codespace: str(o, 'codespace'),
    code: num(o, 'code'),
    data: str(o, 'data'),
    rawLog: str(o, 'raw_log'),
    logsRaw: raw.get('logs') ?? '[]',
    info: str(o, 'info'),
    gasWanted: str(o, 'gas_wanted'),
    gasUsed: str(o, 'gas_used'),
    txRaw: raw.get('tx') ?? 'null',
    timestamp: str(o, 'timestamp'),
    eventsRaw: raw.get('events') ?? 'null',
  };
}

export function readCollection(json: string): CollectionFields {
  const o = obj(json);
  const c = (o.collection ?? {}) as Obj;
  return {
    objectAddr: str(o, 'object_addr'),
    creator: str(c, 'creator'),
    name: str(c, 'name'),
    originName: str(c, 'origin_name'),
    nftCount: num((c.nfts ?? {}) as Obj, 'length'),
    height: num(o, 'height'),
    timestamp: str(o, 'timestamp'),
  };
}

export function readNft(json: string): NftFields {
  const o = obj(json);
  const nft = (o.nft ?? {}) as Obj;
  return {
    collectionAddr: str(o, 'collection_addr'),
    collectionName: str(o, 'collection_name'),
    collectionOriginName: str(o, 'collection_origin_name'),
    objectAddr: str(o, 'object_addr'),
    owner: str(o, 'owner'),
    tokenId: str(nft, 'token_id'),
    uri: str(nft, 'uri'),
    height: num(o, 'height'),
    timestamp: str(o, 'timestamp'),
  };
}

export function readHolder(json: string): { account: string; amount: string } {
  const o = obj(json);
  return { account: str(o, 'account'), amount: str(o, 'amount') };
}

function readLog(l: Obj): EvmLog {
  return {
    address: str(l, 'address'),
    topics: Array.isArray(l.topics) ? (l.topics as unknown[]).map(String) : null,
    data: str(l, 'data'),
    blockNumber: str(l, 'blockNumber'),
    transactionHash: str(l, 'transactionHash'),
    transactionIndex: str(l, 'transactionIndex'),
    blockHash: str(l, 'blockHash'),
    logIndex: str(l, 'logIndex'),
    removed: l.removed === true,
  };
}

export function readEvmTx(json: string): EvmReceipt {
  const o = obj(json);
  return {
    blockHash: str(o, 'blockHash'),
    blockNumber: str(o, 'blockNumber'),
    contractAddress: o.contractAddress === null || o.contractAddress === undefined ? null : str(o, 'contractAddress'),
    cumulativeGasUsed: str(o, 'cumulativeGasUsed'),
    effectiveGasPrice: str(o, 'effectiveGasPrice'),
    from: str(o, 'from'),
    gasUsed: str(o, 'gasUsed'),
    logs: Array.isArray(o.logs) ? (o.logs as Obj[]).map(readLog) : null,
    logsBloom: str(o, 'logsBloom'),
    status: str(o, 'status'),
    to: str(o, 'to'),
    transactionHash: str(o, 'transactionHash'),
    transactionIndex: str(o, 'transactionIndex'),
    type: str(o, 'type'),
  };
}

export function readInternalTx(json: string): InternalTx {
  const o = obj(json);
  return {
    height: num(o, 'height'),
    hash: str(o, 'hash'),
    parentIndex: num(o, 'parent_index'),
    index: num(o, 'index'),
    type: str(o, 'type'),
    from: str(o, 'from'),
    to: str(o, 'to'),
    input: str(o, 'input'),
    output: str(o, 'output'),
    value: str(o, 'value'),
    gas: str(o, 'gas'),
    gasUsed: str(o, 'gasUsed'),
  };
}
