import type Database from 'better-sqlite3';
import { Page, PageRequest } from '../pagination';
import { ListQuery, MAX_OFFSET, Row } from '../list-query';
import type { VmType } from '../../lib/vm';
import { toBech32, toHex0x } from '../../lib/address';
import { amountFromKey } from '../../lib/amount';
import { invalidValue } from '../../lib/api-errors';
import { holderJson } from '../../wire/richlist';
import { RANK_STEP } from '../richlist-ranks';
import { RANKS_SCHEMA_VERSION } from '../schema';

/** What the rich-list queries need of the snapshot's meta (read per state: a follow batch may bring the marks). */
interface RichListMeta {
  vmType: VmType;
  prefix: string;
  schemaVersion: number;
}

/** The rich list's columns, `json` read as a BLOB (src/snapshot/list-query.ts). */
const COLUMNS = 'CAST(json AS BLOB) AS json, amount_key AS amount, account';

/**
 * Rich list in (amount, account) order; the account is the tie-breaker rollytics lacks
 * (docs/api-contract.md#rollytics-quirks). Keys page it as every list; an offset, at any depth,
 * is a seek to a rank mark and fewer than RANK_STEP entries skipped (src/snapshot/richlist-ranks.ts)
 * — on a version-2 file, which has no marks, up to MAX_OFFSET only.
 */
export function prepareRichListQueries(db: Database.Database, meta: RichListMeta) {
  const holders = new ListQuery(db, {
    name: 'selectRichList',
    select: 'json, amount_key AS amount, account',
    from: 'richlist',
    where: 'denom = @denom',
    order: [
      { sql: 'amount_key', field: 'amount', kind: 'amount' },
      { sql: 'account', field: 'account', kind: 'hex' },
    ],
  });
  holders.prepareAll();
  const holderCount = db.prepare('SELECT holder_count FROM richlist_denoms WHERE denom = ?').pluck();
  const contract = db.prepare('SELECT contract FROM denom_contracts WHERE denom = ?').pluck();
  const ranked = rankedOffsets(db);
  const count = (denom: string): number => (holderCount.get(denom) as number | undefined) ?? 0;
  return {
    /**
     * The stored denom for a request denom. EVM stores rich lists per ERC-20 contract: `0x…`
     * passes through, `evm/<40 hex>` is that contract, anything else is looked up in the
     * snapshot's denom → contract map (rollytics asks a live node, docs/api-contract.md#live-node-calls).
     */
    storedDenom(denom: string): string | undefined {
      const d = denom.toLowerCase();
      if (meta.vmType !== 'evm' || d.startsWith('0x')) return d;
      const evm = /^evm\/([0-9a-f]{40})$/.exec(d);
      if (evm) return `0x${evm[1]}`;
      return contract.get(d) as string | undefined;
    },
    /**
     * Wire format 2 stores no holder JSON (an empty `json`): the holder is two columns, rendered
     * here (docs/api-contract.md#stored-wire-format); a wire-format-1 file's stored text is used as is.
     */
    holders: (denom: string, page: PageRequest): Page => {
      let rows: Row[];
      if (page.offset > 0 && holders.cursorValues(page).length === 0) {
        if (meta.schemaVersion >= RANKS_SCHEMA_VERSION) rows = ranked(denom, page, count(denom));
        else {
          if (page.offset > MAX_OFFSET) throw unranked(page);
          rows = holders.rows({ denom }, page);
        }
      } else rows = holders.rows({ denom }, page);
      let rendered = false;
      for (const r of rows) {
        if (r.json.length > 0) continue;
        const account = r.account as Buffer;
        r.json = Buffer.from(holderJson(meta.vmType === 'evm' ? toHex0x(account) : toBech32(account, meta.prefix), amountFromKey(r.amount as string)), 'utf8');
        rendered = true;
      }
      const p = holders.toPage(rows, page, () => count(denom));
      if (rendered) p.rendered = true;
      return p;
    },
  };
}

/**
 * The rows of a page at an offset, through the rank marks: `limit + 1` rows (ListQuery.toPage's
 * "is there more") from the offset-th holder on. The marks are read by rank from the top
 * (largest first): largest-first pages seek the mark at or above their first row and skip down
 * to it; smallest-first pages seek the mark at or below theirs and skip up. Statements are
 * prepared at first use: a version-2 file has no marks table until `follow` adds it.
 */
function rankedOffsets(db: Database.Database): (denom: string, page: PageRequest, total: number) => Row[] {
  let st: { mark: Database.Statement; desc: Database.Statement; asc: Database.Statement; bottom: Database.Statement } | undefined;
  return (denom, page, total) => {
    st ??= {
      mark: db.prepare('SELECT amount_key, account FROM richlist_ranks WHERE denom = ? AND rank = ?').raw(),
      desc: db.prepare(`SELECT ${COLUMNS} FROM richlist WHERE denom = @denom AND (amount_key, account) <= (@amount, @account)
        ORDER BY amount_key DESC, account DESC LIMIT @limit OFFSET @skip`),
      asc: db.prepare(`SELECT ${COLUMNS} FROM richlist WHERE denom = @denom AND (amount_key, account) >= (@amount, @account)
        ORDER BY amount_key ASC, account ASC LIMIT @limit OFFSET @skip`),
      bottom: db.prepare(`SELECT ${COLUMNS} FROM richlist WHERE denom = @denom ORDER BY amount_key ASC, account ASC LIMIT @limit OFFSET @skip`),
    };
    const n = page.offset;
    if (n >= total) return [];
    const limit = page.limit + 1;
    // rank from the top of the page's first row
    const first = page.reverse ? n : total - 1 - n;
    if (page.reverse) {
      const at = first - (first % RANK_STEP);
      const m = st.mark.get(denom, at) as [string, Buffer] | undefined;
      if (m === undefined) throw marksMissing(denom, at);
      return st.desc.all({ denom, amount: m[0], account: m[1], limit, skip: first - at }) as Row[];
    }
    const at = first + ((RANK_STEP - (first % RANK_STEP)) % RANK_STEP);
    // below the lowest mark: fewer than RANK_STEP holders from the bottom
    if (at > total - 1) return st.bottom.all({ denom, limit, skip: n }) as Row[];
    const m = st.mark.get(denom, at) as [string, Buffer] | undefined;
    if (m === undefined) throw marksMissing(denom, at);
    return st.asc.all({ denom, amount: m[0], account: m[1], limit, skip: at - first }) as Row[];
  };
}

/** Marks and counts are written in one transaction: a missing mark is a damaged file. */
function marksMissing(denom: string, rank: number): Error {
  return Object.assign(new Error(`rich list of ${denom}: no rank mark ${rank} (richlist_ranks does not match richlist_denoms)`), {
    code: 'SQLITE_CORRUPT_RANKS',
  });
}

/** A deep offset on a version-2 file, which has no rank marks: the 400 says what serves it. */
function unranked(page: PageRequest): Error {
  const viaKey = page.key?.kind === 'offset';
  return invalidValue(
    viaKey ? 'pagination.key' : 'pagination.offset',
    viaKey ? `offset ${page.offset}` : String(page.offset),
    `offsets above ${MAX_OFFSET} are not served on this rich list: its snapshot predates rank marks (schema version 2; ` +
      "`follow` or `import --base` brings it to the current version); page with pagination.key, sending back each page's next_key",
  );
}

/** The denoms the snapshot has rich lists of, sorted (the fixture cut crawls the same). */
export function richListDenoms(db: Database.Database): string[] {
  return db.prepare('SELECT denom FROM richlist_denoms ORDER BY denom').pluck().all() as string[];
}
