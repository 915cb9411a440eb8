/**
 * What a snapshot holds of the NFT state, for a source that can deliver only the changed NFTs
 * (follow): it checks that "ours + the changed rows" is the whole state before doing so. Read
 * on the follower's own connection (its last commit), not on a served Snapshot.
 */
import type Database from 'better-sqlite3';

export interface CollectionState {
  count: number;
  name: string;
  originName: string;
}

export interface NftStateProbe {
  /** one collection (lower-case hex address, no 0x): its NFT count and names; undefined if we have none */
  collection(hex: string): CollectionState | undefined;
  /**
   * every collection — O(collections): only the collections audit reads it, apart from the
   * block batches (src/follow/collections-audit.ts); a batch asks collection() per address
   */
  collections(): Map<string, CollectionState>;
  /** whether the snapshot holds this NFT */
  hasToken(collectionHex: string, tokenId: string): boolean;
  /**
   * Move: the collections of the snapshot's NFTs whose object address (canonical hex) is one of
   * `objects` — a Move event moving or changing an NFT names its object, not its collection
   */
  collectionsOfObjects(objects: readonly string[]): Set<string>;
}

export function nftStateProbe(db: Database.Database): NftStateProbe {
  const has = db.prepare('SELECT 1 FROM nfts WHERE collection_addr = ? AND token_id = ?').pluck();
  const one = db.prepare('SELECT nft_count, name, origin_name FROM collections WHERE addr = ?');
  return {
    collection(hex) {
      const r = one.get(Buffer.from(hex, 'hex')) as { nft_count: number; name: string; origin_name: string } | undefined;
      return r && { count: r.nft_count, name: r.name, originName: r.origin_name };
    },
    collections() {
      const rows = db.prepare('SELECT lower(hex(addr)) AS addr, nft_count, name, origin_name FROM collections').all() as {
        addr: string;
        nft_count: number;
        name: string;
        origin_name: string;
      }[];
      return new Map(rows.map((r) => [r.addr, { count: r.nft_count, name: r.name, originName: r.origin_name }]));
    },
    hasToken: (collectionHex, tokenId) => has.get(Buffer.from(collectionHex, 'hex'), tokenId) !== undefined,
    collectionsOfObjects(objects) {
      // Keyed both ways: accounts by address, NFTs by object (nfts_by_object; docs/follow.md "Cost").
      const of = db
        .prepare(
          `SELECT lower(hex(n.collection_addr)) FROM accounts a JOIN nfts n ON n.object_account_id = a.id
        WHERE a.addr = ?`,
        )
        .pluck();
      const out = new Set<string>();
      for (const hex of objects) for (const c of of.all(Buffer.from(hex, 'hex')) as string[]) out.add(c);
      return out;
    },
  };
}
