import { randomBytes } from 'node:crypto';

/**
 * The response cache's key table (docs/response-cache.md#validators): one slot per key the cache
 * knows — a chain's part, a normalized URL and a representation (gzip or identity) — holding the
 * answer's **validator** (the ETag sent, the change-record tags the answer read, the change
 * sequence of the state it was computed on), the key's request count (body admission) and CLOCK
 * bit, and the id of its body when one is held (src/cache/store.ts keeps the bodies).
 *
 * Struct of arrays, open addressing with linear probing and backward-shift deletion: no JS object
 * and no string per key, so a validator costs SLOT_BYTES ÷ load (≈ 85 bytes) of memory the
 * garbage collector never walks, and a population of a hundred thousand polling wallets fits in
 * a few MiB. A key is known by a 64-bit hash of its text, seeded per process (a client cannot aim
 * at a collision); two keys colliding would share a slot, which can only answer a 304 to a client
 * holding the exact ETag that slot stores (see store.ts).
 */

/** Change-record tags kept per slot; an answer that read more is kept as reading everything (WILD). */
export const MAX_TAGS = 4;
/** SHA-1 digest bytes of an ETag (src/http/etag.ts etagOf: 27 base64url characters) */
export const DIGEST_BYTES = 20;

/** flags: the number of tags (bits 0-2), and these */
export const WILD = 8;
export const GZ = 16;
const USED = 32;
const TAG_COUNT = 7;

/** bytes of one slot over every array (the validator budget divides by it) */
export const SLOT_BYTES = 4 + 4 + 2 + 4 + 1 + 4 * MAX_TAGS + DIGEST_BYTES + 1 + 2 + 1 + 4;
/** the table grows (or evicts, at its cap) past this share of its slots in use */
const MAX_LOAD = 0.8;
const MIN_SLOTS = 1024;

/**
 * A seeded 64-bit hash of a key's text (two 32-bit lanes), `salt` mixing in what the text does
 * not say (the part and the representation). One pass over the characters; no allocation.
 */
export class KeyHasher {
  private readonly seedA: number;
  private readonly seedB: number;
  /** the second lane of the last hash() */
  h2 = 0;

  constructor(seed: Buffer = randomBytes(8)) {
    this.seedA = seed.readUInt32LE(0);
    this.seedB = seed.readUInt32LE(4);
  }

  /** The first lane of the hash of `text` (never 0: 0 marks an empty slot); the second is left in h2. */
  hash(text: string, salt: number): number {
    let a = this.seedA ^ salt;
    let b = Math.imul(this.seedB ^ salt, 0x9e3779b1);
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul((b ^ c) + (b >>> 15), 0x85ebca6b);
    }
    this.h2 = fmix(b ^ text.length) >>> 0;
    return fmix(a) >>> 0 || 1;
  }
}

/** MurmurHash3's finalizer: every input bit moves every output bit. */
function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** A 32-bit hash of a change-record tag (FNV-1a): which version bucket of its part it bumps. */
export function tagHash(tag: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < tag.length; i++) h = Math.imul(h ^ tag.charCodeAt(i), 0x01000193);
  return fmix(h) >>> 0;
}

/**
 * The slots. Capacity grows by doubling from MIN_SLOTS up to `maxSlots` (the validator budget ÷
 * SLOT_BYTES); at the cap, inserting a new key first evicts one in CLOCK order (`evictOne`,
 * which the owner supplies: it knows which slots are stale and frees their bodies).
 */
export class KeyTable {
  cap = 0;
  count = 0;
  h1 = new Uint32Array(0);
  h2 = new Uint32Array(0);
  part = new Uint16Array(0);
  asOf = new Uint32Array(0);
  flags = new Uint8Array(0);
  tags = new Uint32Array(0);
  digest = new Uint8Array(0);
  freq = new Uint8Array(0);
  route = new Uint16Array(0);
  tpl = new Uint8Array(0);
  body = new Int32Array(0);
  /** the CLOCK hand: the next slot evictOne looks at */
  hand = 0;

  constructor(readonly maxSlots: number) {
    if (maxSlots > 0) this.resize(Math.min(MIN_SLOTS, maxSlots));
  }

  /** bytes the arrays hold */
  get bytes(): number {
    return this.cap * SLOT_BYTES;
  }

  /** The slot of the key, or -1. */
  find(h1: number, h2: number, part: number): number {
    const { cap } = this;
    if (cap === 0) return -1;
    let i = h1 % cap;
    for (;;) {
      const k = this.h1[i];
      if (k === 0) return -1;
      if (k === h1 && this.h2[i] === h2 && this.part[i] === part) return i;
      if (++i === cap) i = 0;
    }
  }

