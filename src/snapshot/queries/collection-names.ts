import type Database from 'better-sqlite3';

/**
 * collections/by_name's substring search (docs/api-contract.md#collection-name-search), without
 * a scan of the collections per request. SQL cannot index "contains": `instr()` over every row
 * read each collection's row (a B-tree probe per collection: ~20 µs each on the development box,
 * 2.2 s at 100,000 collections). Instead, at the first by_name request on a snapshot, the
 * normalized names are read once into memory with a posting list per 3-character piece (UTF-16
 * code units, hashed: see pieceKey) of any name: which collections contain it, in (height,
 * address) order.
 *
 * A query of 3 characters or more is answered from the posting list of its rarest piece, each
 * collection on it tested for the whole query: the cost is the number of collections that
 * contain that piece, never all of them, and a piece no collection contains answers at once.
 * A query of 1 or 2 characters tests every collection's names in memory (no piece to look up;
 * ~0.1 µs each, bench/README.md), and an empty normalized query matches every collection, as
 * in rollytics: that is the unfiltered list.
 *
 * Answers are those of the SQL it replaces: a collection matches when the query is a substring
 * of its normalized name or normalized origin name (every piece of a substring is a piece of
 * the string, so the posting list holds every match). Nothing is stored in the snapshot; the
 * memory is measured in bench/README.md ("collections/by_name").
 */
export class CollectionNames {
  private constructor(
    /** (height, addr) ascending, as the list's order */
    readonly heights: Float64Array,
    readonly addrs: Buffer[],
    private readonly names: string[],
    private readonly origins: string[],
    private readonly pieces: Map<number, Int32Array>,
    private readonly all: Int32Array,
  ) {}

  static load(db: Database.Database): CollectionNames {
    const rows = db.prepare('SELECT height, addr, norm_name, norm_origin_name FROM collections').raw().all() as [number, Buffer, string, string][];
    rows.sort((a, b) => a[0] - b[0] || Buffer.compare(a[1], b[1]));
    const lists = new Map<number, number[]>();
    rows.forEach(([, , name, origin], i) => {
      for (const text of name === origin ? [name] : [name, origin]) {
        for (let at = 0; at + 3 <= text.length; at++) {
          const piece = pieceKey(text, at);
          const list = lists.get(piece);
          // entries come in ascending order: a list ends with i if this entry has the piece already
          if (!list) lists.set(piece, [i]);
          else if (list[list.length - 1] !== i) list.push(i);
        }
      }
    });
    const pieces = new Map<number, Int32Array>();
    for (const [k, v] of lists) pieces.set(k, Int32Array.from(v));
    return new CollectionNames(
      Float64Array.from(rows, (r) => r[0]),
      rows.map((r) => r[1]),
      rows.map((r) => r[2]),
      rows.map((r) => r[3]),
      pieces,
      Int32Array.from(rows, (_r, i) => i),
    );
  }

  get size(): number {
    return this.all.length;
  }

  /** The entries matching the normalized query `q`, ascending. */
  matches(q: string): Int32Array {
    if (q.length === 0) return this.all;
    let candidates = this.all;
    if (q.length >= 3) {
      for (let at = 0; at + 3 <= q.length; at++) {
        const list = this.pieces.get(pieceKey(q, at));
        if (!list) return new Int32Array(0);
        if (list.length < candidates.length) candidates = list;
      }
    }
    const out: number[] = [];
    const { names, origins } = this;
    for (let k = 0; k < candidates.length; k++) {
      const i = candidates[k];
      if (names[i].includes(q) || origins[i].includes(q)) out.push(i);
    }
    return Int32Array.from(out);
  }

  /** Compares entry i's (height, addr) with a key prefix: [height] or [height, addr]. */
  compare(i: number, key: unknown[]): number {
    const h = this.heights[i] - (key[0] as number);
    if (h !== 0 || key.length < 2) return Math.sign(h);
    return Buffer.compare(this.addrs[i], key[1] as Buffer);
  }

  /** Bytes of memory held, roughly: the posting lists, the strings and the addresses. */
  approximateBytes(): number {
    let bytes = this.all.byteLength + this.heights.byteLength;
    for (const v of this.pieces.values()) bytes += v.byteLength + 64;
    for (let i = 0; i < this.all.length; i++) bytes += 2 * (this.names[i].length + this.origins[i].length) + this.addrs[i].length + 64;
    return bytes;
  }
}

/**
 * The 3 UTF-16 code units of `text` at `at`, 10 bits of each, as one small integer: a Map key
 * several times cheaper to build with than a string or a 48-bit number. Pieces whose characters
 * differ only above those 10 bits (beyond Latin) share a list: a list may hold collections
 * without the piece, never miss one, and every candidate is tested for the whole query.
 */
function pieceKey(text: string, at: number): number {
  return ((text.charCodeAt(at) & 1023) << 20) | ((text.charCodeAt(at + 1) & 1023) << 10) | (text.charCodeAt(at + 2) & 1023);
}
