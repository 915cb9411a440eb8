import { readFileSync } from 'node:fs';
import { createServer, request } from 'node:http';

/**
 * The floor of an answer from memory (issue #36): a bare node:http server that answers the wallet
 * URLs of bench/wallets.ts from a Map — a 304 with the header block our server sends (Vary, CORS,
 * Cache-Control, ETag) when If-None-Match is the ETag it holds, else the 200's exact bytes
 * (status, headers, body) fetched once from our server at start (--bodies-from), else 404. No
 * routing, no SQL, no validation, no metrics, no log: the most Node's HTTP server could do.
 *
 *   node build/bench/floor.js --paths FILE --port P [--bodies-from URL] [--bodies N]
 *
 * FILE: `path<TAB>etag` lines (bench/wallets.ts writes it). With --bodies-from, the first N paths
 * (default all) also get their 200 (gzip, as wrk asks) from our server, headers but Date,
 * Connection and Keep-Alive.
 */
interface Held { etag: string; status?: number; headers?: string[]; body?: Buffer }

const HEADERS_304 = ['Vary', 'Accept-Encoding', 'Access-Control-Allow-Origin', '*', 'Cache-Control', 'public, max-age=1'];

function opt(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(`--${name}`);
  return i < 0 ? undefined : argv[i + 1];
}

/** The 200 our server sends for `path`, as raw header pairs and bytes. */
function fetchRaw(base: string, path: string): Promise<{ status: number; headers: string[]; body: Buffer }> {
  return new Promise((done, fail) => {
    const req = request(base + path, { headers: { 'accept-encoding': 'gzip, deflate, br' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const headers: string[] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) {
          const k = res.rawHeaders[i].toLowerCase();
          if (k === 'date' || k === 'connection' || k === 'keep-alive') continue;
          headers.push(res.rawHeaders[i], res.rawHeaders[i + 1]);
        }
        done({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks) });
      });
      res.on('error', fail);
    });
    req.on('error', fail);
    req.end();
  });
}

async function main(argv: string[]): Promise<void> {
  const held = new Map<string, Held>();
  const lines = readFileSync(opt(argv, 'paths') as string, 'utf8').split('\n').filter(Boolean);
  for (const line of lines) {
    const [path, etag] = line.split('\t');
    held.set(path, { etag });
  }
  const from = opt(argv, 'bodies-from');
  if (from !== undefined) {
    const n = Number(opt(argv, 'bodies') ?? lines.length);
    const paths = lines.slice(0, n).map((l) => l.split('\t')[0]);
    for (let i = 0; i < paths.length; i += 16) {
      await Promise.all(paths.slice(i, i + 16).map(async (p) => {
        const r = await fetchRaw(from, p);
        Object.assign(held.get(p) as Held, { status: r.status, headers: r.headers, body: r.body });
      }));
    }
  }
  const server = createServer((req, res) => {
    const h = held.get(req.url as string);
    if (h === undefined) { res.writeHead(404).end(); return; }
    if (req.headers['if-none-match'] === h.etag) {
      res.writeHead(304, [...HEADERS_304, 'ETag', h.etag]);
      res.end();
      return;
    }
    if (h.body === undefined) { res.writeHead(404).end(); return; }
    res.writeHead(h.status as number, h.headers);
    res.end(h.body);
  });
  server.keepAliveTimeout = 5_000;
  server.listen(Number(opt(argv, 'port') ?? 0), '127.0.0.1', () => {
    const a = server.address();
    process.stdout.write(`listening http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}\n`);
  });
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

void main(process.argv.slice(2));
