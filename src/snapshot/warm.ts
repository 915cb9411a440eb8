/**
 * The warm-up of a served file (issue #42, docs/response-cache.md "ETags from versions"): the
 * pages a conditional GET decided from the versions reads (src/snapshot/tag-versions.ts: the
 * `accounts_by_addr` index and the `accounts` rows) read once, in sequential scans, when a file
 * is opened to be served — so that the first poll of each wallet after a restart or a swap finds
 * its account's pages in this process (mapped, or in SQLite's page cache), instead of each first
 * lookup faulting its own pages in one by one (bench/README.md "Restarts and new files under
 * load" measures both).
 *
 * Bounded: it reads in steps of CHUNK accounts and stops after `budgetMs` (the rest is read by
 * the lookups themselves, as without it), so a chain of any size adds at most that to the time a
 * file takes to be served. The holder (src/snapshot/holder.ts) runs it at start before the file
 * is served, and on a new file before it is swapped in, yielding to the event loop between steps.
 */
import type Database from 'better-sqlite3';

/** Accounts read per step (one statement each: the scan runs in C, no row reaches JS). */
const CHUNK = 50_000;

/** At most this long a warm-up reads (its steps' time, not the pauses between them). */
export const WARM_BUDGET_MS = 2_000;

/** What a warm-up read. */
export interface Warmed {
  ms: number;
  complete: boolean;
}

/** The warm-up's steps: the account index's leaves, CHUNK entries a step, then the rows by rowid ranges. */
function* steps(db: Database.Database): Generator<void, void> {
  // the CHUNK-th address after `from`: the index's leaves walked up to it
  const hop = db.prepare(`SELECT addr FROM accounts INDEXED BY accounts_by_addr WHERE addr > ? ORDER BY addr LIMIT 1 OFFSET ${CHUNK - 1}`).pluck();
  let from = db.prepare('SELECT addr FROM accounts INDEXED BY accounts_by_addr ORDER BY addr LIMIT 1').pluck().get() as Buffer | undefined;
  while (from !== undefined) {
    from = hop.get(from) as Buffer | undefined;
    yield;
  }
  const rows = db.prepare('SELECT count(*) FROM accounts WHERE id > ? AND id <= ?').pluck();
  const maxId = (db.prepare('SELECT max(id) FROM accounts').pluck().get() as number | null) ?? 0;
  for (let id = 0; id < maxId; id += CHUNK) {
    rows.get(id, id + CHUNK);
    yield;
  }
}

/** One step of the warm-up a call: what it read once it is over (done, or past the budget), else undefined. */
function stepper(db: Database.Database, budgetMs: number): () => Warmed | undefined {
  const it = steps(db);
  let ms = 0;
  return () => {
    const t = process.hrtime.bigint();
    const r = it.next();
    ms += Number(process.hrtime.bigint() - t) / 1e6;
    if (r.done === true) return { ms, complete: true };
    return ms > budgetMs ? { ms, complete: false } : undefined;
  };
}

/** Runs the warm-up of `db` at once (the caller's thread busy for at most about `budgetMs`). */
export function warmVersions(db: Database.Database, budgetMs = WARM_BUDGET_MS): Warmed {
  const step = stepper(db, budgetMs);
  for (;;) {
    const w = step();
    if (w !== undefined) return w;
  }
}

/** The same, yielding to the event loop between steps (a file about to be swapped in while another serves). */
export async function warmVersionsAsync(db: Database.Database, budgetMs = WARM_BUDGET_MS): Promise<Warmed> {
  const step = stepper(db, budgetMs);
  for (;;) {
    const w = step();
    if (w !== undefined) return w;
    await new Promise<void>((done) => setImmediate(done));
  }
}