  /**
   * The slot of the key, made (empty: no tags, no digest, no body) when absent — after growing the
   * table, or at its cap evicting one slot (`evict` returns the slot it chose; the owner frees it
   * with remove). -1 when the table holds nothing (a budget of 0).
   */
  slot(h1: number, h2: number, part: number, evict: () => void): number {
    const found = this.find(h1, h2, part);
    if (found >= 0) return found;
    if (this.maxSlots === 0) return -1;
    if (this.count + 1 > this.cap * MAX_LOAD) {
      if (this.cap < this.maxSlots) this.resize(Math.min(this.cap * 2, this.maxSlots));
      else {
        const before = this.count;
        evict();
        if (this.count >= before) return -1;
      }
    }
    let i = h1 % this.cap;
    while (this.h1[i] !== 0) if (++i === this.cap) i = 0;
    this.h1[i] = h1;
    this.h2[i] = h2;
    this.part[i] = part;
    this.asOf[i] = 0;
    this.flags[i] = 0;
    this.freq[i] = 0;
    this.route[i] = 0;
    this.tpl[i] = 0;
    this.body[i] = -1;
    this.count++;
    return i;
  }

  /** Empties slot `i` (its body, if any, is the owner's to free first). */
  remove(i: number): void {
    const { cap } = this;
    this.count--;
    // backward-shift deletion: pull later keys of the same probe run into the hole
    let hole = i;
    let j = i;
    for (;;) {
      if (++j === cap) j = 0;
      const k = this.h1[j];
      if (k === 0) break;
      const home = k % cap;
      // j's key may move into the hole when its home is not in (hole, j] (cyclically)
      const between = hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (between) continue;
      this.move(j, hole);
      hole = j;
    }
    this.h1[hole] = 0;
    this.body[hole] = -1;
  }

  usedBit(i: number): boolean {
    return (this.flags[i] & USED) !== 0;
  }
  setUsed(i: number): void {
    this.flags[i] |= USED;
  }
  clearUsed(i: number): void {
    this.flags[i] &= ~USED;
  }
  tagCount(i: number): number {
    return this.flags[i] & TAG_COUNT;
  }

  /** Counts a request for slot `i` (saturating at 255; halved by age()). */
  touch(i: number): void {
    this.flags[i] |= USED;
    if (this.freq[i] < 255) this.freq[i]++;
  }

  /** Halves every request count: counts measure recent demand (TinyLFU's reset). */
  age(): void {
    const f = this.freq;
    for (let i = 0; i < f.length; i++) f[i] >>>= 1;
  }

  /** Sets the validator of slot `i`. `tags` undefined: read everything (WILD). */
  setValidator(i: number, asOf: number, digest: Uint8Array, gz: boolean, tags: readonly number[] | undefined, route: number, tpl: number): void {
    this.asOf[i] = asOf;
    let f = this.flags[i] & USED;
    if (gz) f |= GZ;
    if (tags === undefined || tags.length > MAX_TAGS) f |= WILD;
    else {
      for (let t = 0; t < tags.length; t++) this.tags[i * MAX_TAGS + t] = tags[t];
      f |= tags.length;
    }
    this.flags[i] = f;
    this.digest.set(digest, i * DIGEST_BYTES);
    this.route[i] = route;
    this.tpl[i] = tpl;
  }

  /** Visits every slot in use (a callback may not insert; it may remove the slot it is given). */
  forEach(fn: (i: number) => void): void {
    for (let i = 0; i < this.cap; i++) {
      // a removal pulls a later key into i: look at i again
      while (this.h1[i] !== 0) {
        const before = this.h1[i];
        const beforeCount = this.count;
        fn(i);
        if (this.count === beforeCount || this.h1[i] === before) break;
      }
    }
  }

  private move(from: number, to: number): void {
    this.h1[to] = this.h1[from];
    this.h2[to] = this.h2[from];
    this.part[to] = this.part[from];
    this.asOf[to] = this.asOf[from];
    this.flags[to] = this.flags[from];
    this.tags.copyWithin(to * MAX_TAGS, from * MAX_TAGS, (from + 1) * MAX_TAGS);
    this.digest.copyWithin(to * DIGEST_BYTES, from * DIGEST_BYTES, (from + 1) * DIGEST_BYTES);
    this.freq[to] = this.freq[from];
    this.route[to] = this.route[from];
    this.tpl[to] = this.tpl[from];
    this.body[to] = this.body[from];
  }

