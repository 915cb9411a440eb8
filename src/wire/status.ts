import type { SnapshotMeta } from '../snapshot/open';

/** /status (docs/api-contract.md#status): heights are numbers; the optional ones are omitted when 0. */
export function statusJson(m: SnapshotMeta): string {
  return '{"version":' + JSON.stringify(m.version)
    + ',"commit_hash":' + JSON.stringify(m.commitHash)
    + ',"chain_id":' + JSON.stringify(m.chainId)
    + ',"height":' + m.height
    + (m.internalTxHeight ? ',"internal_tx_height":' + m.internalTxHeight : '')
    + (m.richListHeight ? ',"rich_list_height":' + m.richListHeight : '')
    + '}';
}
