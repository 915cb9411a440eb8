import type { Request, RequestHandler } from 'express';
import { AddressError, canonicalAddress } from '../lib/address';
import { parseGoBool } from '../lib/bool';
import { invalidValue } from './errors';
import { rawQueryValues } from './url';
import { PageRequest, PaginationQuery, parsePageRequest } from '../snapshot/pagination';

/**
 * Typed access to validated request input. express-openapi-validator has already checked and
 * coerced types (openapi.yaml); what remains is the domain parsing rollytics does: addresses,
 * hashes, msgs lists. Path parameters come from req.openapi.pathParams, decoded exactly once.
 */

interface OpenApiRequest {
  openapi?: { pathParams?: Record<string, unknown> };
}

export function pathParam(req: Request, name: string): string {
  const v = (req as OpenApiRequest).openapi?.pathParams?.[name] ?? req.params[name];
  return String(v);
}

/**
 * Integers are read strictly as base-10 digits (rollytics parses base 10: `+7` and `007` are
 * fine). The validator's type coercion alone would let `0x10`, `1e3`, ` 7` and `Infinity` through.
 */
const DECIMAL = /^\+?[0-9]{1,16}$/;

function strictInt(name: string, raw: string): number {
  const n = Number(raw);
  if (!DECIMAL.test(raw) || !Number.isSafeInteger(n)) {
    throw invalidValue(name, raw, 'must be a decimal integer');
  }
  return n;
}

const INT64_MAX = 9223372036854775807n;

/**
 * A height path parameter, read as rollytics reads it (strconv.ParseInt(v, 10, 64)): optional
 * sign, any number of leading zeros, up to 2^63 − 1; then it must be ≥ 1. No snapshot holds a
 * height above 2^53 − 1 (docs/dump-format.md), so a larger one reads as 2^53, which matches
 * nothing: a 404 for one block, an empty list by height — as rollytics answers it.
 */
export function pathInt(req: Request, name: string): number {
  const raw = String(req.params[name]);
  if (!/^[+-]?[0-9]+$/.test(raw)) throw invalidValue(name, raw, 'must be a valid integer');
  const n = BigInt(raw);
  // Go's ParseInt range, said as the validator says a bound (src/http/errors.ts exactBounds)
  if (n > INT64_MAX) throw invalidValue(name, raw, `must be <= ${INT64_MAX}`);
  if (n < 1n) throw invalidValue(name, n < -INT64_MAX - 1n ? raw : String(n), 'must be a positive integer');
  return n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER + 1 : Number(n);
}

export function query<T>(req: Request, name: string): T | undefined {
  return (req.query as Record<string, unknown>)[name] as T | undefined;
}

/** The query parameters page() reads: every list route declares them (src/http/route.ts `query`). */
export const PAGE_QUERY = ['pagination.key', 'pagination.offset', 'pagination.limit', 'pagination.count_total', 'pagination.reverse'] as const;

export function page(req: Request): PageRequest {
  for (const name of ['pagination.limit', 'pagination.offset']) {
    // the first value is the one read (rollyticsQuery); empty is the default
    const raw = rawQueryValues(req.originalUrl, name)[0];
    if (raw !== undefined && raw !== '') strictInt(name, raw);
  }
  const q = req.query as PaginationQuery;
  return parsePageRequest({
    ...q,
    'pagination.reverse': goBool(req, 'pagination.reverse', true),
    'pagination.count_total': goBool(req, 'pagination.count_total', true),
  });
}

/** Any address form of docs/api-contract.md#addresses → canonical bytes, or 400 naming the parameter and value. */
export function address(name: string, value: string, prefix: string): Buffer {
  try {
    return canonicalAddress(value, prefix);
  } catch (e) {
    if (e instanceof AddressError) throw invalidValue(name, value, e.message);
    throw e;
  }
}

/**
 * Tx hash: hex, either case, with or without 0x (docs/api-contract.md#other-parameters). `0x`
 * alone is the empty hash, which names no tx (rollytics: 404), not a malformed one.
 */
export function txHash(value: string): Buffer {
  const hex = value.replace(/^0[xX]/, '');
  if (!/^[0-9a-fA-F]*$/.test(hex)) {
    throw invalidValue('tx_hash', value, 'must be hex, with or without 0x');
  }
  return Buffer.from(hex.length % 2 ? `0${hex}` : hex, 'hex');
}

