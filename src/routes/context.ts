import { canonicalAddress } from '../lib/address';
import type { Snapshot } from '../snapshot/open';

/** The routes read the request's snapshot through the one request-context definition (src/http/context.ts). */
export { snapshotOf } from '../http/context';

/** The canonical bytes of an address parameter in hex, as the writer names accounts and collections in tags (src/snapshot/tags.ts). */
export const addressHex = (value: unknown, s: Snapshot): string => canonicalAddress(String(value), s.meta.prefix).toString('hex');
