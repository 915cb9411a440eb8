import { openDatabase } from '../../src/sqlite';

/**
 * Accounts of a demo snapshot to cut a fixture for (test/kit/cut.test.ts, bench/fixture-kit.ts):
 * one with NFTs and some txs, one with a single tx; both as 0x addresses.
 */
export function pickAccounts(file: string): string[] {
  const db = openDatabase(file, { readonly: true, fileMustExist: true });
  try {
    const q = (sql: string): string => `0x${(db.prepare(sql).pluck().get() as Buffer).toString('hex')}`;
    return [
      q('SELECT addr FROM accounts WHERE tx_count > 0 AND nft_count > 0 AND length(addr) = 20 ORDER BY tx_count, id LIMIT 1'),
      q('SELECT addr FROM accounts WHERE tx_count = 1 AND length(addr) = 20 ORDER BY id LIMIT 1'),
    ];
  } finally {
    db.close();
  }
}
