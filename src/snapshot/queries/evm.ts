import type Database from 'better-sqlite3';
import { emptyPage, Page, PageRequest } from '../pagination';
import { ListQuery, sequenceOrder } from '../list-query';

/**
 * EVM txs and internal txs (docs/api-contract.md#evm-tx, docs/api-contract.md#evm-internal-tx), all in sequence order (rollytics' default
 * `sequence` cursor). Every total is a precomputed count: one row lookup.
 */

export interface EvmAccount {
  id: number;
  tx_count: number;
  signer_tx_count: number;
  internal_tx_count: number;
}

export interface EvmCounts {
  txs: number;
  internalTxs: number;
}

export function prepareEvmQueries(db: Database.Database, counts: EvmCounts) {
  const lists = {
    txs: new ListQuery(db, {
      name: 'selectEvmTxs',
      select: 'json, sequence',
      from: 'evm_txs t',
      where: '1',
      order: sequenceOrder('t.sequence'),
      dense: { bounds: 'SELECT min(sequence) AS min, max(sequence) AS max FROM evm_txs', count: () => counts.txs },
    }),
    txsByHeight: new ListQuery(db, {
      name: 'selectEvmTxsByHeight',
      select: 'json, sequence',
      from: 'evm_txs t',
      where: 't.height = @height',
      order: sequenceOrder('t.sequence'),
    }),
    txsByAccount: new ListQuery(db, {
      name: 'selectEvmTxsByAccount',
      select: 't.json AS json, a.sequence AS sequence',
      from: 'evm_tx_accounts a JOIN evm_txs t ON t.sequence = a.sequence',
      where: 'a.account_id = @account_id',
      order: sequenceOrder('a.sequence'),
      skip: { from: 'evm_tx_accounts a', where: 'a.account_id = @account_id' },
    }),
    // The partial index holds only signer rows, so a page never walks past the account's other txs.
    txsByAccountSigner: new ListQuery(db, {
      name: 'selectEvmTxsByAccountSigner',
      select: 't.json AS json, a.sequence AS sequence',
      from: 'evm_tx_accounts a INDEXED BY evm_tx_accounts_signer JOIN evm_txs t ON t.sequence = a.sequence',
      where: 'a.account_id = @account_id AND a.signer = 1',
      order: sequenceOrder('a.sequence'),
      skip: { from: 'evm_tx_accounts a INDEXED BY evm_tx_accounts_signer', where: 'a.account_id = @account_id AND a.signer = 1' },
    }),
    internal: new ListQuery(db, {
      name: 'selectEvmInternalTxs',
      select: 'json, sequence',
      from: 'evm_internal_txs i',
      where: '1',
      order: sequenceOrder('i.sequence'),
      dense: { bounds: 'SELECT min(sequence) AS min, max(sequence) AS max FROM evm_internal_txs', count: () => counts.internalTxs },
    }),
    internalByHeight: new ListQuery(db, {
      name: 'selectEvmInternalTxsByHeight',
      select: 'json, sequence',
      from: 'evm_internal_txs i',
      where: 'i.height = @height',
      order: sequenceOrder('i.sequence'),
    }),
    internalByHash: new ListQuery(db, {
      name: 'selectEvmInternalTxsByHash',
      select: 'json, sequence',
      from: 'evm_internal_txs i',
      where: 'i.hash = @hash',
      order: sequenceOrder('i.sequence'),
    }),
    internalByAccount: new ListQuery(db, {
      name: 'selectEvmInternalTxsByAccount',
      select: 'i.json AS json, a.sequence AS sequence',
      from: 'evm_internal_tx_accounts a JOIN evm_internal_txs i ON i.sequence = a.sequence',
      where: 'a.account_id = @account_id',
      order: sequenceOrder('a.sequence'),
      skip: { from: 'evm_internal_tx_accounts a', where: 'a.account_id = @account_id' },
    }),
  };
  for (const l of Object.values(lists)) l.prepareAll();
  const p = (sql: string): Database.Statement => db.prepare(sql);
  const s = {
    byHash: p('SELECT json FROM evm_txs WHERE hash = ? ORDER BY sequence LIMIT 1').pluck(),
    account: p(`SELECT a.id, coalesce(c.tx_count, 0) AS tx_count, coalesce(c.signer_tx_count, 0) AS signer_tx_count,
                       coalesce(c.internal_tx_count, 0) AS internal_tx_count
                FROM accounts a LEFT JOIN evm_account_counts c ON c.account_id = a.id WHERE a.addr = ?`),
    height: p('SELECT tx_count, internal_tx_count FROM evm_height_counts WHERE height = ?'),
    hashInternalCount: p('SELECT internal_tx_count FROM evm_hashes WHERE hash = ?').pluck(),
  };
  const heightCounts = (height: number): { tx_count: number; internal_tx_count: number } =>
    (s.height.get(height) as { tx_count: number; internal_tx_count: number } | undefined) ?? { tx_count: 0, internal_tx_count: 0 };

  return {
    /** a new state of the file on this connection (src/snapshot/open.ts renewSnapshot): forget what was read once per state */
    renew(): void {
      for (const l of Object.values(lists)) l.newState();
    },
    account: (addr: Buffer): EvmAccount | undefined => s.account.get(addr) as EvmAccount | undefined,
    /** the stored row: packed (wire format 2) or the JSON text (1) */
    txByHash: (hash: Buffer): Buffer | string | undefined => s.byHash.get(hash) as Buffer | string | undefined,
    txs: (page: PageRequest): Page => lists.txs.page({}, page, () => counts.txs),
    txsByHeight: (height: number, page: PageRequest): Page => lists.txsByHeight.page({ height }, page, () => heightCounts(height).tx_count),
    txsByAccount(account: EvmAccount | undefined, signerOnly: boolean, page: PageRequest): Page {
      if (!account) return emptyPage(page);
      const params = { account_id: account.id };
      return signerOnly
        ? lists.txsByAccountSigner.page(params, page, () => account.signer_tx_count)
        : lists.txsByAccount.page(params, page, () => account.tx_count);
    },
    internalTxs: (page: PageRequest): Page => lists.internal.page({}, page, () => counts.internalTxs),
    internalByHeight: (height: number, page: PageRequest): Page => lists.internalByHeight.page({ height }, page, () => heightCounts(height).internal_tx_count),
    internalByAccount(account: EvmAccount | undefined, page: PageRequest): Page {
      if (!account) return emptyPage(page);
      return lists.internalByAccount.page({ account_id: account.id }, page, () => account.internal_tx_count);
    },
    /** undefined: the hash is no known EVM tx (404); a known hash without calls is an empty page */
    internalByHash(hash: Buffer, page: PageRequest): Page | undefined {
      const n = s.hashInternalCount.get(hash) as number | undefined;
      if (n === undefined) return undefined;
      return lists.internalByHash.page({ hash }, page, () => n);
    },
  };
}
