import type Database from 'better-sqlite3';
import type { Page, PageRequest } from '../pagination';
import { ListQuery } from '../list-query';

/** What the block queries need of the snapshot's meta. */
interface BlockMeta {
  countBlocks: number;
}
import { avgBlockTimeResponse } from '../../wire/block';

/** Blocks: one table in height order (the rowid). */
export function prepareBlockQueries(db: Database.Database, meta: BlockMeta) {
  const list = new ListQuery(db, {
    name: 'selectBlocks',
    select: 'json, height',
    from: 'blocks',
    where: '1',
    order: [{ sql: 'height', field: 'height', kind: 'int' }],
    dense: { bounds: 'SELECT min(height) AS min, max(height) AS max FROM blocks', count: () => meta.countBlocks },
  });
  list.prepareAll();
  const byHeight = db.prepare('SELECT json FROM blocks WHERE height = ?').pluck();
  const recentTimes = db.prepare('SELECT time_us FROM blocks ORDER BY height DESC LIMIT 100').pluck();
  let avg: string | undefined;
  return {
    /** a new state of the file on this connection (src/snapshot/open.ts renewSnapshot): forget what was read once per state */
    renew(): void {
      list.newState();
      avg = undefined;
    },
    list: (page: PageRequest): Page => list.page({}, page, () => meta.countBlocks),
    /** the stored row: packed (wire format 2) or the JSON text (1) */
    byHeight: (height: number): Buffer | string | undefined => byHeight.get(height) as Buffer | string | undefined,
    /** a state is immutable, so the answer is computed once per state */
    avgBlockTime: (): string => {
      if (avg === undefined) {
        const times = recentTimes.all() as number[];
        avg = avgBlockTimeResponse(times[0], times[times.length - 1], times.length);
      }
      return avg;
    },
  };
}
