/**
 * PostgreSQL jsonb re-orders object keys by UTF-8 byte length, then bytewise, at every level
 * (reference §5.3). The dump stores `tx` and `events` as the API serves them, so they are
 * written in that order. Everything else (escaping, number text) matches JSON.stringify.
 */

const ASCII = /^[\x00-\x7f]*$/;

function compareKeys(a: string, b: string): number {
  if (ASCII.test(a) && ASCII.test(b)) {
    if (a.length !== b.length) return a.length - b.length;
    return a < b ? -1 : a > b ? 1 : 0;
  }
  const ba = Buffer.from(a, 'utf8');
  const bb = Buffer.from(b, 'utf8');
  if (ba.length !== bb.length) return ba.length - bb.length;
  return Buffer.compare(ba, bb);
}

/** Key order is stable per key set, so sorted orders are memoized by the joined key list. */
const orderCache = new Map<string, string[]>();

function sortedKeys(obj: object): string[] {
  const keys = Object.keys(obj);
  const id = keys.join('\u0000');
  let order = orderCache.get(id);
  if (!order) {
    order = [...keys].sort(compareKeys);
    if (orderCache.size < 10000) orderCache.set(id, order);
  }
  return order;
}

export function jsonbStringify(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const s = JSON.stringify(value);
    return s === undefined ? 'null' : s;
  }
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ',';
      out += jsonbStringify(value[i]);
    }
    return out + ']';
  }
  const rec = value as Record<string, unknown>;
  let out = '{';
  let first = true;
  for (const k of sortedKeys(rec)) {
    const v = rec[k];
    if (v === undefined) continue;
    if (!first) out += ',';
    first = false;
    out += JSON.stringify(k) + ':' + jsonbStringify(v);
  }
  return out + '}';
}
