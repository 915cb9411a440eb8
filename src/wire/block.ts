/** Block wire format (docs/api-contract.md#block): every number a string, hash upper-case hex. */
import { JsonBody, objectBody } from './packed';

export interface Coin {
  denom: string;
  amount: string;
}

export interface BlockFields {
  chainId: string;
  height: number;
  hashHex: string;
  blockTimeMs: number;
  timestamp: string;
  gasUsed: number;
  gasWanted: number;
  txCount: number;
  totalFee: Coin[] | null;
  proposer: { moniker: string; operatorAddress: string };
}

export function blockJson(b: BlockFields): string {
  return (
    '{"chain_id":' +
    JSON.stringify(b.chainId) +
    ',"height":"' +
    b.height +
    '","hash":"' +
    b.hashHex.toUpperCase() +
    '","block_time":"' +
    b.blockTimeMs +
    '","timestamp":"' +
    b.timestamp +
    '","gas_used":"' +
    b.gasUsed +
    '","gas_wanted":"' +
    b.gasWanted +
    '","tx_count":"' +
    b.txCount +
    '","total_fee":' +
    (b.totalFee === null
      ? 'null'
      : '[' + b.totalFee.map((c) => '{"denom":' + JSON.stringify(c.denom) + ',"amount":' + JSON.stringify(c.amount) + '}').join(',') + ']') +
    ',"proposer":{"moniker":' +
    JSON.stringify(b.proposer.moniker) +
    ',"identity":"","operator_address":' +
    JSON.stringify(b.proposer.operatorAddress) +
    '}}'
  );
}

/** The answer `{"block":…}` around a stored row (either wire format). */
export function blockResponse(stored: Buffer | string): JsonBody {
  return objectBody('block', stored);
}

/** rollytics avg_blocktime: seconds between the newest and oldest of the last ≤100 blocks. */
export function avgBlockTimeResponse(newestUs: number | undefined, oldestUs: number | undefined, rows: number): string {
  const avg = rows < 2 || newestUs === undefined || oldestUs === undefined ? 0 : (newestUs - oldestUs) / 1e6 / (rows - 1);
  return '{"avg_block_time":' + String(avg) + '}';
}
