/**
 * A real HTTP server behind admission (src/http/admission.ts), in a child process of the test so
 * that its blocking listener (?ms=N burns the CPU as a synchronous query does) blocks neither
 * the test's clients nor their writes. Sends { url } once listening, { ran, shed, bursts } on
 * 'report'; exits on 'close'. Options: JSON in argv[2].
 */
import { createServer, RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { admission, AdmissionOptions, Burst } from '../../src/http/admission';

const send = (m: unknown): void => { process.send?.(m); };
const ran: string[] = [];
const bursts: Burst[] = [];
const shed: string[] = [];
const app: RequestListener = (req, res) => {
  const u = new URL(req.url ?? '/', 'http://x');
  ran.push(u.searchParams.get('id') ?? '');
  const until = Date.now() + Number(u.searchParams.get('ms') ?? 0);
  while (Date.now() < until) { /* the synchronous query */ }
  res.end('{}');
};
const { listener } = admission(app, {
  maxQueued: 64, maxQueuedPerClient: 64, maxWaitMs: 60_000,
  onShed: (r) => shed.push(r), onBurst: (b) => bursts.push(b), ...(JSON.parse(process.argv[2] ?? '{}') as Partial<AdmissionOptions>),
});
const server = createServer(listener);
server.listen(0, '127.0.0.1', () => send({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
process.on('message', (m: string) => {
  if (m === 'report') send({ ran, shed, bursts });
  if (m === 'close') process.exit(0);
});
process.on('disconnect', () => process.exit(0));
