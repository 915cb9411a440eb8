/**
 * Collection and Nft wire formats (docs/api-contract.md#collection-and-nft): addresses `0x` lower-case hex, owner and
 * creator bech32 on every VM, `height` and `nfts.length` numbers, µs timestamps.
 */
import { JsonBody, objectBody } from './packed';
export interface CollectionFields {
  objectAddr: string;
  creator: string;
  name: string;
  originName: string;
  nftCount: number;
  height: number;
  timestamp: string;
}

export function collectionJson(c: CollectionFields): string {
  return (
    '{"object_addr":' +
    JSON.stringify(c.objectAddr) +
    ',"collection":{"creator":' +
    JSON.stringify(c.creator) +
    ',"name":' +
    JSON.stringify(c.name) +
    ',"origin_name":' +
    JSON.stringify(c.originName) +
    ',"nfts":{"handle":"","length":' +
    c.nftCount +
    '}}' +
    ',"height":' +
    c.height +
    ',"timestamp":' +
    JSON.stringify(c.timestamp) +
    '}'
  );
}

export interface NftFields {
  collectionAddr: string;
  collectionName: string;
  collectionOriginName: string;
  objectAddr: string;
  owner: string;
  tokenId: string;
  uri: string;
  height: number;
  timestamp: string;
}

export function nftJson(n: NftFields): string {
  return (
    '{"collection_addr":' +
    JSON.stringify(n.collectionAddr) +
    ',"collection_name":' +
    JSON.stringify(n.collectionName) +
    ',"collection_origin_name":' +
    JSON.stringify(n.collectionOriginName) +
    ',"object_addr":' +
    JSON.stringify(n.objectAddr) +
    ',"owner":' +
    JSON.stringify(n.owner) +
    ',"nft":{"token_id":' +
    JSON.stringify(n.tokenId) +
    ',"uri":' +
    JSON.stringify(n.uri) +
    '}' +
    ',"height":' +
    n.height +
    ',"timestamp":' +
    JSON.stringify(n.timestamp) +
    '}'
  );
}

/** The answer `{"collection":…}` around a stored row (either wire format). */
export function collectionResponse(stored: Buffer | string): JsonBody {
  return objectBody('collection', stored);
}
