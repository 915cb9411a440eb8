import { invalidValue } from '../lib/api-errors';
import { DeflateBody, isPackedRow, JsonBody } from '../wire/packed';

/**
 * Pagination per docs/api-contract.md#pagination. Parameter defaults match rollytics
 * `util/common-handler/common/pagination.go`: limit 100 (1..1000), count_total true, reverse true.
 */

const DEFAULT_LIMIT = 100;

export type KeyValue = number | string;

/** A decoded `pagination.key`: a decimal offset (rollytics) or a JSON cursor object. */
export type PageKey = { kind: 'offset'; offset: number } | { kind: 'cursor'; fields: Record<string, unknown> };

export interface PageRequest {
  limit: number;
  offset: number;
  reverse: boolean;
  countTotal: boolean;
  key?: PageKey;
}

export interface PaginationQuery {
  'pagination.key'?: string;
  'pagination.offset'?: number;
  'pagination.limit'?: number;
  'pagination.count_total'?: boolean;
  'pagination.reverse'?: boolean;
}

/** Reads the (validator-coerced) pagination parameters; the key is decoded here. */
export function parsePageRequest(q: PaginationQuery): PageRequest {
  const page: PageRequest = {
    limit: q['pagination.limit'] ?? DEFAULT_LIMIT,
    offset: q['pagination.offset'] ?? 0,
    reverse: q['pagination.reverse'] ?? true,
    countTotal: q['pagination.count_total'] ?? true,
  };
  const key = q['pagination.key'];
  if (key !== undefined && key !== '') {
    page.key = decodeKey(key);
    if (page.key.kind === 'offset') page.offset = page.key.offset;
  }
  return page;
}

const BASE64 = /^[A-Za-z0-9+/\-_]*={0,2}$/;

/**
 * Accepts our keys and rollytics' (docs/api-contract.md#accepted-keys): standard base64 (URL-safe and unpadded
 * tolerated; a `+` that arrived as a space is restored) of a decimal offset or a JSON object.
 */
function decodeKey(raw: string): PageKey {
  const b64 = raw.replace(/ /g, '+');
  if (!BASE64.test(b64)) throw invalidValue('pagination.key', raw, 'must be a base64 string');
  const text = Buffer.from(b64.replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('utf8').trim();
  if (text.startsWith('{')) {
    let fields: unknown;
    try {
      fields = JSON.parse(text);
    } catch {
      throw invalidValue('pagination.key', raw, 'not a valid key');
    }
    if (!fields || typeof fields !== 'object' || Array.isArray(fields)) {
      throw invalidValue('pagination.key', raw, 'not a valid key');
    }
    return { kind: 'cursor', fields: fields as Record<string, unknown> };
  }
  if (/^[0-9]{1,15}$/.test(text)) return { kind: 'offset', offset: Number(text) };
  throw invalidValue('pagination.key', raw, 'must decode to a JSON cursor or a non-negative integer');
}

/** Our keys: base64 of compact JSON with keys sorted, like rollytics' Go map encoding. */
export function encodeKey(fields: Record<string, KeyValue>): string {
  const sorted: Record<string, KeyValue> = {};
  for (const k of Object.keys(fields).sort()) sorted[k] = fields[k];
  return Buffer.from(JSON.stringify(sorted), 'utf8').toString('base64');
}

/** previous_key as rollytics' offset-style builder: only when offset ≥ limit (docs/api-contract.md#previous-key). */
export function previousKey(page: PageRequest): string | null {
  if (page.key?.kind === 'cursor') return null;
  if (page.offset > 0 && page.offset >= page.limit) return Buffer.from(String(page.offset - page.limit)).toString('base64');
  return null;
}

export function paginationJson(previous: string | null, next: string | null, total: number | bigint): string {
  return (
    '{"previous_key":' +
    (previous === null ? 'null' : '"' + previous + '"') +
    ',"next_key":' +
    (next === null ? 'null' : '"' + next + '"') +
    ',"total":"' +
    String(total) +
    '"}'
  );
}

/** One page of a list: pre-rendered item JSON (UTF-8, as stored) plus the pagination object. */
export interface Page {
  /** packed rows (wire format 2) or JSON text (wire format 1, or rendered: see `rendered`) */
  items: Buffer[];
  pagination: string;
  /** items are JSON text rendered from columns of a wire-format-2 file (holders): sent as a DeflateBody of stored blocks */
  rendered?: boolean;
}

const COMMA = Buffer.from(',');

/**
 * `{"<itemsKey>":[item,…],"pagination":{…}}`. Packed rows (wire format 2, src/wire/packed.ts)
 * make a DeflateBody: the rows' compressed bytes as stored, the glue between them as text.
 * Rows of a wire-format-1 snapshot are the JSON text: one Buffer, the items copied once —
 * never decoded to a JS string and encoded back.
 */
export function listResponse(itemsKey: string, page: Page): JsonBody {
  const items = page.items;
  if (page.rendered === true || (items.length > 0 && isPackedRow(items[0]))) {
    const body = new DeflateBody().text('{"' + itemsKey + '":[');
    for (let i = 0; i < items.length; i++) {
      if (i > 0) body.text(',');
      if (isPackedRow(items[i])) body.row(items[i]);
      else body.bytes(items[i]);
    }
    return body.text('],"pagination":' + page.pagination + '}');
  }
  const parts: Buffer[] = new Array<Buffer>(items.length ? 2 * items.length + 1 : 2);
  parts[0] = Buffer.from('{"' + itemsKey + '":[');
  let n = 1;
  for (let i = 0; i < items.length; i++) {
    if (i > 0) parts[n++] = COMMA;
    parts[n++] = items[i];
  }
  parts[n++] = Buffer.from('],"pagination":' + page.pagination + '}');
  parts.length = n;
  return Buffer.concat(parts);
}

/** The empty answer for unknown accounts and the like: 200, [], next_key null, total "0". */
export function emptyPage(page: PageRequest): Page {
  return { items: [], pagination: paginationJson(previousKey(page), null, 0) };
}
