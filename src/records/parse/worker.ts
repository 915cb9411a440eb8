/**
 * A parser thread of the import (pool.ts): parses the tx jobs it is sent, in order, and posts
 * back their rows, or `{ fatal }` for an unexpected exception (a bad record is not one: it
 * comes back as TxRows.failure). On `{ close: true }` (sent after every job) it closes its port
 * and exits on its own: a thread is not terminated mid-job (pool.ts, CLOSE_GRACE_MS).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { TxJob, TxParser } from './tx';

const port = parentPort;
if (!port) throw new Error('src/records/parse/worker.js runs as a worker thread');
const parser = new TxParser((workerData as { prefix: string }).prefix);
port.on('message', (job: TxJob | { close: true }) => {
  // the pool closing (pool.ts): every job sent before this was answered; exit on our own
  if ('close' in job) return port.close();
  try {
    const rows = parser.run(job);
    port.postMessage(rows, [rows.out.buffer as ArrayBuffer, ...(rows.input ? [rows.input] : [])]);
  } catch (e) {
    port.postMessage({ fatal: (e as Error).stack ?? String(e) });
  }
});
