/**
 * Tag versions (docs/response-cache.md "ETags from versions"): for a change-record tag an answer
 * reads (src/snapshot/tags.ts), a value derived from the data of one state of the file that moves
 * whenever the data the tag covers moves — so that any process reading the file can tell with
 * one indexed lookup, having seen nothing before, whether an answer a client holds is still the
 * answer (the ETag is a hash of the versions: src/http/version-etag.ts).
 *
 * The rule every version obeys: **two states of the chain — of one file or of two replicas,
 * followed, pulled, imported, `import --base` — with the same version of tag T hold the same
 * data for T**, so an answer that reads only T (and the URL, the build, the wire format, the
 * lineage) is the same answer. Each is a function of the data alone, never of how the file was
 * written: equal on every replica of the same data.
 *
 * - `tip`: the /status text (height, internal tx height, rich-list height, the extensions): the
 *   global lists, /status and avg_blocktime are functions of the blocks up to the height (every
 *   write names it);
 * - `tx`: the number of cosmos txs (txs are only ever added);
 * - `itx`: the number of EVM internal txs (likewise);
 * - `h:<height>`: whether the block is present (a block, once present, never changes);
 * - `a:<account>`: the account's cosmos and EVM tx counts — an account's txs are only ever
 *   appended, so the count names the list — one lookup of the `accounts_by_addr` index.
 *
 * Each moves exactly when a write names its tag in a change record (src/snapshot/changes.ts),
 * so the response cache's key table, which those records keep valid, holds the same ETags a
 * fresh process derives (test/follow/live-cache.ts compares them).
 *
 * - `o:<account>`, `c:<collection>`, `cl`, `r:<denom>` (the NFT tags and the rich lists'): the
 *   digest of the rows their answers read, kept in the file by every writer (table tag_digests,
 *   schema v4: src/snapshot/tag-digests.ts) — their data moves in ways no count or height names
 *   (an NFT sent away moves its former owner's list; a refresh may move holders at the same
 *   rich-list height). `-`: the tag has no rows. None (the ETag of the answer's bytes, as before)
 *   on a file before schema 4 or for a tag over the digest's row cap.
 */
import type Database from 'better-sqlite3';
import { DIGESTS_SCHEMA_VERSION, EMPTY_DIGEST } from './tag-digests';

/** What a state's versions are derived from, besides its rows. */
export interface VersionMeta {
  height: number;
  countTxs: number;
  schemaVersion: number;
}

/** The versions of one state of a file, read in its read transaction. */
export interface TagVersions {
  /** the version of `tag` in this state; undefined: `tag` has none (its answers keep the ETag of their bytes) */
  of(tag: string): string | undefined;
}

/** Prepared on a served connection; `forState` per state (in its read transaction). */
export interface TagVersionReader {
  forState(meta: VersionMeta, evmInternalTxs: number, status: string): TagVersions;
}

/**
 * A TagVersionReader on `db` (its statement prepared once, read in the state's read transaction).
 * `evm`: the chain has EVM txs (their per-account counts are read too; elsewhere the table is empty
 * and its join would only cost a second B-tree descent per lookup).
 */
export function prepareTagVersions(db: Database.Database, evm: boolean): TagVersionReader {
  // rows as arrays, or the one value (no object built per lookup)
  const account = evm
    ? db
        .prepare(
          `SELECT a.tx_count, coalesce(e.tx_count, 0) FROM accounts a
      LEFT JOIN evm_account_counts e ON e.account_id = a.id WHERE a.addr = ?`,
        )
        .raw()
    : undefined;
  const cosmos = evm ? undefined : db.prepare('SELECT tx_count FROM accounts WHERE addr = ?').pluck();
  // prepared once the file has the table (a file before schema 4 gains it with its first write in place)
  let digestStmt: Database.Statement | undefined;
  const digestOf = (tag: string): string | undefined => {
    const row = (digestStmt as Database.Statement).get(tag) as [Buffer | null] | undefined;
    if (row === undefined) return EMPTY_DIGEST;
    return row[0] === null ? undefined : row[0].toString('base64url');
  };
  return {
    forState(meta, evmInternalTxs, status) {
      const txs = String(meta.countTxs);
      const itx = String(evmInternalTxs);
      if (digestStmt === undefined && meta.schemaVersion >= DIGESTS_SCHEMA_VERSION) {
        try {
          digestStmt = db.prepare('SELECT digest FROM tag_digests WHERE tag = ?').raw();
        } catch {
          digestStmt = undefined;
        }
      }
      const digests = meta.schemaVersion >= DIGESTS_SCHEMA_VERSION ? digestStmt : undefined;
      return {
        of(tag) {
          switch (tag.charCodeAt(0)) {
            case 97: {
              // a:<hex>
              if (tag.charCodeAt(1) !== 58) return undefined;
              const key = Buffer.from(tag.slice(2), 'hex');
              if (cosmos !== undefined) {
                const t = cosmos.get(key) as number | undefined;
                return t === undefined ? '0.0' : `${t}.0`;
              }
              const row = (account as NonNullable<typeof account>).get(key) as [number, number] | undefined;
              return row === undefined ? '0.0' : `${row[0]}.${row[1]}`;
            }
            case 104: // h:<height>
              return tag.charCodeAt(1) === 58 ? (Number(tag.slice(2)) <= meta.height ? '1' : '0') : undefined;
            case 111: // o:<hex>
            case 114: // r:<denom>
              return digests !== undefined && tag.charCodeAt(1) === 58 ? digestOf(tag) : undefined;
            case 99: // c:<hex>, cl
              return digests !== undefined && (tag.charCodeAt(1) === 58 || tag === 'cl') ? digestOf(tag) : undefined;
            default:
          }
          if (tag === 'tip') return status;
          if (tag === 'tx') return txs;
          if (tag === 'itx') return itx;
          return undefined;
        },
      };
    },
  };
}
