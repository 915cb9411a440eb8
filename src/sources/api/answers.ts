/**
 * The API's answers as the crawl reads them: JSON bodies, lists with their pagination (`next_key`,
 * `total`), cursor keys, the few facts of a served tx the crawl needs, and the page URLs.
 */
import { rawMembers } from '../../lib/raw-json';
import type { StatusExtension } from '../../wire/status';
import { HttpError } from '../http';
import { rawElements } from '../raw';

export const PAGE = 1000;

export const key = (fields: Record<string, number>): string => encodeURIComponent(Buffer.from(JSON.stringify(fields)).toString('base64'));

export interface Status extends Partial<Record<StatusExtension, unknown>> {
  chain_id: string;
  height: number;
  version?: string;
  commit_hash?: string;
  rich_list_height?: number;
  internal_tx_height?: number;
}

export function parseJson<T>(url: string, text: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (e) {
    throw new HttpError(url, 200, `GET ${url}: not JSON: ${(e as Error).message}`);
  }
}

export function members(url: string, text: string, name: string): { items: string[]; nextKey: string | null; total: number | undefined } {
  const m = rawMembers(text);
  const items = m.get(name);
  const pag = m.get('pagination');
  if (items === undefined || pag === undefined) throw new HttpError(url, 200, `GET ${url}: expected {"${name}": [...], "pagination": {...}}`);
  const p = parseJson<{ next_key?: string | null; total?: string }>(url, pag);
  const total = p.total !== undefined && /^\d+$/.test(p.total) ? Number(p.total) : undefined;
  return { items: rawElements(items), nextKey: p.next_key ?? null, total };
}

export function cursorValue(nextKey: string | null, field: string): number | undefined {
  if (!nextKey) return undefined;
  try {
    const v = (JSON.parse(Buffer.from(nextKey, 'base64').toString('utf8')) as Record<string, unknown>)[field];
    return typeof v === 'number' && Number.isSafeInteger(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** What the tx crawl reads of a served tx: its height, hash and (the block's exact) time. */
export interface TxFacts {
  height: number;
  hash: string;
  timestamp: unknown;
}

/** The members of a served tx the crawl reads (txFacts), in that order. */
export const TX_FACTS = ['height', 'txhash', 'timestamp'];

/** What the tx crawl reads of a served tx, from the texts of its members TX_FACTS (./scan.ts byteList). */
export function txFacts(url: string, [height, hash, timestamp]: readonly (string | undefined)[]): TxFacts {
  return {
    height: Number(parseJson<string>(url, height ?? '""')),
    hash: parseJson<string>(url, hash ?? '""').toUpperCase(),
    timestamp: parseJson<unknown>(url, timestamp ?? 'null'),
  };
}

/** A page of a list crawled by next_key. */
export function listUrl(path: string, limit: number, nextKey: string | null): string {
  return `${path}${path.includes('?') ? '&' : '?'}pagination.limit=${limit}${nextKey === null ? '' : `&pagination.key=${encodeURIComponent(nextKey)}`}`;
}
