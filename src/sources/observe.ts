import type { NdjsonLine } from '../records/ndjson';
import type { ImportSource } from '../records/source';

/**
 * Wraps a source to learn record totals as records flow by, for the progress ETA: the number
 * of blocks from meta's `height` (an upper bound when the chain does not start at 1), and the
 * number of txs as the sum of the blocks' `tx_count` (exact: the import checks it).
 */
export function observeTotals(source: ImportSource): ImportSource {
  let metaHeight: number | undefined;
  let txs = 0;
  let sawBlocks = false;
  const own = source.total?.bind(source);
  async function* watch(kind: string, it: AsyncIterable<NdjsonLine>): AsyncGenerator<NdjsonLine> {
    for await (const r of it) {
      if (kind === 'meta') {
        const m = /"height"\s*:\s*"?(\d+)/.exec(r.text);
        if (m) metaHeight = Number(m[1]);
      } else if (kind === 'blocks') {
        sawBlocks = true;
        const m = /"tx_count"\s*:\s*"?(\d+)/.exec(r.text);
        if (m) txs += Number(m[1]);
      }
      yield r;
    }
  }
  return {
    ...source,
    records(kind) {
      const it = source.records(kind);
      return it && (kind === 'meta' || kind === 'blocks') ? watch(kind, it) : it;
    },
    total(kind) {
      const t = own?.(kind);
      if (t !== undefined) return t;
      if (kind === 'blocks') return metaHeight;
      if (kind === 'txs' && sawBlocks) return txs;
      return undefined;
    },
    close: () => source.close(),
  };
}
