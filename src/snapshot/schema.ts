import { readTextAsset } from '../assets';

/** Bumped whenever sql/ changes shape; `serve` refuses any other PRAGMA user_version. */
export const SCHEMA_VERSION = 2;

/** Numbered schema files, applied in order: tables before the bulk load, indexes after it. */
export const TABLES_SQL = 'sql/001-tables.sql';
export const INDEXES_SQL = 'sql/002-indexes.sql';

export function schemaSql(file: string): string {
  return readTextAsset(file);
}

/**
 * Meta key: `0` when the source does not index EVM internal txs (rollytics' internal-tx extension
 * off: its evm-internal-txs routes answer 404), so a replica answers 404 there too; absent or `1`:
 * indexed (docs/api-contract.md#evm-internal-tx).
 */
export const EVM_INTERNAL_TXS_META_KEY = 'evm_internal_txs';
