/**
 * The big byte buffers of the txs stage (line batches in, parser output back), reused: each
 * crosses to a parser thread and back by transfer and returns here after the inserts. Without
 * reuse every job allocated ≈9 MB that V8 frees only at the next GC of the heap it ended up on;
 * with three heaps that kept 100+ MB of dead buffers resident at times.
 */
export class BufferPool {
  /** never more than were in use at once, which the loader's jobs in flight bound */
  private readonly free: ArrayBuffer[] = [];

  /** `capacity`: the size of pooled buffers, enough for a normal job's input or output */
  constructor(private readonly capacity: number) {}

  /** A buffer of n bytes, on a pooled ArrayBuffer when n fits one. */
  take(n: number): Buffer {
    if (n > this.capacity) return Buffer.allocUnsafeSlow(n);
    const ab = this.free.pop() ?? Buffer.allocUnsafeSlow(this.capacity).buffer;
    return Buffer.from(ab, 0, n);
  }

  /** Returns a buffer from take() (others, e.g. oversized ones, are left to the GC). */
  give(ab: ArrayBuffer | undefined): void {
    if (ab && ab.byteLength === this.capacity) this.free.push(ab);
  }
}
