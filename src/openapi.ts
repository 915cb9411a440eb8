import { statSync } from 'node:fs';
import { join } from 'node:path';
import { isSingleExecutable, readTextAsset, ROOT } from './assets';

export type OpenApiDocument = Record<string, unknown>;

/** `make build` writes openapi.yaml as JSON here (scripts/build-bundle.js): no YAML parse at start-up. */
export const OPENAPI_JSON_ASSET = 'build/openapi.json';

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

const dereferenced = new WeakMap<OpenApiDocument, OpenApiDocument>();
/** Top-level extension key marking a document validatorDocument() made (it has no $ref). */
export const DEREFERENCED = 'x-indexer-api-dereferenced';

/**
 * The same document with every local `$ref` ('#/components/…') replaced by a copy of its
 * target — what express-openapi-validator is given. Same constraints, but the validator no
 * longer compiles an Ajv validator for each referenced response only to look up what the `$ref`
 * points at (its SchemaPreprocessor resolves a `$ref` with `ajv.getSchema`), nor runs
 * json-schema-ref-parser over it (see takeDereferencedAsIs): together about half of the
 * validator's start-up. /swagger/doc.json still serves the document as written. Memoized per
 * document; throws on a non-local or circular `$ref`, or one with sibling keys (openapi.yaml has
 * none).
 */
export function validatorDocument(doc: OpenApiDocument): OpenApiDocument {
  let out = dereferenced.get(doc);
  if (!out) {
    out = { ...(inlineRefs(doc, doc, []) as OpenApiDocument), [DEREFERENCED]: true };
    dereferenced.set(doc, out);
  }
  takeDereferencedAsIs();
  return out;
}

interface Framework { prototype: { loadSpec: ((doc: unknown, refParser?: unknown) => Promise<unknown>) & { takesDereferenced?: true } } }

/**
 * express-openapi-validator 5.x runs json-schema-ref-parser's `bundle` over the document it is
 * given (framework/index.js loadSpec), which crawls all of it to resolve $refs. A document from
 * validatorDocument() has none, so it is taken as is — what `bundle` returns for it. A version
 * without that module keeps its own behaviour.
 */
function takeDereferencedAsIs(): void {
  let mod: { OpenAPIFramework?: Framework };
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    mod = require('express-openapi-validator/dist/framework/index');
  } catch {
    return;
  }
  const proto = mod.OpenAPIFramework?.prototype;
  if (!proto || typeof proto.loadSpec !== 'function' || proto.loadSpec.takesDereferenced) return;
  const original = proto.loadSpec;
  const loadSpec = function (this: unknown, doc: unknown, refParser?: unknown): Promise<unknown> {
    if (doc !== null && typeof doc === 'object' && (doc as Record<string, unknown>)[DEREFERENCED] === true) return Promise.resolve(doc);
    return original.call(this, doc, refParser);
  };
  proto.loadSpec = Object.assign(loadSpec, { takesDereferenced: true as const });
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

function inlineRefs(node: unknown, root: unknown, stack: string[]): unknown {
  if (Array.isArray(node)) return node.map((v) => inlineRefs(v, root, stack));
  if (node === null || typeof node !== 'object') return node;
  const obj = node as Record<string, unknown>;
  if (typeof obj.$ref === 'string') {
    const ref = obj.$ref;
    if (stack.includes(ref)) throw new Error(`openapi: circular $ref ${ref}`);
    // OpenAPI 3.0 ignores the siblings of a $ref, Ajv may not: refuse rather than guess
    if (Object.keys(obj).length > 1) throw new Error(`openapi: $ref ${ref} has sibling keys (${Object.keys(obj).join(', ')})`);
    return inlineRefs(resolvePointer(root, ref), root, [...stack, ref]);
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) out[k] = inlineRefs(v, root, stack);
  return out;
}
