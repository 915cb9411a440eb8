/**
 * The tag vocabulary of change records, shared by the writer and the response cache: the one
 * module both import (docs/response-cache.md "What a write changes"). Every write to a live
 * snapshot — a follow batch, a rich-list refresh — records the tags of what it changed
 * (src/snapshot/changes.ts recordChange, called by src/snapshot/writer.ts and
 * src/snapshot/richlist-writer.ts); each route declares the tags its answer reads (its
 * declaration's `reads`, src/routes/<resource>/routes.ts); the cache drops an answer when a write
 * names one of them (src/cache/store.ts).
 *
 * A leaf of the snapshot layer (it imports nothing): the writer beside it records these tags, and
 * the routes and the response cache above read them. TAG_TABLE is the table docs/response-cache.md
 * shows: test/snapshot/tags.test.ts fails when the two differ.
 *
 * Accounts and collections are keyed by their canonical bytes in lower-case hex (the `addr`
 * column of `accounts`; what src/lib/address.ts canonicalAddress gives for every spelling:
 * bech32, 0x, EIP-55, zero-padded), so all spellings of one account share one tag.
 */

export const TIP = 'tip';
export const ANY_TX = 'tx';
export const INTERNAL_TXS = 'itx';
export const COLLECTIONS = 'cl';
export const heightTag = (height: number): string => `h:${height}`;
export const accountTag = (hex: string): string => `a:${hex}`;
export const ownerTag = (hex: string): string => `o:${hex}`;
export const collectionTag = (hex: string): string => `c:${hex}`;
export const denomTag = (storedDenom: string): string => `r:${storedDenom}`;

/** One row of the tag table: the tag as docs/response-cache.md spells it, when a write names it, what reads it. */
export interface TagRow {
  /** the tag, as its constant or function writes it (`<…>` for the argument) */
  readonly tag: string;
  readonly namedWhen: string;
  readonly readBy: string;
}

/** A tag function's output for a placeholder argument (`h:<height>`): the table's tags come from the code. */
const shape = <T>(tag: (arg: T) => string, placeholder: string): string => tag(placeholder as T);

/** The tag table, in the docs' order and words (Markdown). */
const TAG_TABLE: readonly TagRow[] = [
  { tag: TIP, namedWhen: 'any write', readBy: '`/status`, `avg_blocktime`, every global list (blocks, txs, evm-txs, evm-internal-txs, with any filter)' },
  {
    tag: shape(heightTag, '<height>'),
    namedWhen: 'the block at that height is added',
    readBy: "`blocks/{h}`, `txs/by_height/{h}`, `evm-txs/by_height/{h}` (a future height's empty list too)",
  },
  {
    tag: shape(accountTag, '<account>'),
    namedWhen: 'a tx (cosmos or EVM) touching the account is added',
    readBy: '`txs/by_account`, `evm-txs/by_account` (every page, filter and `is_signer`)',
  },
  { tag: INTERNAL_TXS, namedWhen: 'EVM internal txs are added (they trail the blocks: `internal_tx_height`)', readBy: 'every `evm-internal-txs` answer' },
  { tag: ANY_TX, namedWhen: 'any cosmos tx is added', readBy: "an NFT token's txs (a Move token's fall back to its object account's)" },
  {
    tag: shape(ownerTag, '<account>'),
    namedWhen: 'an NFT the account owned before or owns after the write changes (mint, transfer, burn)',
    readBy: '`tokens/by_account`, `collections/by_account`',
  },
  {
    tag: shape(collectionTag, '<collection>'),
    namedWhen: 'the collection, one of its NFTs or one of its NFT ↔ tx links changes',
    readBy: "`collections/{addr}`, `tokens/by_collection`, `tokens/by_account?collection_addr=`, an NFT token's txs",
  },
  {
    tag: COLLECTIONS,
    namedWhen: 'any collection changes (its JSON carries `nft_count`)',
    readBy: '`collections`, `collections/by_name`, `collections/by_account`',
  },
  {
    tag: shape(denomTag, '<denom>'),
    namedWhen: 'a refresh moved holders of the stored denom (or the denom contracts were replaced)',
    readBy: '`richlist/{denom}`',
  },
];

/** TAG_TABLE as the Markdown table of docs/response-cache.md (header included). */
export function tagTableMarkdown(): string {
  return ['| tag | named when | answers that read it |', '|---|---|---|', ...TAG_TABLE.map((r) => `| \`${r.tag}\` | ${r.namedWhen} | ${r.readBy} |`)].join(
    '\n',
  );
}