  /** Moves every key into arrays of `cap` slots. */
  private resize(cap: number): void {
    const old = { ...this, cap: this.cap };
    this.cap = cap;
    this.h1 = new Uint32Array(cap);
    this.h2 = new Uint32Array(cap);
    this.part = new Uint16Array(cap);
    this.asOf = new Uint32Array(cap);
    this.flags = new Uint8Array(cap);
    this.tags = new Uint32Array(cap * MAX_TAGS);
    this.digest = new Uint8Array(cap * DIGEST_BYTES);
    this.freq = new Uint8Array(cap);
    this.route = new Uint16Array(cap);
    this.tpl = new Uint8Array(cap);
    this.body = new Int32Array(cap).fill(-1);
    this.hand = 0;
    for (let s = 0; s < old.cap; s++) {
      const k = old.h1[s];
      if (k === 0) continue;
      let i = k % cap;
      while (this.h1[i] !== 0) if (++i === cap) i = 0;
      this.h1[i] = k;
      this.h2[i] = old.h2[s];
      this.part[i] = old.part[s];
      this.asOf[i] = old.asOf[s];
      this.flags[i] = old.flags[s];
      this.tags.set(old.tags.subarray(s * MAX_TAGS, (s + 1) * MAX_TAGS), i * MAX_TAGS);
      this.digest.set(old.digest.subarray(s * DIGEST_BYTES, (s + 1) * DIGEST_BYTES), i * DIGEST_BYTES);
      this.freq[i] = old.freq[s];
      this.route[i] = old.route[s];
      this.tpl[i] = old.tpl[s];
      this.body[i] = old.body[s];
    }
  }
}

const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const B64URL_CODES = Array.from(B64URL, (c) => c.charCodeAt(0));
/** a character code's value in base64url, -1 for any other character (codes < 128) */
const B64URL_VALUES: readonly number[] = Array.from({ length: 128 }, (_, code) => B64URL.indexOf(String.fromCharCode(code)));
/** base64url characters of a 20-byte digest (src/http/etag.ts etagOf shows 27) */
const DIGEST_CHARS = 27;

/**
 * Whether `text` holds, from `at`, the 27 base64url characters of the digest at `digest[off…]` —
 * compared character by character, without decoding or allocating.
 */
export function digestMatches(text: string, at: number, digest: Uint8Array, off: number): boolean {
  let c = 0;
  for (let b = 0; b < 18; b += 3) {
    const x = (digest[off + b] << 16) | (digest[off + b + 1] << 8) | digest[off + b + 2];
    if (
      text.charCodeAt(at + c) !== B64URL_CODES[x >>> 18] ||
      text.charCodeAt(at + c + 1) !== B64URL_CODES[(x >>> 12) & 63] ||
      text.charCodeAt(at + c + 2) !== B64URL_CODES[(x >>> 6) & 63] ||
      text.charCodeAt(at + c + 3) !== B64URL_CODES[x & 63]
    )
      return false;
    c += 4;
  }
  const x = (digest[off + 18] << 8) | digest[off + 19];
  return (
    text.charCodeAt(at + 24) === B64URL_CODES[x >>> 10] &&
    text.charCodeAt(at + 25) === B64URL_CODES[(x >>> 4) & 63] &&
    text.charCodeAt(at + 26) === B64URL_CODES[(x << 2) & 63]
  );
}

/**
 * The digest of an ETag as etagOf writes it (`"` + 27 base64url characters + `"`, or `-gz"` for the
 * gzip representation) into `out`; false for any other form (not kept as a validator).
 */
export function parseEtag(etag: string, out: Uint8Array): { gz: boolean } | undefined {
  const gz = etag.length === DIGEST_CHARS + 5 && etag.endsWith('-gz"');
  if (!gz && etag.length !== DIGEST_CHARS + 2) return undefined;
  if (etag.charCodeAt(0) !== 34 || etag.charCodeAt(etag.length - 1) !== 34) return undefined;
  // 27 characters decoded into `out` in place (every poll decided from versions keeps one)
  let bits = 0;
  let n = 0;
  let o = 0;
  for (let c = 1; c <= DIGEST_CHARS; c++) {
    const v = B64URL_VALUES[etag.charCodeAt(c)] ?? -1;
    if (v < 0) return undefined;
    bits = (bits << 6) | v;
    n += 6;
    if (n >= 8) {
      n -= 8;
      if (o < DIGEST_BYTES) out[o++] = (bits >>> n) & 255;
      bits &= (1 << n) - 1;
    }
  }
  // the last character carries 2 bits beyond the digest: only the form etagOf writes is taken
  if (!digestMatches(etag, 1, out, 0)) return undefined;
  return gz ? GZ_ETAG : PLAIN_ETAG;
}

const GZ_ETAG: { gz: boolean } = Object.freeze({ gz: true });
const PLAIN_ETAG: { gz: boolean } = Object.freeze({ gz: false });

/** The ETag a validator stands for (an If-None-Match of `*` is answered with it). */
export function etagText(digest: Uint8Array, off: number, gz: boolean): string {
  return `"${Buffer.from(digest.buffer, digest.byteOffset + off, DIGEST_BYTES).toString('base64url')}${gz ? '-gz' : ''}"`;
}
