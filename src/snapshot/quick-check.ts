import { openStore, StoreError } from './store';

/** SQLite's PRAGMA quick_check, reported as one line (src/snapshot/verify.ts uses it off-thread). */

/** The quick check's rows reported: the first names the problem, the count says how many. */
const MAX_PROBLEMS = 100;

export interface QuickCheckResult {
  /** problems found (0 = ok); capped at MAX_PROBLEMS, reported as "100 or more" */
  problems: number;
  /** SQLite's first line (or the error that stopped the check) */
  first?: string;
  /** the check could not go on past its first problem (a page too damaged to walk) */
  stopped?: boolean;
}

/**
 * A test hook (docs/reliability.md "Test hooks"): INDEXER_TEST_CHECK_PASSES=N runs the check N
 * times over, in one read transaction — the reads done and the lock held as long as for a file
 * about N times the size — so a test can have `follow` start beside a `serve` whose start-up
 * check is slow without writing gigabytes. Unset (1) in use.
 */
function checkPasses(): number {
  const n = Number(process.env.INDEXER_TEST_CHECK_PASSES ?? 1);
  return Number.isSafeInteger(n) && n > 1 ? n : 1;
}

/** PRAGMA quick_check on a read-only connection of its own, in this thread. */
export function quickCheck(file: string): QuickCheckResult {
  let db;
  try {
    db = openStore(file, 'read');
  } catch (e) {
    // the first read (in openStore) met a file too damaged to walk: the check stopped there
    if (e instanceof StoreError) return { problems: 1, first: e.reason, ...(e.atOpen ? {} : { stopped: true }) };
    return { problems: 1, first: (e as Error).message };
  }
  try {
    const passes = checkPasses();
    if (passes > 1) db.exec('BEGIN');
    let rows: { quick_check: string }[] = [];
    for (let i = 0; i < passes; i++) rows = db.pragma(`quick_check(${MAX_PROBLEMS})`, { simple: false }) as { quick_check: string }[];
    const lines = rows.map((r) => r.quick_check);
    if (lines.length === 1 && lines[0] === 'ok') return { problems: 0 };
    return { problems: lines.length, first: lines[0] };
  } catch (e) {
    // A page too damaged to walk stops the check itself (SQLITE_CORRUPT "malformed").
    return { problems: 1, first: (e as Error).message, stopped: true };
  } finally {
    db.close();
  }
}

/** One line for a failed check: the first problem and how many there are. */
export function quickCheckMessage(file: string, r: QuickCheckResult): string {
  const first = (r.first ?? 'unknown problem').replace(/\s+/g, ' ').trim();
  if (r.stopped) return `snapshot failed its quick check (stopped at: ${first}): ${file}`;
  const more = r.problems >= MAX_PROBLEMS ? `${MAX_PROBLEMS} or more problems` : `${r.problems} problem${r.problems === 1 ? '' : 's'}`;
  return `snapshot failed its quick check (${more}; first: ${first}): ${file}`;
}
