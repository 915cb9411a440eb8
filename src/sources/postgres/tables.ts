/** The rollytics tables read (docs/api-contract.md#rollytics-tables), and the check that they are there. */
import type { ReadTransaction } from './transaction';

/** EVM tables (docs/api-contract.md#rollytics-tables), read when all of them are present on an EVM chain. */
export const ROLLYTICS_EVM_TABLES = ['evm_tx', 'evm_tx_accounts', 'evm_internal_tx', 'evm_internal_tx_accounts', 'evm_tx_hash_dict'] as const;

/** The tables read; a missing one is refused before anything is written. */
export const ROLLYTICS_TABLES = [
  'block',
  'tx',
  'tx_accounts',
  'account_dict',
  'tx_msg_types',
  'msg_type_dict',
  'nft_collection',
  'nft',
  'nft_dict',
  'tx_nfts',
  'rich_list',
  'rich_list_status',
  'seq_info',
] as const;

/** The rollytics tables present (a missing required one is refused), EVM ones included. */
export async function presentTables(db: ReadTransaction): Promise<Set<string>> {
  const present = await db.q<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND c.relname = ANY($1)`,
    [[...ROLLYTICS_TABLES, ...ROLLYTICS_EVM_TABLES]],
  );
  const have = new Set(present.map((r) => r.name));
  const missing = ROLLYTICS_TABLES.filter((t) => !have.has(t));
  if (missing.length) {
    return db.fail(`PostgreSQL at ${db.where} is not a rollytics database: missing table${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`);
  }
  return have;
}
