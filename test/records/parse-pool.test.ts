/**
 * The import's parser threads (src/records/parse/pool.ts) are closed by letting each finish the
 * jobs it holds and exit on its own. They used to be terminated, which dropped the jobs in
 * flight and, about once in a hundred closes of a busy pool, aborted the whole process (Node 20:
 * `Assertion failed: init_done_ && "close before init"`, node_zlib.cc — a thread terminated
 * between creating the zlib stream of a row and initialising it); CI met it on an import of a bad
 * dump, which closes the pool while the other jobs are being parsed.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../src/assets';
import { openTxParsing, stopTxParsing } from '../../src/records/parse/pool';
import type { TxJob, TxRows } from '../../src/records/parse/tx';

const LINES = readFileSync(join(ROOT, 'fixtures', 'demo', 'dumps', 'wasm', 'txs.ndjson'), 'utf8').split('\n').filter(Boolean);
const PREFIX = 'init';

function job(k: number, n: number): TxJob {
  return { lines: { file: 'txs.ndjson', firstLine: 1 + k * n, bytes: new Uint8Array(Buffer.from(LINES.slice(k * n, (k + 1) * n).join('\n') + '\n')) } };
}

/** `p`, or a failure naming `what` after `ms`: a job a terminated thread dropped would never settle. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: not settled after ${ms} ms`)), ms);
    }),
  ]);
}

describe('import parser threads (src/records/parse/pool.ts)', function () {
  this.timeout(60_000);

  it('close() lets every job already sent finish: each is answered whole (a terminated thread would drop it), then close() resolves', async () => {
    const parsing = openTxParsing(PREFIX, 2);
    expect(parsing.depth).to.equal(4);
    const sent = [0, 1, 2].map((k) => parsing.parse(job(k, 1000)));
    const closed = parsing.close(); // while the threads hold all three
    const rows: TxRows[] = await within(Promise.all(sent), 30_000, 'the jobs in flight at close()');
    await within(closed, 30_000, 'close()');
    expect(rows.map((r) => r.sequences.length)).to.deep.equal([1000, 1000, 1000]);
    expect(rows.every((r) => r.failure === undefined)).to.equal(true);
    expect(rows[2].lines[0]).to.equal(2001);
    // the same rows a parser on this thread makes
    const inline = openTxParsing(PREFIX, 0);
    const again = await inline.parse(job(2, 1000));
    expect(Buffer.from(rows[2].out.subarray(0, rows[2].ends.at(-1)))).to.deep.equal(Buffer.from(again.out.subarray(0, again.ends.at(-1))));
    await inline.close();
  });

  it('after close() a job is refused, and closing again is the same close', async () => {
    const parsing = openTxParsing(PREFIX, 1);
    const first = parsing.close();
    expect(parsing.close()).to.equal(first);
    await first;
    let refused: Error | undefined;
    await parsing.parse(job(0, 10)).catch((e: Error) => (refused = e));
    expect(refused?.message).to.match(/parse\(\) after close\(\)/);
  });

  it('stopTxParsing() (an interrupted import) closes every open pool the same way, its jobs in flight answered', async () => {
    const a = openTxParsing(PREFIX, 1);
    const b = openTxParsing(PREFIX, 1);
    const sent = [a.parse(job(0, 500)), b.parse(job(1, 500))];
    await within(stopTxParsing(), 30_000, 'stopTxParsing()');
    const rows = await within(Promise.all(sent), 1_000, 'the jobs in flight');
    expect(rows.map((r) => r.sequences.length)).to.deep.equal([500, 500]);
    await stopTxParsing(); // none open: nothing to wait for
  });
});
