import type Database from 'better-sqlite3';
import { emptyPage, Page, PageRequest } from '../pagination';
import { ListQuery, Row, sequenceOrder } from '../list-query';

/** What the tx queries need of the snapshot's meta. */
interface TxMeta { countTxs: number }

/**
 * Cosmos tx lists, all in sequence order (rollytics' default `sequence` cursor). Totals are the
 * precomputed counts of the import: a msgs filter's total is a sum over the msg-type sets
 * (distinct combinations of a tx's types, sql/001-tables.sql) holding any requested type, per
 * account for by_account. Only by_height + msgs counts rows, those of one block.
 */

/** The msg-type sets holding any of the types in the JSON array @msg_type_ids. */
const SETS_WITH_ANY = 'SELECT set_id FROM msg_type_set_members WHERE msg_type_id IN (SELECT value FROM json_each(@msg_type_ids))';
const HAS_MSG_TYPE = 'EXISTS (SELECT 1 FROM tx_msg_types m WHERE m.sequence = t.sequence AND m.msg_type_id IN (SELECT value FROM json_each(@msg_type_ids)))';

export interface AccountRow { id: number; tx_count: number; signer_tx_count: number; nft_count: number; collection_count: number }

export interface MsgType { id: number; tx_count: number }

export interface TxFilter {
  /** resolved msg types; undefined = no msgs filter; [] = only unknown types (empty result) */
  msgTypes?: MsgType[];
}

export function prepareTxQueries(db: Database.Database, meta: TxMeta) {
  const lists = {
    all: new ListQuery(db, { name: 'selectTxs', select: 'json, sequence', from: 'txs t', where: '1', order: sequenceOrder('t.sequence') }),
    byMsgType: new ListQuery(db, {
      name: 'selectTxsByMsgType', select: 't.json AS json, m.sequence AS sequence',
      from: 'tx_msg_types m JOIN txs t ON t.sequence = m.sequence', where: 'm.msg_type_id = @msg_type_id', order: sequenceOrder('m.sequence'),
    }),
    byAccount: new ListQuery(db, {
      name: 'selectTxsByAccount', select: 't.json AS json, a.sequence AS sequence',
      from: 'tx_accounts a JOIN txs t ON t.sequence = a.sequence', where: 'a.account_id = @account_id', order: sequenceOrder('a.sequence'),
    }),
    // The partial index holds only signer rows, so a page never walks past the account's other txs.
    byAccountSigner: new ListQuery(db, {
      name: 'selectTxsByAccountSigner', select: 't.json AS json, a.sequence AS sequence',
      from: 'tx_accounts a INDEXED BY tx_accounts_signer JOIN txs t ON t.sequence = a.sequence', where: 'a.account_id = @account_id AND a.signer = 1', order: sequenceOrder('a.sequence'),
    }),
    byAccountMsgs: new ListQuery(db, {
      name: 'selectTxsByAccountMsgs', select: 't.json AS json, a.sequence AS sequence',
      from: 'tx_accounts a JOIN txs t ON t.sequence = a.sequence', where: `a.account_id = @account_id AND ${HAS_MSG_TYPE}`, order: sequenceOrder('a.sequence'),
    }),
    byAccountSignerMsgs: new ListQuery(db, {
      name: 'selectTxsByAccountSignerMsgs', select: 't.json AS json, a.sequence AS sequence',
      from: 'tx_accounts a JOIN txs t ON t.sequence = a.sequence', where: `a.account_id = @account_id AND a.signer = 1 AND ${HAS_MSG_TYPE}`, order: sequenceOrder('a.sequence'),
    }),
    byHeight: new ListQuery(db, { name: 'selectTxsByHeight', select: 'json, sequence', from: 'txs t', where: 't.height = @height', order: sequenceOrder('t.sequence') }),
    byHeightMsgs: new ListQuery(db, {
      name: 'selectTxsByHeightMsgs', select: 'json, sequence', from: 'txs t', where: `t.height = @height AND ${HAS_MSG_TYPE}`, order: sequenceOrder('t.sequence'),
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

  /** Several msg types on /txs: a merge of one index range per type, deduplicated in order. */
  function mergeMsgTypes(ids: number[], page: PageRequest): Page {
    const cursorPaged = page.key?.kind === 'cursor';
    const need = cursorPaged ? page.limit + 1 : page.offset + page.limit + 1;
    const sub: PageRequest = { ...page, limit: need - 1, offset: 0 };
    const seen = new Set<number>();
    const merged: Row[] = [];
    for (const id of ids) for (const r of lists.byMsgType.rows({ msg_type_id: id }, sub)) {
      const n = r.sequence as number;
      if (!seen.has(n)) { seen.add(n); merged.push(r); }
    }
    merged.sort((a, b) => (page.reverse ? (b.sequence as number) - (a.sequence as number) : (a.sequence as number) - (b.sequence as number)));
    const rows = merged.slice(cursorPaged ? 0 : page.offset, (cursorPaged ? 0 : page.offset) + page.limit + 1);
    return lists.byMsgType.toPage(rows, page, () => s.countMsgTypes.get({ msg_type_ids: JSON.stringify(ids) }) as number);
  }

  return {
    resolveMsgTypes,
    account: (addr: Buffer): AccountRow | undefined => s.account.get(addr) as AccountRow | undefined,
    byHash: (hash: Buffer): string | undefined => s.byHash.get(hash) as string | undefined,

    list(filter: TxFilter, page: PageRequest): Page {
      const types = filter.msgTypes;
      if (types === undefined) return lists.all.page({}, page, () => meta.countTxs);
      if (types.length === 0) return emptyPage(page);
      if (types.length === 1) return lists.byMsgType.page({ msg_type_id: types[0].id }, page, () => types[0].tx_count);
      return mergeMsgTypes(types.map((t) => t.id), page);
    },

    byAccount(account: AccountRow, signerOnly: boolean, filter: TxFilter, page: PageRequest): Page {
      const ids = filter.msgTypes?.map((t) => t.id);
      const params = { account_id: account.id };
      if (ids === undefined) {
        return signerOnly
          ? lists.byAccountSigner.page(params, page, () => account.signer_tx_count)
          : lists.byAccount.page(params, page, () => account.tx_count);
      }
      if (ids.length === 0) return emptyPage(page);
      const withMsgs = { ...params, msg_type_ids: JSON.stringify(ids) };
      const total = (): number => s.countAccountMsgs.get({ ...withMsgs, signer: signerOnly ? 1 : 0 }) as number;
      return (signerOnly ? lists.byAccountSignerMsgs : lists.byAccountMsgs).page(withMsgs, page, total);
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
