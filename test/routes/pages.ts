/**
 * List-response helpers: query strings as clients build them, the pagination object's invariants
 * (API-CONTRACT §3), and walking a list by `next_key` or by `pagination.offset`.
 */
import { expect } from 'chai';
import type { TestApp } from '../helpers/app';

export interface Pagination { previous_key: string | null; next_key: string | null; total: string }
export type ListBody = Record<string, unknown> & { pagination: Pagination };

export type QueryValue = string | number | boolean | undefined | readonly string[];

/** `a=1&b=x` with values percent-encoded as axios / ky do (dots in names left as they are). */
export function qs(params: Record<string, QueryValue>): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) parts.push(`${k}=${encodeURIComponent(String(one))}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

/** base64 of a rollytics-style key (decimal offset or JSON object). */
export function rollyticsKey(value: string | Record<string, unknown>): string {
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64');
}

/** The empty answer for unknown accounts, heights without txs, … (API-CONTRACT §4). */
export function emptyList(itemsKey: string): ListBody {
  return { [itemsKey]: [], pagination: { previous_key: null, next_key: null, total: '0' } } as ListBody;
}

/** GET a list and check what every list response must be, whatever its content. */
export async function getList(t: TestApp, path: string, itemsKey: string): Promise<ListBody> {
  const res = await t.api.get(path);
  expect(res.status, `${path}: ${res.text}`).to.equal(200);
  expect(res.headers['content-type']).to.match(/^application\/json/);
  const body = res.body as ListBody;
  expect(Object.keys(body), path).to.deep.equal([itemsKey, 'pagination']);
  expect(body[itemsKey], path).to.be.an('array');
  expect(Object.keys(body.pagination), path).to.deep.equal(['previous_key', 'next_key', 'total']);
  expect(body.pagination.total, path).to.match(/^(0|[1-9][0-9]*)$/);
  if ((body[itemsKey] as unknown[]).length === 0) expect(body.pagination.next_key, `${path}: an empty page carries no key`).to.equal(null);
  if (body.pagination.next_key !== null) {
    expect(body.pagination.next_key, path).to.match(/^[A-Za-z0-9+/_-]+=*$/);
  }
  return body;
}

export interface WalkSpec {
  /** the route without query, e.g. `/indexer/tx/v1/txs` */
  path: string;
  itemsKey: string;
  /** filters sent on every request (msgs, collection_addr, order_by, …) */
  filters?: Record<string, QueryValue>;
  limit: number;
  reverse: boolean;
  /** the number of rows the filters match: every page's `total` */
  total: number;
  /** start at this offset (page 1 only) instead of the first row */
  startOffset?: number;
}

/**
 * Follows `next_key` until it is null, sending only the key plus limit / reverse / filters, as a
 * client does. Checks on the way: `total` on every page, no page over the limit, a key only when
 * the next page is non-empty, never the same key twice, a bounded number of pages.
 */
export async function walkKeys(t: TestApp, spec: WalkSpec): Promise<unknown[]> {
  const base = { ...spec.filters, 'pagination.limit': spec.limit, 'pagination.reverse': spec.reverse };
  const remaining = spec.total - (spec.startOffset ?? 0);
  const maxPages = Math.ceil(Math.max(remaining, 0) / spec.limit) + 1;
  const seenKeys = new Set<string>();
  const items: unknown[] = [];
  let key: string | undefined;
  for (let pageNo = 1; ; pageNo++) {
    expect(pageNo, `${spec.path}: more pages than rows`).to.be.at.most(maxPages);
    const params = key === undefined
      ? { ...base, 'pagination.offset': spec.startOffset }
      : { ...base, 'pagination.key': key };
    const url = spec.path + qs(params);
    const body = await getList(t, url, spec.itemsKey);
    const page = body[spec.itemsKey] as unknown[];
    expect(body.pagination.total, url).to.equal(String(spec.total));
    expect(page.length, url).to.be.at.most(spec.limit);
    if (key !== undefined) expect(page.length, `${url}: a next_key led to an empty page`).to.be.greaterThan(0);
    items.push(...page);
    const next = body.pagination.next_key;
    if (next === null) break;
    expect(seenKeys.has(next), `${url}: next_key repeated`).to.equal(false);
    seenKeys.add(next);
    key = next;
  }
  return items;
}

/**
 * Offset paging (`pagination.offset` alone, as the explorer pages the rich list): every page of
 * `limit` rows from 0 to the end. next_key must be null exactly on the last page.
 */
export async function walkOffsets(t: TestApp, spec: WalkSpec): Promise<unknown[]> {
  const items: unknown[] = [];
  for (let offset = spec.startOffset ?? 0; ; offset += spec.limit) {
    const url = spec.path + qs({ ...spec.filters, 'pagination.limit': spec.limit, 'pagination.reverse': spec.reverse, 'pagination.offset': offset });
    const body = await getList(t, url, spec.itemsKey);
    const page = body[spec.itemsKey] as unknown[];
    expect(body.pagination.total, url).to.equal(String(spec.total));
    expect(page.length, url).to.equal(Math.max(0, Math.min(spec.limit, spec.total - offset)));
    items.push(...page);
    const last = offset + spec.limit >= spec.total;
    expect(body.pagination.next_key === null, `${url}: next_key ${body.pagination.next_key}`).to.equal(last);
    if (last) break;
  }
  return items;
}
