/**
 * Keeps the import's main-thread heap near its live size. A source that is not a file (the `pg`
 * driver's rows, an API's pages) allocates big short-lived strings fast enough that V8 promotes
 * many of them and then lets the old generation grow far past what is live — on a 1M-tx
 * PostgreSQL import the heap reached ~280 MB with 60–230 MB live, and the process 520–570 MB
 * (the goal is < 500 MB). A full collection when the heap passes `limit` (then raised to twice
 * what stays live, so a heap that really is big is not collected over and over) bounds it;
 * it costs a few tens of ms each time, rarely.
 *
 * `gc` is not exposed without --expose-gc; the flag can be set at run time, and a new context
 * then has the function (v8.setFlagsFromString + vm.runInNewContext).
 */
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export function heapTrimmer(limitBytes: number, now: () => number = Date.now): () => void {
  let gc: (() => void) | undefined;
  try {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  } catch {
    gc = undefined;
  }
  if (typeof gc !== 'function') return () => undefined;
  const collect = gc;
  let limit = limitBytes;
  let last = 0;
  return () => {
    if (getHeapStatistics().total_heap_size <= limit) return;
    const t = now();
    if (t - last < 1000) return; // at most once a second, whatever V8 keeps committed
    last = t;
    collect();
    const live = getHeapStatistics().used_heap_size;
    limit = Math.max(limitBytes, 2 * live);
  };
}
