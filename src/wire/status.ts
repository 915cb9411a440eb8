/**
 * Rollytics' optional /status extension fields (docs/api-contract.md#status), in the order it
 * emits them after the core fields: the progress of its background cleanup jobs. Imported as
 * given (dump meta, PostgreSQL status tables, a crawled /status), kept in the snapshot meta
 * under the same names, served after `rich_list_height`, each omitted when 0. The
 * `tx_account_cleanup_*` ones may be −1 (rollytics: cleanup enabled, no progress row yet).
 */
export const STATUS_EXTENSIONS = [
  'evm_ret_cleanup_height',
  'tx_account_cleanup_sequence',
  'tx_account_cleanup_deleted',
  'tx_account_cleanup_inserted',
] as const;
export type StatusExtension = (typeof STATUS_EXTENSIONS)[number];

/** The least value each extension may hold. */
export const STATUS_EXTENSION_MIN: Record<StatusExtension, number> = {
  evm_ret_cleanup_height: 0,
  tx_account_cleanup_sequence: -1,
  tx_account_cleanup_deleted: -1,
  tx_account_cleanup_inserted: -1,
};

/** The snapshot meta fields /status shows. */
export interface StatusFields {
  version: string;
  commitHash: string;
  chainId: string;
  height: number;
  internalTxHeight: number;
  richListHeight: number;
  /** absent or 0: omitted */
  extensions?: Partial<Record<StatusExtension, number>>;
}

/** /status (docs/api-contract.md#status): heights are numbers; the optional ones are omitted when 0. */
export function statusJson(m: StatusFields): string {
  let extra = '';
  for (const k of STATUS_EXTENSIONS) {
    const v = m.extensions?.[k];
    if (v) extra += ',"' + k + '":' + v;
  }
  return (
    '{"version":' +
    JSON.stringify(m.version) +
    ',"commit_hash":' +
    JSON.stringify(m.commitHash) +
    ',"chain_id":' +
    JSON.stringify(m.chainId) +
    ',"height":' +
    m.height +
    (m.internalTxHeight ? ',"internal_tx_height":' + m.internalTxHeight : '') +
    (m.richListHeight ? ',"rich_list_height":' + m.richListHeight : '') +
    extra +
    '}'
  );
}
