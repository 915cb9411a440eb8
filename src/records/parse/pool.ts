import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { isSingleExecutable } from '../../assets';
import { TxJob, TxParser, TxRows } from './tx';

/**
 * Where tx records are parsed: a pool of worker threads, each running TxParser on whole jobs
 * (≈1000 records), so that the loader's thread only checks order and inserts. Results come back
 * in submission order; `depth` jobs may be in flight before the loader waits for the oldest.
 */
export interface TxParsing {
  readonly depth: number;
  parse(job: TxJob): Promise<TxRows>;
  close(): Promise<void>;
}

const WORKER_SCRIPT = join(__dirname, 'worker.js');
/**
 * A parser's garbage (JSON.parse's objects) dies young; a young generation of 16 MB instead of
 * the default keeps each thread's resident memory ≈20 MB smaller at no measurable cost.
 */
const YOUNG_GENERATION_MB = 16;
/** Jobs queued per thread: one being parsed, one waiting, so a thread never idles between jobs. */
const JOBS_PER_THREAD = 2;
/**
 * How long a closing thread gets to finish the jobs it holds (≈0.1 s each) and exit on its own
 * before it is terminated. A thread is never terminated while it may be busy if it can be helped:
 * Node 20 aborts the whole process ("close before init", node_zlib.cc) when a worker is
 * terminated between creating a zlib stream and initialising it, and a parser creates one per row
 * (docs/architecture.md, "Import").
 */
const CLOSE_GRACE_MS = 5_000;
/** The pools open now, so that an interrupted import can let their threads finish before it exits (stopTxParsing). */
const live = new Set<ParserPool>();

/**
 * Closes every open parser pool the way close() does (each thread finishes what it holds and
 * exits on its own), for an exit that cannot wait for the loader to unwind: a signal.
 */
export async function stopTxParsing(): Promise<void> {
  await Promise.all([...live].map((p) => p.close()));
}

/**
 * `threads` parser threads, or inline parsing when 0 or when there is no worker script to start
 * (the single executable bundles one script, so it parses inline).
 */
export function openTxParsing(prefix: string, threads: number): TxParsing {
  if (threads > 0 && !isSingleExecutable() && existsSync(WORKER_SCRIPT)) return new ParserPool(prefix, threads);
  const parser = new TxParser(prefix);
  return { depth: 1, parse: async (job) => parser.run(job), close: async () => undefined };
}

interface Waiting {
  resolve(rows: TxRows): void;
  reject(e: Error): void;
}

class ParserPool implements TxParsing {
  readonly depth: number;
  private readonly threads: { worker: Worker; waiting: Waiting[]; exited: boolean }[] = [];
  private failed: Error | undefined;
  private closing = false;
  private closed: Promise<void> | undefined;

  constructor(prefix: string, n: number) {
    this.depth = n * JOBS_PER_THREAD;
    for (let i = 0; i < n; i++) {
      const t = {
        worker: new Worker(WORKER_SCRIPT, { workerData: { prefix }, resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } }),
        waiting: [] as Waiting[],
        exited: false,
      };
      t.worker.on('message', (m: TxRows | { fatal: string }) => {
        const w = t.waiting.shift();
        if ('fatal' in m) w?.reject(new Error(`import parser thread: ${m.fatal}`));
        else w?.resolve(m);
      });
      t.worker.on('error', (e) => this.fail(e));
      t.worker.on('exit', (code) => {
        t.exited = true;
        if (!this.closing) this.fail(new Error(`import parser thread exited with code ${code}`));
      });
      this.threads.push(t);
    }
    live.add(this);
  }

  private fail(e: Error): void {
    this.failed ??= e;
    for (const t of this.threads) for (const w of t.waiting.splice(0)) w.reject(e);
  }

  parse(job: TxJob): Promise<TxRows> {
    if (this.failed) return Promise.reject(this.failed);
    if (this.closing) return Promise.reject(new Error('import parser threads: parse() after close()'));
    const t = this.threads.reduce((a, b) => (b.waiting.length < a.waiting.length ? b : a));
    return new Promise<TxRows>((resolve, reject) => {
      t.waiting.push({ resolve, reject });
      // Hand the buffers over instead of copying them: the loader does not touch them until they come back.
      const input = ('lines' in job ? job.lines.bytes.buffer : job.packed.bytes.buffer) as ArrayBuffer;
      t.worker.postMessage(job, [input, ...(job.out ? [job.out] : [])]);
    });
  }

  /**
   * Asks each thread to stop after the jobs it holds (its messages are handled in order) and waits
   * for it to exit on its own; one still running after CLOSE_GRACE_MS is terminated.
   */
  close(): Promise<void> {
    this.closing = true;
    this.closed ??= Promise.all(
      this.threads.map(
        (t) =>
          new Promise<void>((resolve) => {
            if (t.exited) return resolve();
            const timer = setTimeout(() => void t.worker.terminate(), CLOSE_GRACE_MS);
            t.worker.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            t.worker.postMessage({ close: true });
          }),
      ),
    ).then(() => {
      live.delete(this);
    });
    return this.closed;
  }
}
