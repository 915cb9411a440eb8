/** The snapshot meta fields /status shows. */
export interface StatusFields {
  version: string;
  commitHash: string;
  chainId: string;
  height: number;
  internalTxHeight: number;
  richListHeight: number;
}

/** /status (docs/api-contract.md#status): heights are numbers; the optional ones are omitted when 0. */
export function statusJson(m: StatusFields): string {
  return '{"version":' + JSON.stringify(m.version)
    + ',"commit_hash":' + JSON.stringify(m.commitHash)
    + ',"chain_id":' + JSON.stringify(m.chainId)
    + ',"height":' + m.height
    + (m.internalTxHeight ? ',"internal_tx_height":' + m.internalTxHeight : '')
    + (m.richListHeight ? ',"rich_list_height":' + m.richListHeight : '')
    + '}';
}
