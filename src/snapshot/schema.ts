import { readTextAsset } from '../assets';

/**
 * Bumped whenever sql/ changes shape: what this build writes (PRAGMA user_version and meta
 * schema_version). Version 3 added the rich list's rank marks (table richlist_ranks), version 4
 * the NFT and rich-list tag digests (table tag_digests).
 */
export const SCHEMA_VERSION = 4;

/**
 * The versions this build reads; anything else is refused. A version-2 file (no rank marks) is
 * served as it is, its rich lists paged by offset up to MAX_OFFSET only; it becomes version 3 —
 * marks written, user_version set, in one transaction — when `follow` first writes it or
 * `import --base` builds on it (src/snapshot/richlist-ranks.ts ensureRanks). Likewise a file
 * before version 4 (no tag digests) is served with its NFT and rich-list answers keeping the ETag
 * of their bytes, and becomes version 4 with its first write in place or `import --base`
 * (src/snapshot/tag-digests.ts ensureDigests).
 */
export const READABLE_SCHEMA_VERSIONS: readonly number[] = [2, 3, 4];

/** The first version with rank marks (richlist_ranks). */
export const RANKS_SCHEMA_VERSION = 3;

export function readableSchema(version: number): boolean {
  return READABLE_SCHEMA_VERSIONS.includes(version);
}

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
