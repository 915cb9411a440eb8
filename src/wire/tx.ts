/**
 * Tx wire format (docs/api-contract.md#tx): fixed top-level key order, `height`/`gas_*` strings, `code` a
 * number; `logs`, `tx` and `events` are raw JSON fragments kept exactly as the dump gave them.
 */
import { JsonBody, objectBody } from './packed';
export interface TxFields {
  txhash: string;
  height: number;
  codespace: string;
  code: number;
  data: string;
  rawLog: string;
  logsRaw: string;
  info: string;
  gasWanted: string;
  gasUsed: string;
  txRaw: string;
  timestamp: string;
  eventsRaw: string;
}

export function txJson(t: TxFields): string {
  return (
    '{"txhash":"' +
    t.txhash.toUpperCase() +
    '","height":"' +
    t.height +
    '","codespace":' +
    JSON.stringify(t.codespace) +
    ',"code":' +
    t.code +
    ',"data":' +
    JSON.stringify(t.data) +
    ',"raw_log":' +
    JSON.stringify(t.rawLog) +
    ',"logs":' +
    t.logsRaw +
    ',"info":' +
    JSON.stringify(t.info) +
    ',"gas_wanted":"' +
    t.gasWanted +
    '","gas_used":"' +
    t.gasUsed +
    '","tx":' +
    t.txRaw +
    ',"timestamp":"' +
    t.timestamp +
    '","events":' +
    t.eventsRaw +
    '}'
  );
}

/** The answer `{"tx":…}` around a stored row (either wire format). */
export function txResponse(stored: Buffer | string): JsonBody {
  return objectBody('tx', stored);
}
