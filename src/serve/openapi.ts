import { statSync } from 'node:fs';
import { join } from 'node:path';
import { isSingleExecutable, readTextAsset, ROOT } from '../assets';

export type OpenApiDocument = Record<string, unknown>;

/** `make build` writes openapi.yaml as JSON here (scripts/build-bundle.js): no YAML parse at start-up. */
const OPENAPI_JSON_ASSET = 'build/openapi.json';

/** openapi.json when it is at least as new as openapi.yaml (always, inside the single executable). */
function jsonIsCurrent(): boolean {
  if (isSingleExecutable()) return true;
  try {
    return statSync(join(ROOT, OPENAPI_JSON_ASSET)).mtimeMs >= statSync(join(ROOT, 'openapi.yaml')).mtimeMs;
  } catch {
    return false;
  }
}

/** openapi.yaml: what the validator enforces and what /swagger/doc.json serves. */
export function loadOpenApi(): OpenApiDocument {
  if (jsonIsCurrent()) return JSON.parse(readTextAsset(OPENAPI_JSON_ASSET)) as OpenApiDocument;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const yaml = require('js-yaml') as typeof import('js-yaml');
  return yaml.load(readTextAsset('openapi.yaml')) as OpenApiDocument;
}

/**
 * Which of the API's groups a snapshot answers (src/routes/evm/routes.ts evmUnavailable): every
 * one on EVM; on EVM without internal-tx indexing all but evm-internal-txs; on Move and Wasm none
 * of the EVM groups.
 */
export type ApiGroups = 'all' | 'no-internal-txs' | 'no-evm';

export function apiGroupsOf(meta: { vmType: string; evmInternalTxs: boolean } | undefined): ApiGroups {
  if (meta === undefined) return 'all';
  if (meta.vmType !== 'evm') return 'no-evm';
  return meta.evmInternalTxs ? 'all' : 'no-internal-txs';
}

const EVM_GROUP = /^\/indexer\/tx\/v1\/(evm-txs|evm-internal-txs)(\/|$)/;

/**
 * The document /swagger/doc.json serves for a chain: openapi.yaml without the paths the chain
 * answers 404 (rollytics' doc.json of a Move or Wasm chain has no /evm- paths), without the `evm`
 * tag once no path carries it, and naming `base` (the chain's prefix) in `servers`. The validator
 * keeps the whole document: the groups a chain lacks are answered 404 before it runs.
 */
export function servedDocument(doc: OpenApiDocument, groups: ApiGroups, base: string): OpenApiDocument {
  let out: OpenApiDocument = base === '' ? doc : { ...doc, servers: [{ url: base }] };
  if (groups === 'all') return out;
  const paths = Object.fromEntries(
    Object.entries(doc.paths as Record<string, unknown>).filter(([p]) => {
      const m = EVM_GROUP.exec(p);
      return m === null || (groups === 'no-internal-txs' && m[1] === 'evm-txs');
    }),
  );
  out = { ...out, paths };
  if (groups === 'no-evm' && Array.isArray(doc.tags)) out.tags = (doc.tags as { name?: string }[]).filter((t) => t.name !== 'evm');
  return out;
}

const dereferenced = new WeakMap<OpenApiDocument, Map<boolean, OpenApiDocument>>();

/**
 * What express-openapi-validator is given: the same document with every local `$ref`
 * ('#/components/…') replaced by its target (one copy, shared by all the places that refer to
 * it, as json-schema-ref-parser's `dereference` does), so without `components`; and unless
 * `withResponses` (response validation, in tests) without the response bodies' schemas, which
 * only response validation reads. The request constraints are the same, but the validator no
 * longer compiles an Ajv validator for each referenced response only to look up what the `$ref`
 * points at (its SchemaPreprocessor resolves a `$ref` with `ajv.getSchema`), nor runs
 * json-schema-ref-parser over it (with patches/express-openapi-validator+*.patch a document
 * without $ref is taken as is), and the document it clones and walks —
 * once at start-up and twice more for each route's first request (Ajv's addSchema traverses
 * every key of the route schema, which embeds `paths`) — is a third of the size: together most
 * of the validator's start-up. /swagger/doc.json still serves the document as written. Memoized
 * per document; throws on a non-local or circular `$ref`, or one with sibling keys (openapi.yaml
 * has none).
 */
export function validatorDocument(doc: OpenApiDocument, withResponses: boolean): OpenApiDocument {
  let byFlag = dereferenced.get(doc);
  if (!byFlag) dereferenced.set(doc, (byFlag = new Map()));
  let out = byFlag.get(withResponses);
  if (!out) {
    const { components: _components, ...rest } = inlineRefs(doc, doc, [], new Map()) as OpenApiDocument;
    out = rest;
    if (!withResponses) out.paths = withoutResponseBodies(out.paths as Record<string, Record<string, unknown>>);
    byFlag.set(withResponses, out);
  }
  return out;
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/** Each operation's responses reduced to their status codes and descriptions. */
function withoutResponseBodies(paths: Record<string, Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [path, item] of Object.entries(paths)) {
    const copy: Record<string, unknown> = { ...item };
    for (const [method, op] of Object.entries(item)) {
      if (!METHODS.has(method) || op === null || typeof op !== 'object') continue;
      const o = op as { responses?: Record<string, { description?: string }> };
      if (!o.responses) continue;
      const responses: Record<string, { description: string }> = {};
      for (const [code, r] of Object.entries(o.responses)) responses[code] = { description: r?.description ?? '' };
      copy[method] = { ...o, responses };
    }
    out[path] = copy;
  }
  return out;
}

function resolvePointer(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) throw new Error(`openapi: only local $refs are supported, got ${ref}`);
  let cur: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (cur === null || typeof cur !== 'object' || !(key in cur)) throw new Error(`openapi: $ref ${ref} does not resolve`);
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

/** `done`: each $ref target is copied once and that copy shared by every place that refers to it. */
function inlineRefs(node: unknown, root: unknown, stack: string[], done: Map<string, unknown>): unknown {
  if (Array.isArray(node)) return node.map((v) => inlineRefs(v, root, stack, done));
  if (node === null || typeof node !== 'object') return node;
  const obj = node as Record<string, unknown>;
  if (typeof obj.$ref === 'string') {
    const ref = obj.$ref;
    if (stack.includes(ref)) throw new Error(`openapi: circular $ref ${ref}`);
    // OpenAPI 3.0 ignores the siblings of a $ref, Ajv may not: refuse rather than guess
    if (Object.keys(obj).length > 1) throw new Error(`openapi: $ref ${ref} has sibling keys (${Object.keys(obj).join(', ')})`);
    if (!done.has(ref)) done.set(ref, inlineRefs(resolvePointer(root, ref), root, [...stack, ref], done));
    return done.get(ref);
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) out[k] = inlineRefs(v, root, stack, done);
  return out;
}
