/** The NFT state an API serves, read whole for follow's collections audit (src/follow/collections-audit.ts). */
import { canonicalAddress } from '../../lib/address';
import type { CollectionState } from '../../snapshot/queries/nft-state';
import { HttpClient, HttpError } from '../http';
import { members, PAGE, parseJson } from './answers';

/**
 * follow's collections audit (src/follow/collections-audit.ts): every collection of an API with
 * its NFT count and names, keyed by canonical hex — pages by next_key, one after the other.
 */
export async function readCollectionStates(http: HttpClient, base: string, prefix: string, pageSize = PAGE): Promise<Map<string, CollectionState>> {
  const out = new Map<string, CollectionState>();
  let nextKey: string | null = null;
  for (;;) {
    const path: string =
      '/indexer/nft/v1/collections?pagination.reverse=false&pagination.count_total=false' +
      `&pagination.limit=${pageSize}${nextKey === null ? '' : `&pagination.key=${encodeURIComponent(nextKey)}`}`;
    const page = members(base + path, await http.get(path), 'collections');
    for (const text of page.items) {
      const c = parseJson<{ object_addr?: unknown; collection?: { name?: unknown; origin_name?: unknown; nfts?: { length?: unknown } } }>(base + path, text);
      let hex: string;
      try {
        hex = canonicalAddress(String(c.object_addr), prefix).toString('hex');
      } catch {
        throw new HttpError(base + path, 200, `GET ${base}${path}: collection ${JSON.stringify(c.object_addr)} has no valid address`);
      }
      const n = c.collection?.nfts?.length;
      out.set(hex, { count: Number(n), name: String(c.collection?.name ?? ''), originName: String(c.collection?.origin_name ?? '') });
    }
    if (page.items.length < pageSize || page.nextKey === null) return out;
    nextKey = page.nextKey;
  }
}
