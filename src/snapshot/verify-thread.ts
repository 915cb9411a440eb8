/** The quick check's thread (verify.ts quickCheckOffThread): checks one file, posts the result. */
import { parentPort, workerData } from 'node:worker_threads';
import { quickCheck } from './quick-check';

if (!parentPort) throw new Error('src/snapshot/verify-thread.js runs as a worker thread');
parentPort.postMessage(quickCheck((workerData as { file: string }).file));
