/**
 * A parser thread of the import (pool.ts): parses the tx jobs it is sent, in order, and posts
 * back their rows, or `{ fatal }` for an unexpected exception (a bad record is not one: it
 * comes back as TxRows.failure).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { TxJob, TxParser } from './tx';

const port = parentPort;
if (!port) throw new Error('src/records/parse/worker.js runs as a worker thread');
const parser = new TxParser((workerData as { prefix: string }).prefix);
port.on('message', (job: TxJob) => {
  try {
    const rows = parser.run(job);
    port.postMessage(rows, [rows.out.buffer as ArrayBuffer, ...(rows.input ? [rows.input] : [])]);
  } catch (e) {
    port.postMessage({ fatal: (e as Error).stack ?? String(e) });
  }
});
