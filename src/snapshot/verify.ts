import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { isSingleExecutable } from '../assets';
import { openSnapshot, SnapshotError } from './open';
import { quickCheck, quickCheckMessage, QuickCheckResult } from './quick-check';

export { quickCheck, quickCheckMessage, QuickCheckResult };

/**
 * "Is this file a snapshot we can serve?" — everything `serve` checks when it opens a file
 * (SQLite header, size, user_version, meta schema_version, required meta, every statement
 * prepares) plus SQLite's `PRAGMA quick_check` over every page (O(file size): docs/reliability.md
 * has the cost per GB). Used by `serve` on start and on every hot swap, and by anyone who
 * received a file (e.g. a download, after its sha256) before putting it in place.
 */

const THREAD_SCRIPT = join(__dirname, 'verify-thread.js');

/**
 * quickCheck on a worker thread (its own connection), so that the thread serving requests is
 * not blocked for the seconds a large file takes. Inline where there is no thread script (the
 * single executable bundles one script).
 */
export function quickCheckOffThread(file: string): Promise<QuickCheckResult> {
  if (isSingleExecutable() || !existsSync(THREAD_SCRIPT)) return Promise.resolve(quickCheck(file));
  return new Promise((resolve) => {
    const worker = new Worker(THREAD_SCRIPT, { workerData: { file } });
    let result: QuickCheckResult | undefined;
    worker.once('message', (r: QuickCheckResult) => { result = r; });
    worker.once('error', (e) => { result = { problems: 1, first: `check thread failed: ${e.message}` }; });
    worker.once('exit', () => resolve(result ?? { problems: 1, first: 'check thread exited without a result' }));
  });
}

/** quickCheckOffThread, rejecting with a one-line SnapshotError when it finds a problem. */
export async function checkPages(file: string): Promise<void> {
  const r = await quickCheckOffThread(file);
  if (r.problems > 0) throw new SnapshotError(quickCheckMessage(file, r));
}

/**
 * Verifies a snapshot file completely; resolves when it can be served, rejects with a
 * SnapshotError whose message is one line naming the file and the (first) problem. The quick
 * check runs off the calling thread.
 */
export async function verifySnapshotFile(file: string): Promise<void> {
  openSnapshot(file).close();
  await checkPages(file);
}
