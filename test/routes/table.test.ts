/**
 * The route table (src/routes/table.ts) and openapi.yaml state the same API: every path of the
 * file is a declared route (or the served document itself, src/http/swagger.ts) and every
 * declared route a path of the file, with the same path and query parameters; and every route
 * declares the tags its answer reads (src/http/route.ts `reads`; `[]` when it reads nothing a
 * write changes) — a route without them would be cached as reading everything. Compared with
 * openapi.yaml as written, not /swagger/doc.json (which omits the groups a chain does not answer).
 */
import { expect } from 'chai';
import yaml from 'js-yaml';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PAGE_QUERY } from '../../src/http/params';
import type { ApiRoute } from '../../src/http/route';
import { DOC_JSON_PATH } from '../../src/http/swagger';
import { apiPathCheck, apiRoutes } from '../../src/routes/table';
import { ROOT } from '../helpers/app';

interface Parameter { name: string; in: string; $ref?: string }
interface Document { paths: Record<string, Record<string, { parameters?: Parameter[] }>>; components: { parameters: Record<string, Parameter> } }

const doc = yaml.load(readFileSync(join(ROOT, 'openapi.yaml'), 'utf8')) as Document;

/** openapi.yaml's GET parameters of `path`, $refs resolved: name → where. */
function documented(path: string): { path: string[]; query: string[] } {
  const params = (doc.paths[path].get?.parameters ?? []).map((p) => (p.$ref ? doc.components.parameters[p.$ref.split('/').pop() as string] : p));
  return { path: params.filter((p) => p.in === 'path').map((p) => p.name).sort(), query: params.filter((p) => p.in === 'query').map((p) => p.name).sort() };
}

/** The table's path as openapi.yaml writes it (`:name` → `{name}`), and its path parameters. */
const asDocumented = (r: ApiRoute): string => r.path.replace(/:([A-Za-z_]+)/g, '{$1}');
const pathParams = (r: ApiRoute): string[] => [...r.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]).sort();

describe('route table (src/routes/table.ts) and openapi.yaml', () => {
  const routes = apiRoutes();

  it('every path of openapi.yaml is a declared route (or the served document), and every route a path of openapi.yaml', () => {
    const declared = routes.map(asDocumented);
    expect(new Set(declared).size, 'a path declared twice').to.equal(declared.length);
    expect([...declared, DOC_JSON_PATH].sort()).to.deep.equal(Object.keys(doc.paths).sort());
  });

  it('every route has the path and query parameters openapi.yaml lists for it, in both directions', () => {
    for (const r of routes) {
      const d = documented(asDocumented(r));
      expect(pathParams(r), `path parameters of ${r.path}`).to.deep.equal(d.path);
      expect([...r.query].sort(), `query parameters of ${r.path}`).to.deep.equal(d.query);
    }
  });

  it('every route declares the tags its answer reads: a list (`[]` when it reads nothing) or a function of the request', () => {
    for (const r of routes) {
      const reads = (r as { reads?: unknown }).reads;
      expect(Array.isArray(reads) || typeof reads === 'function', `${r.path} declares no tags`).to.equal(true);
    }
  });

  it('only a tx, an EVM tx or a block is declared immutable', () => {
    const immutable = routes.filter((r) => r.immutable === true).map((r) => r.path).sort();
    expect(immutable).to.deep.equal(['/indexer/block/v1/blocks/:height', '/indexer/tx/v1/evm-txs/:tx_hash', '/indexer/tx/v1/txs/:tx_hash']);
  });

  it('pagination is declared by every route that openapi.yaml pages, with the names page() reads', () => {
    for (const r of routes) {
      const paged = documented(asDocumented(r)).query.includes('pagination.limit');
      expect(PAGE_QUERY.every((p) => r.query.includes(p)), r.path).to.equal(paged);
    }
  });

  it('the API-path check derived from the table: /indexer/… and /status, nothing else', () => {
    const isApi = apiPathCheck(routes);
    for (const url of ['/status', '/status?x=1', '/indexer/', '/indexer/tx/v1/txs', '/indexer/no/such']) expect(isApi(url), url).to.equal(true);
    for (const url of ['/', '/status/', '/statusx', '/indexer', '/health', '/ready', '/metrics', '/swagger/doc.json', '/explorer/']) expect(isApi(url), url).to.equal(false);
  });
});
