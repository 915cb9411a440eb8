/**
 * Digests of the NFT and rich-list tags (table tag_digests, schema v4; docs/response-cache.md
 * "ETags from versions"): for an owner (`o:<account>`), a collection (`c:<collection>`), the list of
 * collections (`cl`) and a stored rich list (`r:<denom>`), a SHA-256 of every row its answers read,
 * in the rows' key order — so that a fresh process can decide a conditional GET of those answers
 * from one indexed lookup (src/snapshot/tag-versions.ts), as it does for an account's txs.
 *
 * **A function of the rows alone.** The digest of a tag is computed by this one function from the
 * tag's rows as they are after a write — by an import (every tag, at its end), by `import --base`
 * and `follow` (the tags their batch names in its change record, in the batch's transaction) and
 * by a rich-list refresh (the denoms it moved). Internal ids (owner, creator, object account) are
 * hashed as the account's address, never as the id a file gave it. So two files holding the same
 * rows for a tag — one followed, one imported, one pulled, another replica — hold the same digest
 * (ETags stay equal across replicas), and two files with the same digest hold the same rows (a
 * SHA-256 of an unambiguous encoding: a changed answer never keeps its ETag).
 *
 * **Bounded.** An NFT tag (owner, collection, the list) with more than DIGEST_ROW_CAP rows keeps a
 * NULL digest: no version, its answers keep the ETag of their bytes (computed once after a
 * restart, then the key table), as every NFT answer did before. That bounds what a follow batch
 * pays per tag it names (a mint into a collection of millions of NFTs does not rehash it every
 * block) — measured in bench/README.md. A rich list has no cap: it is written whole or by a
 * refresh that reads the whole list from its source, which costs more per holder than hashing it.
 * A tag without rows has no row here (its version is the empty one, `-`).
 */
import { createHash, type Hash } from 'node:crypto';
import type Database from 'better-sqlite3';
import { schemaSql, TABLES_SQL } from './schema';

/** The first schema version with tag digests. */
export const DIGESTS_SCHEMA_VERSION = 4;

/** Rows an NFT tag may cover and still have a digest (≈ 3–7 µs a row to hash on this machine). */
export const DIGEST_ROW_CAP = 20_000;

/** The version of a tag without rows (no row in tag_digests). */
export const EMPTY_DIGEST = '-';

/** Whether the file has the digests table (schema v4), on `db`'s connection. */
export function hasDigests(db: Database.Database, schemaName = 'main'): boolean {
  return db.prepare(`SELECT 1 FROM ${schemaName}.sqlite_schema WHERE type = 'table' AND name = 'tag_digests'`).get() !== undefined;
}

function digestsTableSql(): string {
  const sql = /^CREATE TABLE tag_digests \([^;]*\) WITHOUT ROWID/m.exec(schemaSql(TABLES_SQL))?.[0];
  if (sql === undefined) throw new Error(`internal: table tag_digests is not in ${TABLES_SQL}`);
  return sql;
}

/** One value, unambiguously: its kind, its length, its bytes. */
function feed(h: Hash, v: unknown): void {
  if (v === null || v === undefined) h.update('z');
  else if (Buffer.isBuffer(v)) {
    h.update(`b${v.length}:`);
    h.update(v);
  } else if (typeof v === 'string') {
    h.update(`s${Buffer.byteLength(v)}:`);
    h.update(v);
  } else h.update(`n${String(v)};`);
}

/** Rows hashed into `h` (each prefixed by `section`); false once more than `budget.left` rows came. */
function hashRows(h: Hash, section: string, rows: IterableIterator<unknown[]>, budget: { left: number }): boolean {
  for (const row of rows) {
    if (--budget.left < 0) return false;
    h.update(section);
    for (const v of row) feed(h, v);
  }
  return true;
}

type Stmt = Database.Statement;

/** The statements of one writer's connection (main schema). */
class Digester {
  private readonly s: Record<string, Stmt>;

