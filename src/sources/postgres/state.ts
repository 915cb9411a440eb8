/**
 * The current state follow reads whole apart from its batches: the rich list (its refresh) and
 * the NFT collections' counts and names (its collections audit).
 */
import type { NdjsonLine } from '../../records/ndjson';
import type { CollectionState } from '../../snapshot/queries/nft-state';
import { redactDsn } from './dsn';
import { richListRows } from './records';
import { presentTables } from './tables';
import { beginReadTransaction, ReadTransaction } from './transaction';

/**
 * follow's rich-list refresh (src/follow/richlist-refresh.ts): the whole rich_list, streamed to
 * `put`, and the height rich_list_status gives it — both in one REPEATABLE READ snapshot, so they
 * belong together (the rows carry no height: no "changed since" read is possible).
 */
export async function readPostgresRichList(dsn: string, put: (r: NdjsonLine) => void, batchRows = 1000): Promise<{ height: number }> {
  const where = redactDsn(dsn);
  const db = new ReadTransaction(await beginReadTransaction(dsn, where), where, batchRows);
  try {
    await presentTables(db);
    const h = (await db.q<{ h: string | null }>('SELECT max(height)::text AS h FROM rich_list_status'))[0]?.h;
    for await (const r of richListRows(db)) put(r);
    return { height: h == null ? 0 : Number(h) };
  } finally {
    await db.close();
  }
}

/**
 * follow's collections audit (src/follow/collections-audit.ts): every nft_collection row's NFT
 * count and names, keyed by lower-case hex.
 */
export async function readPostgresCollections(dsn: string, batchRows = 1000): Promise<Map<string, CollectionState>> {
  const where = redactDsn(dsn);
  const db = new ReadTransaction(await beginReadTransaction(dsn, where), where, batchRows);
  try {
    await presentTables(db);
    const out = new Map<string, CollectionState>();
    for await (const r of db.rows('table nft_collection', `SELECT encode(addr, 'hex') AS addr, nft_count::text AS n, name, origin_name FROM nft_collection`)) {
      out.set(r.addr as string, { count: Number(r.n ?? 0), name: (r.name as string | null) ?? '', originName: (r.origin_name as string | null) ?? '' });
    }
    return out;
  } finally {
    await db.close();
  }
}