/** msgs: repeated and comma-separated values both work, leading '/' optional (docs/api-contract.md#other-parameters). */
export function msgTypes(req: Request): string[] | undefined {
  const raw = query<string[] | string>(req, 'msgs');
  if (raw === undefined) return undefined;
  const names = (Array.isArray(raw) ? raw : [raw])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim().replace(/^\//, ''))
    .filter((v) => v !== '');
  return names.length ? names : undefined;
}

/**
 * token_id filter candidates: the value as received and, when it still holds percent escapes,
 * decoded once more — Celatone double-encodes it (client-explorer Q4).
 */
export function tokenIdCandidates(req: Request): [string, string] | undefined {
  const v = query<string>(req, 'token_id');
  if (v === undefined || v === '') return undefined;
  let decoded = v;
  try {
    decoded = decodeURIComponent(v);
  } catch {
    /* not an escape sequence: exact match only */
  }
  return [v, decoded];
}

/**
 * Booleans as rollytics reads each one (docs/api-contract.md#booleans). `pagination.reverse` and
 * `pagination.count_total` go through fiber's `QueryBool`: Go's strconv.ParseBool, whose
 * spellings are `1 t T TRUE true True` and `0 f F FALSE false False`; any other value, the empty
 * one included, is the default — never a 400.
 */
function goBool(req: Request, name: string, fallback: boolean): boolean {
  const v = query<unknown>(req, name);
  return (typeof v === 'string' ? parseGoBool(v) : undefined) ?? fallback;
}

/**
 * `is_signer`: rollytics compares the exact string (`c.Query("is_signer", "false") == "true"`),
 * so `True`, `1`, `yes` and an empty value all mean the unfiltered list.
 */
export function isSigner(req: Request): boolean {
  return query<unknown>(req, 'is_signer') === 'true';
}

/** Token order (rollytics `normalizeOrderBy`): trimmed and lower-cased; empty is `token_id`. */
export function tokenOrder(req: Request): 'token_id' | 'height' {
  const raw = query<unknown>(req, 'order_by');
  if (raw === undefined) return 'token_id';
  const v = String(raw).trim().toLowerCase();
  if (v === '' || v === 'token_id') return 'token_id';
  if (v === 'height') return 'height';
  throw invalidValue('order_by', String(raw), 'must be one of: token_id, height');
}

/**
 * fasthttp's `Peek`, behind every `c.Query`/`QueryInt`/`QueryBool` of rollytics, reads the first
 * value of a repeated parameter; only `msgs` (and any other `type: array` parameter) is read whole.
 * An empty `pagination.limit` or `pagination.offset` is Atoi's failure and so the default, as in
 * rollytics. Runs before the validator, so it sees what rollytics would read.
 */
const EMPTY_IS_ABSENT = new Set(['pagination.limit', 'pagination.offset']);

export function rollyticsQuery(arrayNames: ReadonlySet<string>): RequestHandler {
  return (req, _res, next) => {
    const q = req.query as Record<string, unknown>;
    for (const name in q) {
      const v = q[name];
      if (Array.isArray(v) && !arrayNames.has(name)) q[name] = v[0];
      if (q[name] === '' && EMPTY_IS_ABSENT.has(name)) delete q[name];
    }
    next();
  };
}

/** The names of the query parameters declared `type: array` anywhere in a document without $refs. */
export function arrayQueryParameters(doc: Record<string, unknown>): Set<string> {
  const names = new Set<string>();
  for (const item of Object.values((doc.paths ?? {}) as Record<string, Record<string, unknown>>)) {
    for (const op of [item, ...Object.values(item)]) {
      const params = (op as { parameters?: unknown } | null)?.parameters;
      if (!Array.isArray(params)) continue;
      for (const p of params as { in?: string; name?: string; schema?: { type?: string } }[]) {
        if (p.in === 'query' && p.schema?.type === 'array' && p.name) names.add(p.name);
      }
    }
  }
  return names;
}

/**
 * A path whose percent-encoding does not decode (`by_name/%E0%A4%A`) is a 400 naming the path
 * parameter and the segment as sent, in the form of every other bad value. The validator would
 * answer it too, but with its own text. `paths` are the document's route templates.
 */
export function decodablePath(paths: readonly string[]): RequestHandler {
  const templates = paths.map((p) => p.split('/'));
  return (req, _res, next) => {
    if (!req.path.includes('%')) {
      next();
      return;
    }
    const segments = req.path.split('/');
    const bad = segments.findIndex((s) => {
      try {
        decodeURIComponent(s);
        return false;
      } catch {
        return true;
      }
    });
    if (bad < 0) {
      next();
      return;
    }
    const template = templates.find(
      (t) => t.length === segments.length && t.every((part, i) => /^\{.+\}$/.test(part) || part.toLowerCase() === segments[i].toLowerCase()),
    );
    const name = template?.[bad].match(/^\{(.+)\}$/)?.[1];
    // no route, or a static part that does not decode: the 404 says so
    if (name === undefined) {
      next();
      return;
    }
    next(invalidValue(name, segments[bad], 'malformed percent-encoding'));
  };
}
