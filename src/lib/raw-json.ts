/**
 * Raw JSON text helpers. Stored `tx`, `logs` and `events` fragments are kept byte-for-byte as
 * the dump gives them (only insignificant whitespace removed), so nothing is lost to a
 * JSON.parse/stringify round trip (number text, key order of integer-like keys, escapes).
 */

/** Removes whitespace outside strings; the text must already be valid JSON. */
export function compactJson(text: string): string {
  if (!/[\s]/.test(text)) return text;
  let out = '';
  let inString = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
      out += text.slice(start, i);
      start = i + 1;
    }
  }
  return out + text.slice(start);
}

/**
 * Returns the raw text of each member of the top-level JSON object in `text` (which must be
 * valid JSON, e.g. already checked by JSON.parse). Later duplicates win, as in JSON.parse.
 */
export function rawMembers(text: string): Map<string, string> {
  const members = new Map<string, string>();
  let i = text.indexOf('{') + 1;
  const n = text.length;
  const skipWs = (): void => {
    while (i < n && (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t')) i++;
  };
  const scanString = (): void => {
    i++; // opening quote
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x5c) i += 2;
      else if (c === 0x22) {
        i++;
        return;
      } else i++;
    }
  };
  const scanValue = (): void => {
    let depth = 0;
    while (i < n) {
      const ch = text[i];
      if (ch === '"') {
        scanString();
        if (depth === 0) return;
        continue;
      }
      if (ch === '{' || ch === '[') depth++;
      else if (ch === '}' || ch === ']') {
        if (depth === 0) return;
        depth--;
        if (depth === 0) {
          i++;
          return;
        }
      } else if (depth === 0 && (ch === ',' || ch === ' ' || ch === '\n' || ch === '\r' || ch === '\t')) return;
      i++;
    }
  };
  for (;;) {
    skipWs();
    if (i >= n || text[i] === '}') break;
    const keyStart = i;
    scanString();
    const key = JSON.parse(text.slice(keyStart, i)) as string;
    skipWs();
    i++; // colon
    skipWs();
    const valueStart = i;
    scanValue();
    members.set(key, text.slice(valueStart, i));
    skipWs();
    if (text[i] === ',') i++;
  }
  return members;
}
