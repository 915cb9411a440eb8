import { openSync, writeSync } from 'node:fs';
import { createLogger } from '../src/lib/log';

/**
 * What one access-log line costs (issue #36: "say what the access log costs per request at this
 * rate, and use the ecosystem's fast logger, pino, if ours costs more"): the request line `serve
 * --log-level info` writes (src/http/observe.ts: method, path, status, ms, bytes), formatted and
 * written to /dev/null by our logger (src/lib/log.ts: JSON built as text, buffered, flushed every
 * 10 ms or 64 KiB) and by pino (its default JSON, to pino.destination, asynchronous and
 * buffered), in the same process, alternating, median of --runs. pino is not a dependency: the
 * bench loads it from wherever `require` finds it (`npm install --no-save pino` first) and says
 * so when it cannot.
 *
 *   node build/bench/log-cost.js [--lines 500000] [--runs 7]
 */
function opt(argv: string[], name: string, dflt: string): string {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : dflt;
}

type LineFn = (i: number) => void;

const PATH = '/indexer/tx/v1/txs/by_account/init1qyqszqgpqyqszqgpqyqszqgpqyqszqgpjn7wx8?pagination.reverse=true&pagination.limit=10';

async function main(argv: string[]): Promise<void> {
  const lines = Number(opt(argv, 'lines', '500000'));
  const runs = Number(opt(argv, 'runs', '7'));
  const fd = openSync('/dev/null', 'w');
  const ours = createLogger('info', (t) => { writeSync(fd, t); }, {}, 'json');
  const oursLine: LineFn = (i) => ours.info('request', { method: 'GET', path: PATH, status: 304, ms: 0.021 + (i % 7) / 1000, bytes: 0 });
  let pinoLine: LineFn | undefined;
  let pinoFlush: (() => void) | undefined;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const pino = require('pino') as (o: object, d: unknown) => { info(o: object, msg: string): void; flush(): void } & { destination?: unknown };
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const dest = (require('pino') as { destination(o: object): unknown }).destination({ dest: '/dev/null', sync: false, minLength: 8 * 1024 });
    const p = pino({ base: undefined, timestamp: () => `,"time":"${new Date().toISOString()}"` }, dest);
    pinoLine = (i) => p.info({ method: 'GET', path: PATH, status: 304, ms: 0.021 + (i % 7) / 1000, bytes: 0 }, 'request');
    pinoFlush = () => p.flush();
  } catch (e) {
    process.stdout.write(`pino not loaded (${(e as Error).message.split('\n')[0]}): \`npm install --no-save pino\` to compare with it\n`);
  }
  const time = (fn: LineFn, flush: () => void): number => {
    const t = process.hrtime.bigint();
    for (let i = 0; i < lines; i++) fn(i);
    flush();
    return Number(process.hrtime.bigint() - t) / 1e3 / lines;
  };
  const results: Record<string, number[]> = { ours: [], pino: [] };
  for (let r = 0; r < runs; r++) {
    results.ours.push(time(oursLine, () => ours.flush()));
    if (pinoLine && pinoFlush) results.pino.push(time(pinoLine, pinoFlush));
    await new Promise((d) => setTimeout(d, 50));
  }
  const median = (a: number[]): number => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  for (const [k, v] of Object.entries(results)) {
    if (v.length) process.stdout.write(`${k}: ${median(v).toFixed(3)} µs per request line (median of ${v.length} runs of ${lines} lines; runs ${v.map((x) => x.toFixed(3)).join(', ')})\n`);
  }
}

void main(process.argv.slice(2));
