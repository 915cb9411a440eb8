import type Database from 'better-sqlite3';
import { emptyPage, Page, PageRequest } from '../pagination';
import { checkOffset, ListQuery, Row, sequenceOrder } from '../list-query';

/** What the tx queries need of the snapshot's meta. */
interface TxMeta {
  countTxs: number;
}

/**
 * Cosmos tx lists, all in sequence order (rollytics' default `sequence` cursor). Totals are the
 * precomputed counts of the import: a msgs filter's total is a sum over the msg-type sets
 * (distinct combinations of a tx's types, sql/001-tables.sql) holding any requested type, per
 * account for by_account. Only by_height + msgs counts rows, those of one block.
 */

/** The msg-type sets holding any of the types in the JSON array @msg_type_ids. */
const SETS_WITH_ANY = 'SELECT set_id FROM msg_type_set_members WHERE msg_type_id IN (SELECT value FROM json_each(@msg_type_ids))';
/**
 * Membership tests are scalar subqueries, not EXISTS: SQLite 3.5x may turn a correlated EXISTS
 * into a join through an automatic index built over every candidate row on each request (0.4 s
 * on a 200k-tx account, bench/README.md "worst requests"); the scalar form is one key probe per row.
 */
const HAS_MSG_TYPE =
  '(SELECT 1 FROM tx_msg_types m WHERE m.sequence = t.sequence AND m.msg_type_id IN (SELECT value FROM json_each(@msg_type_ids)) LIMIT 1) IS NOT NULL';

export interface AccountRow {
  id: number;
  tx_count: number;
  signer_tx_count: number;
  nft_count: number;
  collection_count: number;
}

export interface MsgType {
  id: number;
  tx_count: number;
}

export interface TxFilter {
  /** resolved msg types; undefined = no msgs filter; [] = only unknown types (empty result) */
  msgTypes?: MsgType[];
}

