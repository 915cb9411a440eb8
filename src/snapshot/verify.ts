import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { isSingleExecutable } from '../assets';
import { statSync } from 'node:fs';
import { pinnedChainError } from './file-check';
import { openSnapshot, SnapshotError, type SnapshotMeta } from './open';
import { quickCheck, quickCheckMessage, QuickCheckResult } from './quick-check';
import { fileMarkers, findVerdict, recordVerdict, type Verdict } from './verdict';

export { quickCheck, quickCheckMessage, QuickCheckResult };

/**
 * "Is this file a snapshot we can serve?" — everything `serve` checks when it opens a file
 * (SQLite header, size, user_version, meta schema_version, required meta, every statement
 * prepares) plus SQLite's `PRAGMA quick_check` over every page (O(file size): docs/reliability.md
 * has the cost per GB). The one check every file passes before it is served, however it arrives
 * (docs/reliability.md): `serve` at start, on every hot swap and for a file added to --db-dir
 * (checkPages after its open), `serve --pull` on a download (`indexer-api check` in a child),
 * `indexer-api check` offline, and anyone who received a file (e.g. a download, after its sha256).
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
    worker.once('message', (r: QuickCheckResult) => {
      result = r;
    });
    worker.once('error', (e) => {
      result = { problems: 1, first: `check thread failed: ${e.message}` };
    });
    worker.once('exit', () => resolve(result ?? { problems: 1, first: 'check thread exited without a result' }));
  });
}

/** How a file's pages passed: checked now, or a recorded check of the same unchanged file taken (src/snapshot/verdict.ts). */
export interface PagesChecked {
  /** the recorded check taken instead of reading the file; undefined: checked now */
  carried?: Verdict;
  /** this check's time, ms (≈ 0 when carried) */
  ms: number;
}

/**
 * quickCheckOffThread, rejecting with a one-line SnapshotError when it finds a problem — unless
 * the same file, unchanged, passed before (a recorded check: src/snapshot/verdict.ts), which is
 * then taken instead of reading every page again. A pass is recorded for the next time.
 */
export async function checkPages(file: string): Promise<PagesChecked> {
  const started = process.hrtime.bigint();
  const markers = fileMarkers(file);
  const carried = findVerdict(file, markers);
  if (carried !== undefined) return { carried, ms: Number(process.hrtime.bigint() - started) / 1e6 };
  const r = await quickCheckOffThread(file);
  if (r.problems > 0) throw new SnapshotError(quickCheckMessage(file, r));
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  recordVerdict(file, markers, ms);
  return { ms };
}

/** What a checked file holds. */
export interface CheckedSnapshot {
  file: string;
  meta: SnapshotMeta;
  bytes: number;
  /** the whole check, ms */
  ms: number;
  /** the recorded check of the same unchanged file that was taken instead of reading its pages (src/snapshot/verdict.ts) */
  carried?: Verdict;
}

/**
 * Checks a snapshot file completely, as `serve` does before serving it: opens it (every
 * statement prepared), optionally that it is chain `expectChainId`, then the quick check off
 * the calling thread. Resolves with its meta; rejects with a SnapshotError whose message is the
 * one line serve prints (naming the file and the first problem).
 */
export async function checkSnapshot(file: string, o: { expectChainId?: string } = {}): Promise<CheckedSnapshot> {
  const started = process.hrtime.bigint();
  const s = openSnapshot(file);
  const meta = s.meta;
  s.close();
  if (o.expectChainId !== undefined && meta.chainId !== o.expectChainId) throw pinnedChainError(file, meta.chainId, o.expectChainId, '--expect-chain-id');
  const pages = await checkPages(file);
  return { file, meta, bytes: statSync(file).size, ms: Number(process.hrtime.bigint() - started) / 1e6, ...(pages.carried ? { carried: pages.carried } : {}) };
}

/**
 * Verifies a snapshot file completely; resolves when it can be served, rejects with a
 * SnapshotError whose message is one line naming the file and the (first) problem. The quick
 * check runs off the calling thread.
 */
export async function verifySnapshotFile(file: string): Promise<void> {
  await checkSnapshot(file);
}
