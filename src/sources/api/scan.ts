/**
 * A list page read from its bytes: where each element of the list is in the body, and the few
 * members of each the crawl needs, in one pass over the body and without decoding it to a
 * string (a page of 1000 txs is ≈ 4 MB: decoding it, splitting it into member texts and the
 * elements again into theirs cost more CPU than fetching it; bench/README.md "Crawl CPU").
 * The body must be valid JSON (as ./answers.ts rawMembers assumes it to be); what it does not
 * hold is reported as by ./answers.ts members.
 */
import { HttpError } from '../http';
import { parseJson } from './answers';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function skipSpace(b: Buffer, i: number): number {
  while (i < b.length && isSpace(b[i])) i++;
  return i;
}

/** The index after the string whose opening quote is at i (the closing quote found by memchr, most bytes are in strings). */
function skipString(b: Buffer, i: number): number {
  for (let j = i + 1; ;) {
    const q = b.indexOf(QUOTE, j);
    if (q < 0) return b.length;
    // escaped when an odd number of backslashes stands before it
    let k = q - 1;
    while (k > i && b[k] === BACKSLASH) k--;
    if ((q - 1 - k) % 2 === 0) return q + 1;
    j = q + 1;
  }
}

/** The index after the value that starts at i (not whitespace). */
function skipValue(b: Buffer, i: number): number {
  const n = b.length;
  const c = b[i];
  if (c === QUOTE) return skipString(b, i);
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
    let depth = 0;
    for (let j = i; j < n; j++) {
      const d = b[j];
      if (d === QUOTE) j = skipString(b, j) - 1;
      else if (d === OPEN_OBJECT || d === OPEN_ARRAY) depth++;
      else if (d === CLOSE_OBJECT || d === CLOSE_ARRAY) {
        if (--depth === 0) return j + 1;
      }
    }
    return n;
  }
  let j = i;
  while (j < n) {
    const d = b[j];
    if (d === COMMA || d === CLOSE_OBJECT || d === CLOSE_ARRAY || isSpace(d)) break;
    j++;
  }
  return j;
}

/** Which of `names` the key b[start, end) (its quotes included) is, or -1. */
function keyIndex(b: Buffer, start: number, end: number, names: readonly Buffer[], texts: readonly string[]): number {
  const len = end - start - 2;
  for (let k = 0; k < names.length; k++) {
    const name = names[k];
    if (name.length !== len) continue;
    let same = true;
    for (let j = 0; j < len; j++) {
      if (b[start + 1 + j] !== name[j]) {
        same = false;
        break;
      }
    }
    if (same) return k;
  }
  // a key with escapes: compared as the text it stands for
  if (b.indexOf(BACKSLASH, start) < end) return texts.indexOf(JSON.parse(b.toString('utf8', start, end)) as string);
  return -1;
}

/**
 * The members of the object at `i` named `names`: their values' [start, end) into `at` (a pair
 * per name; -1 where absent; later duplicates win). Returns the index after the object.
 */
function objectMembers(b: Buffer, i: number, names: readonly Buffer[], texts: readonly string[], at: Int32Array): number {
  at.fill(-1);
  const n = b.length;
  i++; // {
  for (;;) {
    i = skipSpace(b, i);
    if (i >= n) return n;
    if (b[i] === CLOSE_OBJECT) return i + 1;
    const keyStart = i;
    i = skipString(b, i);
    const k = keyIndex(b, keyStart, i, names, texts);
    i = skipSpace(b, i);
    if (b[i] === COLON) i++;
    i = skipSpace(b, i);
    const valueStart = i;
    i = skipValue(b, i);
    if (k >= 0) {
      at[2 * k] = valueStart;
      at[2 * k + 1] = i;
    }
    i = skipSpace(b, i);
    if (b[i] === COMMA) i++;
  }
}

/** A list page's elements: each one's bytes [start, end) in `body`, and the texts of the members asked for. */
export interface ByteList {
  body: Buffer;
  items: { start: number; end: number; fields: (string | undefined)[] }[];
  nextKey: string | null;
  total: number | undefined;
}

/**
 * The `name` array of the JSON object `body` and its pagination (as ./answers.ts members), each
 * element with the raw texts of its top-level members `fields` (undefined where it has none, or
 * is not an object).
 */
export function byteList(url: string, body: Buffer, name: string, fields: readonly string[]): ByteList {
  const want = [name, 'pagination'].map((s) => Buffer.from(s, 'utf8'));
  const fieldNames = fields.map((s) => Buffer.from(s, 'utf8'));
  const top = new Int32Array(4);
  const at = new Int32Array(2 * fields.length);
  let i = skipSpace(body, 0);
  if (body[i] !== OPEN_OBJECT) throw new HttpError(url, 200, `GET ${url}: expected {"${name}": [...], "pagination": {...}}`);
  objectMembers(body, i, want, [name, 'pagination'], top);
  if (top[0] < 0 || top[2] < 0) throw new HttpError(url, 200, `GET ${url}: expected {"${name}": [...], "pagination": {...}}`);
  const p = parseJson<{ next_key?: string | null; total?: string }>(url, body.toString('utf8', top[2], top[3]));
  const items: ByteList['items'] = [];
  const end = top[1];
  i = top[0];
  if (body[i] === OPEN_ARRAY) {
    i++;
    for (;;) {
      i = skipSpace(body, i);
      if (i >= end || body[i] === CLOSE_ARRAY) break;
      const start = i;
      if (body[i] === OPEN_OBJECT) {
        i = objectMembers(body, i, fieldNames, fields, at);
        const texts: (string | undefined)[] = [];
        for (let k = 0; k < fields.length; k++) texts.push(at[2 * k] < 0 ? undefined : body.toString('utf8', at[2 * k], at[2 * k + 1]));
        items.push({ start, end: i, fields: texts });
      } else {
        i = skipValue(body, i);
        items.push({ start, end: i, fields: fields.map(() => undefined) });
      }
      i = skipSpace(body, i);
      if (body[i] === COMMA) i++;
    }
  }
  const total = p.total !== undefined && /^\d+$/.test(p.total) ? Number(p.total) : undefined;
  return { body, items, nextKey: p.next_key ?? null, total };
}
