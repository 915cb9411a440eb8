import { readTextAsset } from '../assets';

/** Bumped whenever sql/ changes shape; `serve` refuses any other PRAGMA user_version. */
export const SCHEMA_VERSION = 2;

/** Numbered schema files, applied in order: tables before the bulk load, indexes after it. */
export const TABLES_SQL = 'sql/001-tables.sql';
export const INDEXES_SQL = 'sql/002-indexes.sql';

export function schemaSql(file: string): string {
  return readTextAsset(file);
}
