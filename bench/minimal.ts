import { createServer, IncomingMessage } from 'node:http';
import { canonicalAddress } from '../src/lib/address';
import { emptyPage, listResponse, Page, PageRequest, parsePageRequest, PaginationQuery } from '../src/snapshot/pagination';
import { blockResponse } from '../src/wire/block';
import { txResponse } from '../src/wire/tx';
import { openSnapshot } from '../src/snapshot/open';
import type { TxFilter } from '../src/snapshot/queries/tx';
import { DeflateBody, JsonBody } from '../src/wire/packed';

/**
 * The minimal server of the cold-mix comparison (bench/cold-mix.ts): node:http + better-sqlite3
 * through the same snapshot queries (the same SQL statements) and the same serializers as
 * indexer-api, so its bodies are byte-identical — and nothing else: no Express, no OpenAPI
 * validation, no ETag, no logging, no metrics, no CORS. Five route families (what the cold mix
 * requests, their `msgs` and `is_signer` filters included); unknown query parameters (bench_r) are ignored, bad input is not checked. Packed rows
 * (wire format 2) go as gzip when the request's Accept-Encoding names gzip (assembled as
 * indexer-api does, src/wire/packed.ts), inflated otherwise.
 *
 *   node build/bench/minimal.js <snapshot.sqlite> <port>
 */

const JSON_TYPE = 'application/json; charset=utf-8';

function pageOf(search: URLSearchParams): PageRequest {
  const q: PaginationQuery = {};
  const num = (k: 'pagination.limit' | 'pagination.offset'): void => { const v = search.get(k); if (v !== null) q[k] = Number(v); };
  const bool = (k: 'pagination.count_total' | 'pagination.reverse'): void => { const v = search.get(k); if (v !== null) q[k] = v === 'true'; };
  num('pagination.limit'); num('pagination.offset'); bool('pagination.count_total'); bool('pagination.reverse');
  const key = search.get('pagination.key');
  if (key !== null) q['pagination.key'] = key;
  return parsePageRequest(q);
}

if (require.main === module) {
  const [file, port] = process.argv.slice(2);
  const s = openSnapshot(file);
  const tx = s.q.tx;
  // msgs as the app reads it (src/http/params.ts msgTypes): comma lists, a leading `/` dropped
  const filterOf = (search: URLSearchParams): TxFilter => {
    const names = search.getAll('msgs').flatMap((v) => v.split(',')).map((v) => v.trim().replace(/^\//, '')).filter((v) => v !== '');
    return { msgTypes: names.length ? tx.resolveMsgTypes(names) : undefined };
  };
  const answer = (req: IncomingMessage): JsonBody | undefined => {
    const url = req.url as string;
    const qi = url.indexOf('?');
    const path = qi < 0 ? url : url.slice(0, qi);
    const search = new URLSearchParams(qi < 0 ? '' : url.slice(qi + 1));
    let m: RegExpExecArray | null;
    if (path === '/indexer/tx/v1/txs') return listResponse('txs', tx.list(filterOf(search), pageOf(search)));
    if ((m = /^\/indexer\/tx\/v1\/txs\/by_account\/([^/]+)$/.exec(path))) {
      const p = pageOf(search);
      const account = tx.account(canonicalAddress(decodeURIComponent(m[1]), s.meta.prefix));
      const page: Page = account ? tx.byAccount(account, search.get('is_signer') === 'true', filterOf(search), p) : emptyPage(p);
      return listResponse('txs', page);
    }
    if ((m = /^\/indexer\/tx\/v1\/txs\/by_height\/(\d+)$/.exec(path))) return listResponse('txs', tx.byHeight(Number(m[1]), filterOf(search), pageOf(search)));
    if ((m = /^\/indexer\/tx\/v1\/txs\/(?:0x)?([0-9A-Fa-f]+)$/.exec(path))) {
      const json = tx.byHash(Buffer.from(m[1], 'hex'));
      return json === undefined ? undefined : txResponse(json);
    }
    if ((m = /^\/indexer\/block\/v1\/blocks\/(\d+)$/.exec(path))) {
      const json = s.q.block.byHeight(Number(m[1]));
      return json === undefined ? undefined : blockResponse(json);
    }
    return undefined;
  };
  const server = createServer((req, res) => {
    const body = answer(req);
    if (body === undefined) { res.writeHead(404).end(); return; }
    const gzip = body instanceof DeflateBody && (req.headers['accept-encoding'] ?? '').includes('gzip');
    const bytes = body instanceof DeflateBody ? (gzip ? body.gzip() : body.identity()) : typeof body === 'string' ? Buffer.from(body) : body;
    const headers: Record<string, string | number> = { 'Content-Type': JSON_TYPE, 'Content-Length': bytes.length };
    if (gzip) headers['Content-Encoding'] = 'gzip';
    res.writeHead(200, headers);
    res.end(bytes);
  });
  server.keepAliveTimeout = 5_000;
  server.listen(Number(port), '127.0.0.1', () => { process.stdout.write('listening\n'); });
  process.on('SIGTERM', () => server.close(() => { s.close(); process.exit(0); }));
}