export function prepareTxQueries(db: Database.Database, meta: TxMeta) {
  const lists = {
    all: new ListQuery(db, {
      name: 'selectTxs',
      select: 'json, sequence',
      from: 'txs t',
      where: '1',
      order: sequenceOrder('t.sequence'),
      dense: { bounds: 'SELECT min(sequence) AS min, max(sequence) AS max FROM txs', count: () => meta.countTxs },
    }),
    byMsgType: new ListQuery(db, {
      name: 'selectTxsByMsgType',
      select: 't.json AS json, m.sequence AS sequence',
      from: 'tx_msg_types m JOIN txs t ON t.sequence = m.sequence',
      where: 'm.msg_type_id = @msg_type_id',
      order: sequenceOrder('m.sequence'),
      skip: { from: 'tx_msg_types m', where: 'm.msg_type_id = @msg_type_id' },
    }),
    byAccount: new ListQuery(db, {
      name: 'selectTxsByAccount',
      select: 't.json AS json, a.sequence AS sequence',
      from: 'tx_accounts a JOIN txs t ON t.sequence = a.sequence',
      where: 'a.account_id = @account_id',
      order: sequenceOrder('a.sequence'),
      skip: { from: 'tx_accounts a', where: 'a.account_id = @account_id' },
    }),
    // The partial index holds only signer rows, so a page never walks past the account's other txs.
    byAccountSigner: new ListQuery(db, {
      name: 'selectTxsByAccountSigner',
      select: 't.json AS json, a.sequence AS sequence',
      from: 'tx_accounts a INDEXED BY tx_accounts_signer JOIN txs t ON t.sequence = a.sequence',
      where: 'a.account_id = @account_id AND a.signer = 1',
      order: sequenceOrder('a.sequence'),
      skip: { from: 'tx_accounts a INDEXED BY tx_accounts_signer', where: 'a.account_id = @account_id AND a.signer = 1' },
    }),
    byAccountMsgs: new ListQuery(db, {
      name: 'selectTxsByAccountMsgs',
      select: 't.json AS json, a.sequence AS sequence',
      from: 'tx_accounts a JOIN txs t ON t.sequence = a.sequence',
      where: `a.account_id = @account_id AND ${HAS_MSG_TYPE}`,
      order: sequenceOrder('a.sequence'),
      skip: { from: 'tx_accounts a', where: `a.account_id = @account_id AND ${HAS_MSG_TYPE.replace('t.sequence', 'a.sequence')}` },
    }),
    byAccountSignerMsgs: new ListQuery(db, {
      name: 'selectTxsByAccountSignerMsgs',
      select: 't.json AS json, a.sequence AS sequence',
      from: 'tx_accounts a JOIN txs t ON t.sequence = a.sequence',
      where: `a.account_id = @account_id AND a.signer = 1 AND ${HAS_MSG_TYPE}`,
      order: sequenceOrder('a.sequence'),
      skip: { from: 'tx_accounts a', where: `a.account_id = @account_id AND a.signer = 1 AND ${HAS_MSG_TYPE.replace('t.sequence', 'a.sequence')}` },
    }),
    byHeight: new ListQuery(db, {
      name: 'selectTxsByHeight',
      select: 'json, sequence',
      from: 'txs t',
      where: 't.height = @height',
      order: sequenceOrder('t.sequence'),
    }),
    byHeightMsgs: new ListQuery(db, {
      name: 'selectTxsByHeightMsgs',
      select: 'json, sequence',
      from: 'txs t',
      where: `t.height = @height AND ${HAS_MSG_TYPE}`,
      order: sequenceOrder('t.sequence'),
    }),
  };
  for (const l of Object.values(lists)) l.prepareAll();
  const p = (sql: string): Database.Statement => db.prepare(sql);
  const s = {
    byHash: p('SELECT json FROM txs WHERE hash = ? ORDER BY sequence LIMIT 1').pluck(),
    account: p('SELECT id, tx_count, signer_tx_count, nft_count, collection_count FROM accounts WHERE addr = ?'),
    msgType: p('SELECT id, tx_count FROM msg_types WHERE name = ?'),
    blockTxCount: p('SELECT tx_count FROM blocks WHERE height = ?').pluck(),
    // Each tx has exactly one set, so summing over the distinct matching sets counts it once.
    countMsgTypes: p(`SELECT coalesce(sum(tx_count), 0) FROM msg_type_sets WHERE id IN (${SETS_WITH_ANY})`).pluck(),
    countAccountMsgs: p(`SELECT coalesce(sum(CASE WHEN @signer = 1 THEN signer_tx_count ELSE tx_count END), 0)
                         FROM account_msg_type_sets WHERE account_id = @account_id AND set_id IN (${SETS_WITH_ANY})`).pluck(),
    countHeightMsgs: p(`SELECT count(*) FROM txs t WHERE t.height = @height AND ${HAS_MSG_TYPE}`).pluck(),
  };
  /** msgs values → types; unknown ones drop out (docs/api-contract.md#differences-from-rollytics: unknown msgs → empty list). */
  function resolveMsgTypes(names: string[]): MsgType[] {
    const found: MsgType[] = [];
    for (const name of names) {
      const row = s.msgType.get(name) as MsgType | undefined;
      if (row && !found.some((f) => f.id === row.id)) found.push(row);
    }
    return found;
  }

  const rowBySequence = p('SELECT CAST(json AS BLOB) AS json, sequence FROM txs WHERE sequence = ?');
  const merges = new Map<string, Database.Statement>();

  /**
   * The sequences of one page of the txs having any of several msg types: one index range of
   * tx_msg_types per type, merged in sequence order by SQLite (a compound SELECT with ORDER BY
   * runs as a merge of its arms, each read in index order), deduplicated by UNION. Only
   * sequences are read, so skipping an offset reads index entries, never rows. `within`: the
   * page must also be one of an account's txs (EXISTS on the tx_accounts key).
   */
  function mergedSequences(ids: number[], within: 'all' | 'account' | 'signer', args: Record<string, unknown>, page: PageRequest): number[] {
    const cursor = lists.byMsgType.cursorValues(page)[0] as number | undefined;
    if (cursor === undefined) checkOffset(page);
    const id = `${ids.length}/${within}/${page.reverse ? 'd' : 'a'}/${cursor === undefined ? 'o' : 'k'}`;
    let st = merges.get(id);
    if (!st) {
      const past = cursor === undefined ? '' : ` AND m.sequence ${page.reverse ? '<' : '>'} @k0`;
      const member =
        within === 'all'
          ? ''
          : ` AND (SELECT 1 FROM tx_accounts a WHERE a.account_id = @account_id` +
            ` AND a.sequence = m.sequence${within === 'signer' ? ' AND a.signer = 1' : ''}) IS NOT NULL`;
      const arms = ids.map((_, i) => `SELECT m.sequence AS sequence FROM tx_msg_types m WHERE m.msg_type_id = @t${i}${past}${member}`);
      st = db.prepare(`${arms.join(' UNION ')} ORDER BY 1 ${page.reverse ? 'DESC' : 'ASC'} LIMIT @limit OFFSET @offset`).pluck();
      merges.set(id, st);
    }
    const all: Record<string, unknown> = { ...args, limit: page.limit + 1, offset: cursor === undefined ? page.offset : 0 };
    ids.forEach((t, i) => {
      all[`t${i}`] = t;
    });
    if (cursor !== undefined) all.k0 = cursor;
    return st.all(all) as number[];
  }

  /** One page of the txs having any of `ids`, optionally of one account: the merged sequences, then their rows. */
  function mergeMsgTypes(ids: number[], within: 'all' | 'account' | 'signer', args: Record<string, unknown>, page: PageRequest, total: () => number): Page {
    const rows = mergedSequences(ids, within, args, page).map((n) => rowBySequence.get(n) as Row);
    return lists.byMsgType.toPage(rows, page, total);
  }

  return {
    /** a new state of the file on this connection (src/snapshot/open.ts renewSnapshot): forget what was read once per state */
    renew(): void {
      for (const l of Object.values(lists)) l.newState();
    },
    resolveMsgTypes,
    account: (addr: Buffer): AccountRow | undefined => s.account.get(addr) as AccountRow | undefined,
    /** the stored row: packed (wire format 2) or the JSON text (1) */
    byHash: (hash: Buffer): Buffer | string | undefined => s.byHash.get(hash) as Buffer | string | undefined,

    list(filter: TxFilter, page: PageRequest): Page {
      const types = filter.msgTypes;
      if (types === undefined) return lists.all.page({}, page, () => meta.countTxs);
      if (types.length === 0) return emptyPage(page);
      if (types.length === 1) return lists.byMsgType.page({ msg_type_id: types[0].id }, page, () => types[0].tx_count);
      const ids = types.map((t) => t.id);
      return mergeMsgTypes(ids, 'all', {}, page, () => s.countMsgTypes.get({ msg_type_ids: JSON.stringify(ids) }) as number);
    },

    byAccount(account: AccountRow, signerOnly: boolean, filter: TxFilter, page: PageRequest): Page {
      const types = filter.msgTypes;
      const ids = types?.map((t) => t.id);
      const params = { account_id: account.id };
      if (ids === undefined || types === undefined) {
        return signerOnly
          ? lists.byAccountSigner.page(params, page, () => account.signer_tx_count)
          : lists.byAccount.page(params, page, () => account.tx_count);
      }
      if (ids.length === 0) return emptyPage(page);
      const withMsgs = { ...params, msg_type_ids: JSON.stringify(ids) };
      const matching = s.countAccountMsgs.get({ ...withMsgs, signer: signerOnly ? 1 : 0 }) as number;
      // No match (a type the account never used): no walk through the account's txs to learn it.
      if (matching === 0) return emptyPage(page);
      // Walk the shorter side: the account's txs testing each for a type, or the types' txs
      // testing each for the account. A page then reads about (walked / matching) × limit entries.
      const accountSide = signerOnly ? account.signer_tx_count : account.tx_count;
      const typeSide = types.reduce((n, t) => n + t.tx_count, 0);
      if (typeSide < accountSide) return mergeMsgTypes(ids, signerOnly ? 'signer' : 'account', params, page, () => matching);
      return (signerOnly ? lists.byAccountSignerMsgs : lists.byAccountMsgs).page(withMsgs, page, () => matching);
    },

    byHeight(height: number, filter: TxFilter, page: PageRequest): Page {
      const ids = filter.msgTypes?.map((t) => t.id);
      if (ids === undefined) return lists.byHeight.page({ height }, page, () => (s.blockTxCount.get(height) as number | undefined) ?? 0);
      if (ids.length === 0) return emptyPage(page);
      const params = { height, msg_type_ids: JSON.stringify(ids) };
      return lists.byHeightMsgs.page(params, page, () => s.countHeightMsgs.get(params) as number);
    },
  };
}
