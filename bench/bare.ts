import { readFileSync } from 'node:fs';
import { createServer, OutgoingHttpHeaders } from 'node:http';

/**
 * The baseline: a bare node:http server that answers each URL with the exact status, headers
 * and body bytes our server gave it (captured by bench/run.ts), from memory — no routing, no
 * SQL, no validation. What it serves per second is the most Node could do with those bytes.
 * A URL with `bench_r=<n>` appended (bench/run.ts --rotate) gets the bytes of the URL without it.
 *
 *   node build/bench/bare.js <captured.json> <port>
 */

export interface Captured { status: number; headers: OutgoingHttpHeaders; body: string /* base64 */ }

if (require.main === module) {
  const [file, port] = process.argv.slice(2);
  const captured = JSON.parse(readFileSync(file, 'utf8')) as Record<string, Captured>;
  const responses = new Map(Object.entries(captured).map(([url, c]) => [url, { ...c, bytes: Buffer.from(c.body, 'base64') }]));
  const server = createServer((req, res) => {
    // --rotate: `…bench_r=<n>` on the end of a captured URL is answered with that URL's bytes
    const url = req.url as string;
    const at = url.lastIndexOf('bench_r=');
    const r = responses.get(at < 0 ? url : url.slice(0, at - 1));
    if (!r) { res.writeHead(404).end(); return; }
    res.writeHead(r.status, r.headers);
    res.end(r.bytes);
  });
  server.keepAliveTimeout = 5_000;
  server.listen(Number(port), '127.0.0.1', () => { process.stdout.write('listening\n'); });
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}
