import type Database from 'better-sqlite3';
import { emptyPage, Page, PageRequest } from '../pagination';
import { ListDefinition, ListQuery, OrderColumn, Row } from '../list-query';
import { CollectionNames } from './collection-names';
import type { VmType } from '../../lib/vm';

/** What the NFT queries need of the snapshot's meta. */
interface NftMeta {
  countCollections: number;
  vmType: VmType;
}
import type { AccountRow } from './tx';

/**
 * NFT collections and tokens. Every order carries a unique tie-breaker (rollytics has none,
 * docs/api-contract.md#rollytics-quirks): collections (height, address); tokens (token_id, height, collection) or
 * (height, token_id, collection), matching rollytics' `token_id DIR, height DIR` order.
 */

export type TokenOrder = 'token_id' | 'height';

const collectionOrder = (height: string, addr: string): OrderColumn[] => [
  { sql: height, field: 'height', kind: 'int' },
  { sql: addr, field: 'object_addr', kind: 'hex' },
];

const col = {
  tokenId: { sql: 'n.token_id', field: 'token_id', kind: 'text' } as OrderColumn,
  height: { sql: 'n.height', field: 'height', kind: 'int' } as OrderColumn,
  collection: { sql: 'n.collection_addr', field: 'collection_addr', kind: 'hex' } as OrderColumn,
};

/** One list per combination of filters and order: each is served by its own index. */
function tokenList(db: Database.Database, scope: 'account' | 'collection', byCollection: boolean, byToken: boolean, order: TokenOrder): ListQuery {
  const where = [scope === 'account' ? 'n.owner_id = @owner_id' : 'n.collection_addr = @collection_addr'];
  if (scope === 'account' && byCollection) where.push('n.collection_addr = @collection_addr');
  if (byToken) where.push('n.token_id IN (@token_id, @token_id_decoded)');
  // Within one collection token_id is unique, so the collection column is not needed there.
  const fixedCollection = scope === 'collection' || byCollection;
  const orderCols =
    order === 'token_id'
      ? fixedCollection
        ? [col.tokenId]
        : [col.tokenId, col.height, col.collection]
      : fixedCollection
        ? [col.height, col.tokenId]
        : [col.height, col.tokenId, col.collection];
  const def: ListDefinition = {
    name: `selectTokensBy${scope}${byCollection ? 'Collection' : ''}${byToken ? 'Token' : ''}_${order}`,
    select: 'n.json AS json, n.token_id AS token_id, n.height AS height, n.collection_addr AS collection_addr',
    from: 'nfts n',
    where: where.join(' AND '),
    order: orderCols,
  };
  const list = new ListQuery(db, def);
  list.prepareAll();
  return list;
}

export interface TokenFilter {
  collectionAddr?: Buffer;
  /** candidates: the value as received and, if different, percent-decoded once more */
  tokenIds?: [string, string];
}

