/**
 * EVM wire formats (docs/api-contract.md#evm-tx, docs/api-contract.md#evm-internal-tx). Both objects are rendered once, at import, and
 * stored as the text served; responses only join stored text.
 */
import { JsonBody, objectBody } from './packed';

/** EvmTx keys in rollytics' struct order; every other receipt field is dropped. */
export const RECEIPT_KEYS = [
  'blockHash',
  'blockNumber',
  'contractAddress',
  'cumulativeGasUsed',
  'effectiveGasPrice',
  'from',
  'gasUsed',
  'logs',
  'logsBloom',
  'status',
  'to',
  'transactionHash',
  'transactionIndex',
  'type',
] as const;

/** EvmLog keys in struct order. */
export const LOG_KEYS = ['address', 'topics', 'data', 'blockNumber', 'transactionHash', 'transactionIndex', 'blockHash', 'logIndex', 'removed'] as const;

export interface EvmLog {
  address: string;
  topics: string[] | null;
  data: string;
  blockNumber: string;
  transactionHash: string;
  transactionIndex: string;
  blockHash: string;
  logIndex: string;
  removed: boolean;
}

export interface EvmReceipt {
  blockHash: string;
  blockNumber: string;
  contractAddress: string | null;
  cumulativeGasUsed: string;
  effectiveGasPrice: string;
  from: string;
  gasUsed: string;
  logs: EvmLog[] | null;
  logsBloom: string;
  status: string;
  /** `""` for a contract creation (the node's `to: null`) */
  to: string;
  transactionHash: string;
  transactionIndex: string;
  type: string;
}

const s = (v: string): string => JSON.stringify(v);

function logJson(l: EvmLog): string {
  return (
    '{"address":' +
    s(l.address) +
    ',"topics":' +
    (l.topics === null ? 'null' : '[' + l.topics.map(s).join(',') + ']') +
    ',"data":' +
    s(l.data) +
    ',"blockNumber":' +
    s(l.blockNumber) +
    ',"transactionHash":' +
    s(l.transactionHash) +
    ',"transactionIndex":' +
    s(l.transactionIndex) +
    ',"blockHash":' +
    s(l.blockHash) +
    ',"logIndex":' +
    s(l.logIndex) +
    ',"removed":' +
    (l.removed ? 'true' : 'false') +
    '}'
  );
}

/** The EvmTx object: fixed keys in struct order, `contractAddress` may be null, `to` never. */
export function evmTxJson(r: EvmReceipt): string {
  return (
    '{"blockHash":' +
    s(r.blockHash) +
    ',"blockNumber":' +
    s(r.blockNumber) +
    ',"contractAddress":' +
    (r.contractAddress === null ? 'null' : s(r.contractAddress)) +
    ',"cumulativeGasUsed":' +
    s(r.cumulativeGasUsed) +
    ',"effectiveGasPrice":' +
    s(r.effectiveGasPrice) +
    ',"from":' +
    s(r.from) +
    ',"gasUsed":' +
    s(r.gasUsed) +
    ',"logs":' +
    (r.logs === null ? 'null' : '[' + r.logs.map(logJson).join(',') + ']') +
    ',"logsBloom":' +
    s(r.logsBloom) +
    ',"status":' +
    s(r.status) +
    ',"to":' +
    s(r.to) +
    ',"transactionHash":' +
    s(r.transactionHash) +
    ',"transactionIndex":' +
    s(r.transactionIndex) +
    ',"type":' +
    s(r.type) +
    '}'
  );
}

export interface InternalTx {
  height: number;
  /** `0x` + lower-case hex of the parent EVM tx hash */
  hash: string;
  parentIndex: number;
  index: number;
  type: string;
  /** `0x` + 40 lower-case hex, or `""` when the tracer gave none */
  from: string;
  to: string;
  /** `0x` + even-length lower-case hex (`0x` when empty) */
  input: string;
  output: string;
  value: string;
  gas: string;
  gasUsed: string;
}

/** The internal tx object: `height`, `parent_index`, `index` are JSON numbers (docs/api-contract.md#evm-internal-tx). */
export function internalTxJson(t: InternalTx): string {
  return (
    '{"height":' +
    t.height +
    ',"hash":' +
    s(t.hash) +
    ',"parent_index":' +
    t.parentIndex +
    ',"index":' +
    t.index +
    ',"type":' +
    s(t.type) +
    ',"from":' +
    s(t.from) +
    ',"to":' +
    s(t.to) +
    ',"input":' +
    s(t.input) +
    ',"output":' +
    s(t.output) +
    ',"value":' +
    s(t.value) +
    ',"gas":' +
    s(t.gas) +
    ',"gasUsed":' +
    s(t.gasUsed) +
    '}'
  );
}

/** The answer `{"tx":…}` around a stored row (either wire format). */
export function evmTxResponse(stored: Buffer | string): JsonBody {
  return objectBody('tx', stored);
}
