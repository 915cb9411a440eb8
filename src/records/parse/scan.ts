/**
 * Finds, in the raw bytes of one txs.ndjson record, the parts stored verbatim: the Tx object's
 * `logs`, `tx` and `events` values (src/lib/raw-json.ts explains why they are kept as given).
 * One pass over the bytes; the record must already have passed JSON.parse, so the scanner only
 * tracks strings and nesting and never has to report a syntax error.
 */

/** Byte ranges [start, end) in the record; -1 when the member is absent. */
export interface TxRanges {
  logs: number;
  logsEnd: number;
  tx: number;
  txEnd: number;
  events: number;
  eventsEnd: number;
  /** whitespace between tokens somewhere in the record: the ranges need compactJson */
  spaced: boolean;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/** What a byte means outside strings (0: nothing the scanner needs). */
const STRING = 1;
const OPEN = 2;
const CLOSE = 3;
const SPACE = 4;
const SEPARATOR = 5;
const CLASS = new Uint8Array(256);
CLASS[QUOTE] = STRING;
CLASS[OPEN_BRACE] = OPEN;
CLASS[0x5b] = OPEN;
CLASS[CLOSE_BRACE] = CLOSE;
CLASS[0x5d] = CLOSE;
for (const c of [0x20, 0x09, 0x0a, 0x0d]) CLASS[c] = SPACE;
CLASS[COMMA] = SEPARATOR;

interface Key {
  name: string;
  quoted: Uint8Array;
}
const key = (name: string): Key => ({ name, quoted: Buffer.from(`"${name}"`, 'latin1') });
const KEY_TX = key('tx');
const KEY_LOGS = key('logs');
const KEY_EVENTS = key('events');

/** Set by the functions below when they step over whitespace outside strings. */
let spaced = false;

/** Bytes of a string checked one by one before handing the rest to memchr (Buffer.indexOf). */
const SHORT_STRING = 24;

/** Index after the string whose opening quote is at i. */
function skipString(b: Buffer, i: number, end: number): number {
  let j = i + 1;
  for (const stop = Math.min(end, j + SHORT_STRING); j < stop; j++) {
    const c = b[j];
    if (c === QUOTE) return j + 1;
    if (c === BACKSLASH) j++;
  }
  // A long string (hex data, signatures, event values): jump from quote to quote; a quote
  // preceded by an odd number of backslashes is escaped.
  for (;;) {
    const q = b.indexOf(QUOTE, j);
    if (q < 0 || q >= end) return end;
    let k = q - 1;
    while (k > i && b[k] === BACKSLASH) k--;
    if ((q - 1 - k) % 2 === 0) return q + 1;
    j = q + 1;
  }
}

function skipSpace(b: Buffer, i: number, end: number): number {
  while (i < end && CLASS[b[i]] === SPACE) {
    spaced = true;
    i++;
  }
  return i;
}

/** Index after the value starting at i. */
function skipValue(b: Buffer, i: number, end: number): number {
  let depth = 0;
  for (; i < end; i++) {
    switch (CLASS[b[i]]) {
      case STRING:
        i = skipString(b, i, end) - 1;
        if (depth === 0) return i + 1;
        break;
      case OPEN:
        depth++;
        break;
      case CLOSE:
        if (depth === 0) return i; // the end of a number or literal
        if (--depth === 0) return i + 1;
        break;
      case SPACE:
        if (depth === 0) return i;
        spaced = true;
        break;
      case SEPARATOR:
        if (depth === 0) return i;
        break;
    }
  }
  return i;
}

/** Whether the key at [start, end) (quotes included) is `k`; escaped keys are decoded. */
function keyIs(b: Buffer, start: number, end: number, k: Key): boolean {
  for (let i = start + 1; i < end - 1; i++) {
    if (b[i] === BACKSLASH) return JSON.parse(Buffer.from(b.buffer, b.byteOffset + start, end - start).toString('utf8')) === k.name;
  }
  const q = k.quoted;
  if (end - start !== q.length) return false;
  for (let i = 1; i < q.length - 1; i++) if (b[start + i] !== q[i]) return false;
  return true;
}

/**
 * Walks the members of the object whose '{' is at i, calling `member` with the key's range
 * (quotes included) and the value's start; `member` returns the index after the value.
 * Returns the index after the object.
 */
function members(b: Buffer, i: number, end: number, member: (keyStart: number, keyEnd: number, value: number) => number): number {
  i++;
  for (;;) {
    i = skipSpace(b, i, end);
    if (i >= end || b[i] === CLOSE_BRACE) return i + 1;
    const keyStart = i;
    i = skipString(b, i, end);
    const keyEnd = i;
    i = skipSpace(b, i, end) + 1; // the colon
    i = member(keyStart, keyEnd, skipSpace(b, i, end));
    i = skipSpace(b, i, end);
    if (b[i] === COMMA) i++;
  }
}

/**
 * The verbatim parts of the record in b[start, end). Later duplicate keys win, as in
 * JSON.parse; undefined when the record's (last) `tx` member is not an object.
 */
export function scanTxRecord(b: Buffer, start: number, end: number): TxRanges | undefined {
  spaced = false;
  let r: TxRanges | undefined;
  const txMember = (keyStart: number, keyEnd: number, value: number): number => {
    const after = skipValue(b, value, end);
    if (r && keyIs(b, keyStart, keyEnd, KEY_LOGS)) {
      r.logs = value;
      r.logsEnd = after;
    } else if (r && keyIs(b, keyStart, keyEnd, KEY_TX)) {
      r.tx = value;
      r.txEnd = after;
    } else if (r && keyIs(b, keyStart, keyEnd, KEY_EVENTS)) {
      r.events = value;
      r.eventsEnd = after;
    }
    return after;
  };
  members(b, skipSpace(b, start, end), end, (keyStart, keyEnd, value) => {
    if (!keyIs(b, keyStart, keyEnd, KEY_TX)) return skipValue(b, value, end);
    if (b[value] !== OPEN_BRACE) {
      r = undefined;
      return skipValue(b, value, end);
    }
    r = { logs: -1, logsEnd: -1, tx: -1, txEnd: -1, events: -1, eventsEnd: -1, spaced: false };
    return members(b, value, end, txMember);
  });
  if (r) r.spaced = spaced;
  return r;
}