export function prepareNftQueries(db: Database.Database, meta: NftMeta) {
  const collections = new ListQuery(db, {
    name: 'selectCollections',
    select: 'json, height, addr AS object_addr',
    from: 'collections',
    where: '1',
    order: collectionOrder('height', 'addr'),
  });
  // by_name is matched in memory (collection-names.ts); this declaration only reads keys and renders pages
  const byName = new ListQuery(db, {
    name: 'selectCollectionsByName',
    select: 'json, height, addr AS object_addr',
    from: 'collections',
    where: '1',
    order: collectionOrder('height', 'addr'),
  });
  const byAccount = new ListQuery(db, {
    name: 'selectCollectionsByAccount',
    select: 'c.json AS json, ac.height AS height, ac.collection_addr AS object_addr',
    from: 'account_collections ac JOIN collections c ON c.addr = ac.collection_addr',
    where: 'ac.account_id = @account_id',
    order: collectionOrder('ac.height', 'ac.collection_addr'),
    skip: { from: 'account_collections ac', where: 'ac.account_id = @account_id' },
  });
  const nftTxs = new ListQuery(db, {
    name: 'selectNftTxs',
    select: 't.json AS json, x.sequence AS sequence',
    from: 'nft_txs x JOIN txs t ON t.sequence = x.sequence',
    where: 'x.collection_addr = @collection_addr AND x.token_id = @token_id',
    order: [{ sql: 'x.sequence', field: 'sequence', kind: 'int' }],
    skip: { from: 'nft_txs x', where: 'x.collection_addr = @collection_addr AND x.token_id = @token_id' },
  });
  for (const l of [collections, byAccount, nftTxs]) l.prepareAll();
  const tokenLists = new Map<string, ListQuery>();
  for (const scope of ['account', 'collection'] as const) {
    for (const byCollection of scope === 'account' ? [false, true] : [false]) {
      for (const byToken of [false, true]) {
        for (const order of ['token_id', 'height'] as const) {
          tokenLists.set(`${scope}/${byCollection}/${byToken}/${order}`, tokenList(db, scope, byCollection, byToken, order));
        }
      }
    }
  }
  const p = (sql: string): Database.Statement => db.prepare(sql);
  const s = {
    collection: p('SELECT json FROM collections WHERE addr = ?').pluck(),
    collectionNftCount: p('SELECT nft_count FROM collections WHERE addr = ?').pluck(),
    collectionRow: p('SELECT CAST(json AS BLOB) AS json, height, addr AS object_addr FROM collections WHERE addr = ?'),
    accountCollectionCount: p('SELECT nft_count FROM account_collections WHERE account_id = ? AND collection_addr = ?').pluck(),
    countTokens: p(`SELECT count(*) FROM nfts n WHERE (@owner_id IS NULL OR n.owner_id = @owner_id)
                    AND (@collection_addr IS NULL OR n.collection_addr = @collection_addr)
                    AND n.token_id IN (@token_id, @token_id_decoded)`).pluck(),
    nftTxCount: p('SELECT tx_count FROM nft_tx_counts WHERE collection_addr = ? AND token_id = ?').pluck(),
    nftObjectAccount: p(`SELECT a.id, a.tx_count, a.signer_tx_count, a.nft_count, a.collection_count
                         FROM nfts n JOIN accounts a ON a.id = n.object_account_id WHERE n.collection_addr = ? AND n.token_id = ?`),
  };

  /** collections/by_name's index of the state on this connection, built at its first use (or carried, see renew) */
  let names: CollectionNames | undefined;

  function tokens(
    scope: 'account' | 'collection',
    base: Record<string, unknown>,
    filter: TokenFilter,
    order: TokenOrder,
    page: PageRequest,
    unfilteredTotal: () => number,
  ): Page {
    const byCollection = scope === 'account' && filter.collectionAddr !== undefined;
    const list = tokenLists.get(`${scope}/${byCollection}/${filter.tokenIds !== undefined}/${order}`) as ListQuery;
    const params: Record<string, unknown> = { ...base };
    if (byCollection) params.collection_addr = filter.collectionAddr;
    if (filter.tokenIds) [params.token_id, params.token_id_decoded] = filter.tokenIds;
    const total = filter.tokenIds ? (): number => s.countTokens.get({ owner_id: null, collection_addr: null, ...params }) as number : unfilteredTotal;
    return list.page(params, page, total);
  }

  return {
    /**
     * A new state of the file on this connection (src/snapshot/open.ts renewSnapshot): the lists
     * read again; the by_name index is `carried` (the previous state's, when no change record
     * since names a collection change) or built again at its next use.
     */
    renew(carried: CollectionNames | undefined): void {
      for (const l of [collections, byName, byAccount, nftTxs, ...tokenLists.values()]) l.newState();
      names = carried;
    },
    /** the by_name index, if this state built (or carried) it */
    namesIndex: (): CollectionNames | undefined => names,
    collections: (page: PageRequest): Page => collections.page({}, page, () => meta.countCollections),
    collectionsByName: (q: string, page: PageRequest): Page => {
      names ??= CollectionNames.load(db);
      const matches = names.matches(q);
      const rows = [...namePage(names, matches, byName.cursorValues(page), page)].map((i) => s.collectionRow.get(names!.addrs[i]) as Row);
      return byName.toPage(rows, page, () => matches.length);
    },
    collectionsByAccount: (account: AccountRow, page: PageRequest): Page => byAccount.page({ account_id: account.id }, page, () => account.collection_count),
    /** the stored row: packed (wire format 2) or the JSON text (1) */
    collection: (addr: Buffer): Buffer | string | undefined => s.collection.get(addr) as Buffer | string | undefined,

    tokensByAccount(account: AccountRow, filter: TokenFilter, order: TokenOrder, page: PageRequest): Page {
      return tokens('account', { owner_id: account.id }, filter, order, page, () =>
        filter.collectionAddr ? ((s.accountCollectionCount.get(account.id, filter.collectionAddr) as number | undefined) ?? 0) : account.nft_count,
      );
    },

    tokensByCollection(collectionAddr: Buffer, filter: TokenFilter, order: TokenOrder, page: PageRequest): Page {
      return tokens(
        'collection',
        { collection_addr: collectionAddr },
        filter,
        order,
        page,
        () => (s.collectionNftCount.get(collectionAddr) as number | undefined) ?? 0,
      );
    },

    /**
     * NFT tx history. Move: every tx touching the NFT object's account (rollytics does the same
     * through tx_accounts); Wasm / EVM: the NFT's tx links, which outlive a burn.
     */
    nftTxs(collectionAddr: Buffer, tokenId: string, page: PageRequest, byAccount: (account: AccountRow, page: PageRequest) => Page): Page {
      if (meta.vmType === 'move') {
        const account = s.nftObjectAccount.get(collectionAddr, tokenId) as AccountRow | undefined;
        return account ? byAccount(account, page) : emptyPage(page);
      }
      const count = s.nftTxCount.get(collectionAddr, tokenId) as number | undefined;
      if (!count) return emptyPage(page);
      return nftTxs.page({ collection_addr: collectionAddr, token_id: tokenId }, page, () => count);
    },
  };
}

/**
 * The entries of one by_name page (limit + 1 of them) among `matches` (ascending): after the
 * cursor's key when there is one, else from the offset — any offset, it is an index into the
 * matches (docs/api-contract.md#deep-offsets). Descending unless `page.reverse` is false.
 */
function* namePage(names: CollectionNames, matches: Int32Array, cursor: unknown[], page: PageRequest): Generator<number> {
  const n = matches.length;
  // first position whose entry is past the key (ascending: > key; descending: the last one < key)
  let lo = 0;
  let hi = n;
  const pastKey = (pos: number): boolean => (page.reverse ? names.compare(matches[pos], cursor) >= 0 : names.compare(matches[pos], cursor) > 0);
  if (cursor.length > 0) {
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (pastKey(mid)) hi = mid;
      else lo = mid + 1;
    }
  }
  let count = 0;
  if (page.reverse) {
    // descending: from the last match (or the last one before the key) down
    let pos = (cursor.length > 0 ? lo : n) - 1 - (cursor.length > 0 ? 0 : Math.min(page.offset, n));
    for (; pos >= 0 && count <= page.limit; pos--, count++) yield matches[pos];
  } else {
    let pos = cursor.length > 0 ? lo : Math.min(page.offset, n);
    for (; pos < n && count <= page.limit; pos++, count++) yield matches[pos];
  }
}
