import type Database from 'better-sqlite3';
import { recordChange } from '../../src/snapshot/changes';
import { TIP, heightTag } from '../../src/snapshot/tags';

/**
 * One tiny batch committed by a connection of its own, as `follow` writes one: a block at the
 * top, the meta (height, count, a new snapshot id) and a change record naming the tip, the new
 * height and `tags`. Returns the new height. (test/snapshot's own helper: docs/testing.md.)
 */
export function commitBlock(w: Database.Database, tags: string[] = []): number {
  const top = w.prepare('SELECT max(height) FROM blocks').pluck().get() as number;
  w.exec('BEGIN IMMEDIATE');
  w.prepare('INSERT INTO blocks (height, time_us, tx_count, json) SELECT height + 1, time_us + 1000000, 0, json FROM blocks WHERE height = ?').run(top);
  w.prepare("UPDATE meta SET value = ? WHERE key IN ('height', 'max_height')").run(String(top + 1));
  w.prepare("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'count_blocks'").run();
  w.prepare("UPDATE meta SET value = ? WHERE key = 'snapshot_id'").run(`test-${top + 1}-${Math.random()}`);
  recordChange(w, 'batch', top + 1, [TIP, heightTag(top + 1), ...tags]);
  w.exec('COMMIT');
  return top + 1;
}
