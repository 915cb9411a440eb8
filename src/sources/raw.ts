/**
 * Splits the raw text of a JSON array into the raw texts of its elements, so crawled objects
 * (txs with their `tx` / `events` fragments) are kept byte-for-byte: no JSON.parse round trip
 * that would lose big numbers, number spelling or escapes. The text must be valid JSON.
 */
export function rawElements(arrayText: string): string[] {
  const out: string[] = [];
  const n = arrayText.length;
  let i = arrayText.indexOf('[') + 1;
  let depth = 0;
  let start = -1;
  for (; i < n; i++) {
    const c = arrayText.charCodeAt(i);
    if (c === 0x22) {
      // string
      if (start < 0) start = i;
      i++;
      while (i < n) {
        const d = arrayText.charCodeAt(i);
        if (d === 0x5c) i += 2;
        else if (d === 0x22) break;
        else i++;
      }
      continue;
    }
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
    if (c === 0x7b || c === 0x5b) {
      // { [
      if (start < 0) start = i;
      depth++;
    } else if (c === 0x7d || c === 0x5d) {
      // } ]
      if (depth === 0) {
        // end of the array
        if (start >= 0) out.push(arrayText.slice(start, i).trimEnd());
        return out;
      }
      depth--;
    } else if (c === 0x2c && depth === 0) {
      // ,
      out.push(arrayText.slice(start, i).trimEnd());
      start = -1;
    } else if (start < 0) {
      start = i;
    }
  }
  return out;
}
