/**
 * A snapshot's own rows read back for `import --base` and `follow` (src/records/incremental.ts):
 * the meta, validators and current NFT state of the base, which the loader validates again
 * with the new source's records. Iterated in a stable order (the records' order in a dump).
 */
import type Database from 'better-sqlite3';

/** meta as key → value (every key; openSnapshotFile reads the same). */
export function metaValues(db: Database.Database): Map<string, string> {
  return new Map((db.prepare('SELECT key, value FROM meta').all() as { key: string; value: string }[]).map((r) => [r.key, r.value]));
}

/** Every block's height and tx count (a resumed crawl's load: src/records/from-dump.ts resumeState). */
export function blockTxCounts(db: Database.Database): IterableIterator<[number, number]> {
  return db.prepare('SELECT height, tx_count FROM blocks').raw().iterate() as IterableIterator<[number, number]>;
}

export interface ValidatorRow {
  proposer: string;
  moniker: string;
  operator_address: string;
}
export interface CollectionRow {
  addr: Buffer;
  creator: Buffer;
  name: string;
  origin_name: string;
  height: number;
  timestamp: string;
}
/** json: the stored column — packed (wire format 2) or the text itself (1): read it with readPackedRow */
export interface NftRow {
  collection_addr: Buffer;
  token_id: string;
  json: Buffer | string;
}

function* iterate<T>(db: Database.Database, sql: string): Generator<T> {
  yield* db.prepare(sql).iterate() as IterableIterator<T>;
}

export function validatorRows(db: Database.Database): Generator<ValidatorRow> {
  return iterate(db, 'SELECT proposer, moniker, operator_address FROM validators ORDER BY proposer');
}

/** collections with their creator's address (not its account id) */
export function collectionRows(db: Database.Database): Generator<CollectionRow> {
  return iterate(
    db,
    `SELECT c.addr, a.addr AS creator, c.name, c.origin_name, c.height, c.timestamp
    FROM collections c JOIN accounts a ON a.id = c.creator_id ORDER BY c.height, c.addr`,
  );
}

/** every NFT with its stored JSON */
export function nftRows(db: Database.Database): Generator<NftRow> {
  return iterate(db, 'SELECT collection_addr, token_id, json FROM nfts ORDER BY collection_addr, token_id');
}
