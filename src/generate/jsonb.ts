/**
 * PostgreSQL jsonb re-orders object keys by UTF-8 byte length, then bytewise, at every level
 * (docs/api-contract.md#jsonb-key-order). The dump stores `tx` and `events` as the API serves them, so they are
 * written in that order. Everything else (escaping, number text) matches JSON.stringify.
 */

interface KeyInfo {
  key: string;
  bytes: Buffer;
  quoted: string;
}

/** Keys come from a small vocabulary, so their encodings are memoized (bounded). */
const keyInfo = new Map<string, KeyInfo>();

function info(key: string): KeyInfo {
  let k = keyInfo.get(key);
  if (!k) {
    k = { key, bytes: Buffer.from(key, 'utf8'), quoted: JSON.stringify(key) };
    if (keyInfo.size < 10_000) keyInfo.set(key, k);
  }
  return k;
}

function compareKeys(a: KeyInfo, b: KeyInfo): number {
  if (a.bytes.length !== b.bytes.length) return a.bytes.length - b.bytes.length;
  return Buffer.compare(a.bytes, b.bytes);
}

function sortedKeys(obj: object): KeyInfo[] {
  const keys = Object.keys(obj).map(info);
  // Insertion sort: objects here have a handful of keys.
  for (let i = 1; i < keys.length; i++) {
    const k = keys[i];
    let j = i - 1;
    while (j >= 0 && compareKeys(keys[j], k) > 0) {
      keys[j + 1] = keys[j];
      j--;
    }
    keys[j + 1] = k;
  }
  return keys;
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
    const v = rec[k.key];
    if (v === undefined) continue;
    if (!first) out += ',';
    first = false;
    out += k.quoted + ':' + jsonbStringify(v);
  }
  return out + '}';
}