  constructor(
    private readonly db: Database.Database,
    private readonly cap: number,
  ) {
    const p = (sql: string): Stmt => db.prepare(sql);
    this.s = {
      account: p('SELECT id, nft_count, collection_count FROM main.accounts WHERE addr = ?').raw(),
      ownerNfts: p(`SELECT n.collection_addr, n.token_id, n.height, x.addr, n.json FROM main.nfts n
        LEFT JOIN main.accounts x ON x.id = n.object_account_id WHERE n.owner_id = ? ORDER BY n.collection_addr, n.token_id`).raw(),
      ownerCollections: p(
        'SELECT height, collection_addr, nft_count FROM main.account_collections WHERE account_id = ? ORDER BY height, collection_addr',
      ).raw(),
      collection: p(`SELECT c.addr, c.height, c.name, c.origin_name, c.norm_name, c.norm_origin_name, a.addr, c.nft_count, c.timestamp, c.json
        FROM main.collections c LEFT JOIN main.accounts a ON a.id = c.creator_id WHERE c.addr = ?`).raw(),
      collectionNfts: p(`SELECT n.token_id, n.height, o.addr, x.addr, n.json FROM main.nfts n
        LEFT JOIN main.accounts o ON o.id = n.owner_id LEFT JOIN main.accounts x ON x.id = n.object_account_id
        WHERE n.collection_addr = ? ORDER BY n.token_id`).raw(),
      // the links themselves (burned NFTs' too): their counts follow from them
      collectionLinks: p('SELECT token_id, sequence FROM main.nft_txs WHERE collection_addr = ? ORDER BY token_id, sequence').raw(),
      collections: p(`SELECT c.addr, c.height, c.name, c.origin_name, c.norm_name, c.norm_origin_name, a.addr, c.nft_count, c.timestamp, c.json
        FROM main.collections c LEFT JOIN main.accounts a ON a.id = c.creator_id ORDER BY c.addr`).raw(),
      holders: p('SELECT amount_key, account, json FROM main.richlist WHERE denom = ? ORDER BY amount_key, account').raw(),
      holderCount: p('SELECT holder_count FROM main.richlist_denoms WHERE denom = ?').raw(),
      put: p('INSERT OR REPLACE INTO main.tag_digests (tag, digest) VALUES (?, ?)'),
      drop: p('DELETE FROM main.tag_digests WHERE tag = ?'),
    };
  }

  /** The digest of `tag` as its rows are now: a Buffer, null (over the cap), undefined (no rows); or 'other' for a tag without one. */
  digest(tag: string): Buffer | null | undefined | 'other' {
    const h = createHash('sha256');
    // a rich list is read whole by every write that changes it: no cap (see Bounded above)
    const budget = { left: tag.charCodeAt(0) === 114 ? Number.POSITIVE_INFINITY : this.cap };
    let rows = 0;
    const part = (section: string, it: IterableIterator<unknown[]>): boolean => {
      const before = budget.left;
      const ok = hashRows(h, section, it, budget);
      rows += before - Math.max(budget.left, 0);
      return ok;
    };
    const one = (section: string, row: unknown[] | undefined): void => {
      if (row === undefined) return;
      rows++;
      h.update(section);
      for (const v of row) feed(h, v);
    };
    const colon = tag.indexOf(':');
    const kind = colon < 0 ? tag : tag.slice(0, colon);
    const arg = colon < 0 ? '' : tag.slice(colon + 1);
    const s = this.s;
    switch (kind) {
      case 'o': {
        const a = s.account.get(Buffer.from(arg, 'hex')) as [number, number, number] | undefined;
        if (a === undefined) return undefined;
        // the counts only when nonzero: an account that never owned an NFT has no rows at all
        if (a[1] !== 0 || a[2] !== 0) one('A', [a[1], a[2]]);
        if (!part('N', s.ownerNfts.iterate(a[0]) as IterableIterator<unknown[]>)) return null;
        if (!part('C', s.ownerCollections.iterate(a[0]) as IterableIterator<unknown[]>)) return null;
        break;
      }
      case 'c': {
        const addr = Buffer.from(arg, 'hex');
        one('L', s.collection.get(addr) as unknown[] | undefined);
        if (!part('N', s.collectionNfts.iterate(addr) as IterableIterator<unknown[]>)) return null;
        if (!part('T', s.collectionLinks.iterate(addr) as IterableIterator<unknown[]>)) return null;
        break;
      }
      case 'cl':
        if (colon >= 0) return 'other';
        if (!part('L', s.collections.iterate() as IterableIterator<unknown[]>)) return null;
        break;
      case 'r': {
        one('D', s.holderCount.get(arg) as unknown[] | undefined);
        if (!part('H', s.holders.iterate(arg) as IterableIterator<unknown[]>)) return null;
        break;
      }
      default:
        return 'other';
    }
    return rows === 0 ? undefined : h.digest().subarray(0, 16);
  }

