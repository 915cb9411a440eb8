/**
 * A real HTTP server behind admission (src/http/admission.ts), in a child process of the test so
 * that its blocking listener (?ms=N burns the CPU as a synchronous query does) blocks neither
 * the test's clients nor their writes. Sends { url } once listening, { ran, shed, bursts, arrived,
 * queuedBy } on 'report'; exits on 'close'. Options: JSON in argv[2], and two that name functions: `clientHeader`
 * (clientOf: that request header) and `groupByPath` (groupOf: the first path segment, the chain of
 * `/{chain_id}/…`). `arrived[id]`: how many requests had run when the last request of that id came.
 */
import { createServer, RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { admission, AdmissionOptions, Burst } from '../../src/http/admission';

const send = (m: unknown): void => { process.send?.(m); };
const ran: string[] = [];
const bursts: Burst[] = [];
const shed: string[] = [];
const arrived: Record<string, number> = {};
const app: RequestListener = (req, res) => {
  const u = new URL(req.url ?? '/', 'http://x');
  ran.push(u.searchParams.get('id') ?? '');
  const until = Date.now() + Number(u.searchParams.get('ms') ?? 0);
  while (Date.now() < until) { /* the synchronous query */ }
  res.end('{}');
};
const { clientHeader, groupByPath, ...given } = JSON.parse(process.argv[2] ?? '{}') as Partial<AdmissionOptions> & { clientHeader?: string; groupByPath?: boolean };
const admitted = admission(app, {
  maxQueued: 64, maxQueuedPerClient: 64, maxWaitMs: 60_000,
  onShed: (r) => shed.push(r), onBurst: (b) => bursts.push(b), ...given,
  ...(clientHeader ? { clientOf: (req) => String(req.headers[clientHeader]) } : {}),
  ...(groupByPath ? { groupOf: (req) => (req.url ?? '/').split(/[/?]/)[1] } : {}),
});
const server = createServer((req, res) => {
  arrived[new URL(req.url ?? '/', 'http://x').searchParams.get('id') ?? ''] = ran.length;
  admitted.listener(req, res);
});
server.listen(0, '127.0.0.1', () => send({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
process.on('message', (m: string) => {
  if (m === 'report') send({ ran, shed, bursts, arrived, queuedBy: Object.fromEntries(admitted.queuedBy()) });
  if (m === 'close') process.exit(0);
});
process.on('disconnect', () => process.exit(0));
