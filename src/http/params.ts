import type { Request, RequestHandler } from 'express';
import { AddressError, canonicalAddress } from '../lib/address';
import { invalidValue } from './errors';
import { rawQueryValues } from './url';
import { PageRequest, PaginationQuery, parsePageRequest } from '../snapshot/pagination';

/**
 * Typed access to validated request input. express-openapi-validator has already checked and
 * coerced types (openapi.yaml); what remains is the domain parsing rollytics does: addresses,
 * hashes, msgs lists. Path parameters come from req.openapi.pathParams, decoded exactly once.
 */

interface OpenApiRequest { openapi?: { pathParams?: Record<string, unknown> } }

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

/** An integer path parameter, checked against the raw segment (decoded once). */
export function pathInt(req: Request, name: string): number {
  return strictInt(name, String(req.params[name]));
}

export function query<T>(req: Request, name: string): T | undefined {
  return (req.query as Record<string, unknown>)[name] as T | undefined;
}

export function page(req: Request): PageRequest {
  for (const name of ['pagination.limit', 'pagination.offset']) {
    for (const raw of rawQueryValues(req.originalUrl, name)) strictInt(name, raw);
  }
  return parsePageRequest(req.query as PaginationQuery);
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

/** Tx hash: hex, either case, with or without 0x (docs/api-contract.md#other-parameters). */
export function txHash(value: string): Buffer {
  const hex = value.replace(/^0[xX]/, '');
  if (!/^[0-9a-fA-F]*$/.test(hex) || hex.length === 0) {
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
  try { decoded = decodeURIComponent(v); } catch { /* not an escape sequence: exact match only */ }
  return [v, decoded];
}

/**
 * Booleans as rollytics reads them (Go's strconv.ParseBool): `1 t T TRUE true True` and
 * `0 f F FALSE false False`. Each boolean query parameter of the contract holding one of these
 * is rewritten to `true` / `false` before validation; anything else reaches the validator as
 * sent and is a 400 naming the parameter.
 */
const GO_BOOL: Record<string, 'true' | 'false'> = {
  1: 'true', t: 'true', T: 'true', TRUE: 'true', true: 'true', True: 'true',
  0: 'false', f: 'false', F: 'false', FALSE: 'false', false: 'false', False: 'false',
};

export function goBooleans(names: ReadonlySet<string>): RequestHandler {
  return (req, _res, next) => {
    const q = req.query as Record<string, unknown>;
    for (const name in q) {
      const v = q[name];
      if (typeof v === 'string' && names.has(name) && Object.hasOwn(GO_BOOL, v)) q[name] = GO_BOOL[v];
    }
    next();
  };
}

/** The names of the query parameters declared `type: boolean` anywhere in a document without $refs. */
export function booleanQueryParameters(doc: Record<string, unknown>): Set<string> {
  const names = new Set<string>();
  for (const item of Object.values((doc.paths ?? {}) as Record<string, Record<string, unknown>>)) {
    for (const op of [item, ...Object.values(item)]) {
      const params = (op as { parameters?: unknown } | null)?.parameters;
      if (!Array.isArray(params)) continue;
      for (const p of params as { in?: string; name?: string; schema?: { type?: string } }[]) {
        if (p.in === 'query' && p.schema?.type === 'boolean' && p.name) names.add(p.name);
      }
    }
  }
  return names;
}