  /** Writes the digest of each of `tags` that has one (others ignored); returns how many. */
  write(tags: Iterable<string>): number {
    let n = 0;
    for (const tag of tags) {
      const d = this.digest(tag);
      if (d === 'other') continue;
      if (d === undefined) this.s.drop.run(tag);
      else this.s.put.run(tag, d);
      n++;
    }
    return n;
  }

  /** Every tag of the file, from scratch (the table emptied first). */
  all(): number {
    const db = this.db;
    db.exec('DELETE FROM main.tag_digests');
    const hex = (rows: unknown[]): string[] => (rows as Buffer[]).map((b) => b.toString('hex'));
    const owners = hex(
      db
        .prepare(
          `SELECT a.addr FROM main.accounts a WHERE a.nft_count <> 0 OR a.collection_count <> 0
             OR EXISTS (SELECT 1 FROM main.nfts n WHERE n.owner_id = a.id)`,
        )
        .pluck()
        .all(),
    );
    const collections = hex(
      db.prepare('SELECT addr FROM main.collections UNION SELECT collection_addr FROM main.nft_txs UNION SELECT collection_addr FROM main.nfts').pluck().all(),
    );
    const denoms = db.prepare('SELECT denom FROM main.richlist_denoms UNION SELECT denom FROM main.richlist').pluck().all() as string[];
    return this.write([...owners.map((o) => `o:${o}`), ...collections.map((c) => `c:${c}`), 'cl', ...denoms.map((d) => `r:${d}`)]);
  }
}

/**
 * The digests of `tags` written again from the rows as they are now (tags of other kinds are
 * ignored), inside the caller's write transaction; on a file without the table (schema < 4),
 * nothing. 'all': every tag of the file, from scratch. `cap`: the NFT tags' row cap (DIGEST_ROW_CAP;
 * another only in tests). Returns the tags written.
 */
export function writeDigests(db: Database.Database, tags: Iterable<string> | 'all', cap = DIGEST_ROW_CAP): number {
  if (!hasDigests(db)) return 0;
  const d = new Digester(db, cap);
  return tags === 'all' ? d.all() : d.write(tags);
}

/**
 * Brings a file of schema < 4 written in place (follow, a rich-list refresh, `import --base`'s
 * copy) to version 4 inside the caller's write transaction: the table, the digest of every tag,
 * user_version and meta schema_version — all or nothing. Returns true when it did (every digest is
 * then current), false when the file had them already. Call after the write's rows are in.
 */
export function ensureDigests(db: Database.Database): boolean {
  const version = db.pragma('main.user_version', { simple: true }) as number;
  if (version >= DIGESTS_SCHEMA_VERSION && hasDigests(db)) return false;
  if (!db.inTransaction) throw new Error('internal: the tag digests of a version-3 file are added inside a write transaction');
  // a table in a file that says it is older was not kept by a writer of this version: never trusted
  db.exec('DROP TABLE IF EXISTS main.tag_digests');
  db.exec(digestsTableSql().replace(/^CREATE TABLE tag_digests/, 'CREATE TABLE main.tag_digests'));
  new Digester(db, DIGEST_ROW_CAP).all();
  db.pragma(`main.user_version = ${DIGESTS_SCHEMA_VERSION}`);
  db.prepare("INSERT OR REPLACE INTO main.meta (key, value) VALUES ('schema_version', ?)").run(String(DIGESTS_SCHEMA_VERSION));
  return true;
}
