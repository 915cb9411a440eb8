import { expect } from 'chai';
import { getHeapStatistics } from 'node:v8';
import { heapTrimmer } from '../../src/records/heap';

describe('import heap trimmer (src/records/heap.ts)', () => {
  it('collects when the heap passes the limit, then not again within a second (a clock the test drives)', () => {
    let clock = 10_000;
    const trim = heapTrimmer(1, () => clock); // any heap is past 1 byte
    let junk: string[] | undefined = Array.from({ length: 20_000 }, (_, i) => `${i}`.repeat(200));
    expect(junk.length).to.equal(20_000);
    junk = undefined;
    const before = getHeapStatistics().used_heap_size;
    trim();
    const after = getHeapStatistics().used_heap_size;
    expect(after, 'a full collection frees the dropped strings').to.be.lessThan(before - 20_000 * 200);
    // A second call within the second is a no-op: garbage made now survives it.
    clock += 999;
    let more: string[] | undefined = Array.from({ length: 20_000 }, (_, i) => `${i}`.repeat(200));
    expect(more.length).to.equal(20_000);
    more = undefined;
    const again = getHeapStatistics().used_heap_size;
    trim();
    expect(getHeapStatistics().used_heap_size).to.be.at.least(again - 1_000_000);
  });
});
