import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { RequestHandler, Response } from 'express';
import type { ChangeReader } from '../snapshot/changes';
import { snapshotOf } from './context';
import { answerDeps } from './deps';
import { requestAcceptsGzip } from './encoding';

/**
 * HTTP caching on a snapshot that `follow` may be growing (docs/response-cache.md). An answer is
 * valid until the data it read changes, not until the next batch:
 *
 * - Its strong ETag is a hash of its bytes (the gzip stream assembled from stored rows, or the
 *   bytes sent) seeded with the chain's lineage and the wire format (etagOf): the same answer has
 *   the same ETag across any number of batches and on every replica of the chain at the same
 *   state — followed, pulled or imported — so a conditional GET stays a 304 until the answer
 *   itself changes.
 * - Each cached 200 carries the tags of what it read (src/http/deps.ts; src/snapshot/changes.ts
 *   names them). When a new state of the same file is seen, the change records committed since
 *   drop exactly the entries holding a named tag (an index from tag to entries); the rest are
 *   answered as before. Another file (hot swap, pull) or a gap in the records empties the cache.
 *
 * The response cache holds the 200s the Express pipeline computed — body bytes plus the exact
 * header block it sent — keyed by normalized URL and representation. It is answered from in
 * front of Express (src/http/front.ts); this module's middleware fills it.
 */

/** What the cache needs of a snapshot (src/snapshot/open.ts Snapshot). */
export interface CacheState {
  fileKey: string;
  changeSeq: number;
  changes: ChangeReader;
  meta: { snapshotId: string; wireFormat: number };
}

/** One cached 200: what the Express path sent, minus the per-request CORS headers. */
export interface CachedResponse {
  /** answered since it was stored or last given a second chance (see ResponseCache) */
  used?: boolean;
  body: Buffer;
  etag: string;
  /** route pattern, for metrics */
  route: string;
  /** flat [name, value, …] header list of the 200, in the order Express set them */
  headers: string[];
  /** the same without Content-Type, Content-Length and Content-Encoding: a 304 (as sendJson sends it) */
  headers304: string[];
  /** what the answer read (change-record tags); undefined: unknown, dropped by any change */
  deps: readonly string[] | undefined;
  /** bytes counted against the cap */
  size: number;
}

/** Fixed overhead counted per entry (Map slot, entry object, header strings). */
const ENTRY_OVERHEAD = 256;
/** tags whose last change is remembered for answers that finish on an older state (see set) */
const RECENT_TAGS = 65_536;

/** A stored entry: the answer, and the part (chain) whose state it is valid for. */
interface Stored extends CachedResponse {
  part: CachePart;
}

/**
 * 200 responses of the files being served, bounded by bytes (bodies + keys + a fixed
 * overhead per entry) and by entries, evicted in CLOCK order (an approximation of least
 * recently used that costs a hit nothing but a flag): a Map iterates in insertion order, so its
 * first key is the oldest; an entry answered since it was stored is moved to the end once
 * (its second chance) instead of being evicted.
 *
 * One budget, many parts: a replica serving several chains (serve --db a --db b) has one part per
 * chain (`part(chainId)`), each with its own state and tag index; entries of every part share
 * the byte and entry caps and the eviction order, and a change to one chain's file drops only
 * that part's entries. A replica of one chain uses the part '' — sync, get, set and admit here
 * are that part's.
 *
 * Validity (per part): the part reflects one state of one file (`sync`). A newer state of the
 * same file applies its change records — each named tag drops its entries through `byTag` — so
 * what remains is exactly what the new state would answer; a state whose records cannot all be
 * read (pruned, or a file written without them) empties the part; another file empties it and
 * forgets its state. An answer computed on an older state (a request in flight across a batch)
 * is stored only if none of the tags it read changed since that state.
 */
export class ResponseCache {
  private readonly map = new Map<string, Stored>();
  /**
   * Walks the map from its oldest entry, kept between evictions: a fresh iterator would skip
   * over every entry deleted since the map was last rehashed — O(entries) per eviction.
   */
  private cursor = this.map.entries();
  private used = 0;
  private readonly parts = new Map<string, CachePart>();
  /** the part of a replica of one chain */
  private readonly root: CachePart;
  /** no single body larger than this is stored (a few huge pages must not flush everything) */
  readonly maxEntryBytes: number;
  hits = 0;
  misses = 0;
  /** 200s not stored because their URL was seen for the first time (admission, see admit) */
  notAdmitted = 0;
  /** entries dropped because a change record named what they read */
  invalidated = 0;
  /** times a part's entries were emptied: another file, or a state without readable change records */
  flushes = 0;
  private readonly doorkeeper: Doorkeeper | undefined;

  /**
   * `admitOnSecondSight` (the default): a URL's 200 is stored only when the URL is requested
   * the second time (TinyLFU's "doorkeeper"): a crawler's one-off URLs then cost a miss only a
   * hash and a bit-set lookup, not a copy of the body, its header list and an eviction.
   */
  constructor(readonly maxBytes: number, readonly maxEntries = Infinity, admitOnSecondSight = true) {
    this.maxEntryBytes = Math.floor(maxBytes / 8);
    this.doorkeeper = admitOnSecondSight ? new Doorkeeper(DOORKEEPER_BITS) : undefined;
    this.root = this.part('');
  }

  /** The part of chain `id` ('' for a replica of one chain), made on first use. */
  part(id: string): CachePart {
    let p = this.parts.get(id);
    if (p === undefined) this.parts.set(id, p = new CachePart(this, id === '' ? '' : `${id}\u0001`));
    return p;
  }

  /** Forgets chain `id` (its file left the replica): its entries are dropped. */
  dropPart(id: string): void {
    const p = this.parts.get(id);
    if (p === undefined || p === this.root) return;
    p.clear();
    this.parts.delete(id);
  }

  /**
   * Whether a 200 for `key` should be stored: true when the key was seen before (or admission is
   * off); a first sighting is remembered and answered false.
   */
  admitKey(key: string): boolean {
    if (this.doorkeeper === undefined || this.doorkeeper.seen(key)) return true;
    this.notAdmitted++;
    return false;
  }

  get size(): number { return this.map.size; }
  get bytes(): number { return this.used; }

  /** The root part's (a replica of one chain): see CachePart. */
  admit(url: string): boolean { return this.root.admit(url); }
  sync(s: CacheState): void { this.root.sync(s); }
  get(url: string): CachedResponse | undefined { return this.root.get(url); }
  set(s: CacheState, url: string, entry: Omit<CachedResponse, 'size' | 'deps'>, deps: readonly string[] | undefined): void {
    this.root.set(s, url, entry, deps);
  }

  /** Empties every part and forgets their states (and the URLs seen once). */
  clear(): void {
    for (const p of this.parts.values()) p.clear();
    this.forgetSeen();
  }

  /** @internal forgets the URLs seen once (admission starts over) */
  forgetSeen(): void {
    this.doorkeeper?.clear();
  }

  /** @internal the entry under a full key, counted as a hit */
  lookup(key: string): CachedResponse | undefined {
    const e = this.map.get(key);
    if (e === undefined) return undefined;
    this.hits++;
    e.used = true;
    return e;
  }

  /** @internal stores under a full key, then evicts to the caps */
  store(key: string, e: Stored): void {
    this.remove(key);
    this.map.set(key, e);
    this.used += e.size;
    while (this.map.size > this.maxEntries || this.used > this.maxBytes) {
      let next = this.cursor.next();
      if (next.done) { this.cursor = this.map.entries(); next = this.cursor.next(); }
      const [k, old] = next.value as [string, Stored];
      if (this.map.get(k) !== old) continue; // replaced since the cursor passed it: the new one is further on
      if (old.used && k !== key) { this.map.delete(k); old.used = false; this.map.set(k, old); continue; }
      this.remove(k);
    }
  }

  /** @internal drops the entry under a full key from the map and from its part's index */
  remove(key: string): void {
    const e = this.map.get(key);
    if (e === undefined) return;
    this.map.delete(key);
    this.used -= e.size;
    e.part.unindex(key, e);
  }
}

/**
 * One chain's share of a ResponseCache: the state its entries are valid for, its index from
 * change-record tag to entries, and the tags changed recently. Its entries live in the shared
 * map under its prefix (the chain id and U+0001, which no URL holds).
 */
export class CachePart {
  /** tag → keys of the entries that read it; `wild` holds entries of unknown deps */
  private readonly byTag = new Map<string, Set<string>>();
  private readonly wild = new Set<string>();
  /** every key of this part (to empty it without walking the other parts' entries) */
  private readonly keys = new Set<string>();
  /** the state the entries are valid for */
  private fileKey: string | undefined;
  private seq = 0;
  private last: CacheState | undefined;
  /** tag → the change record that last named it, for records after `recentFloor` */
  private readonly recent = new Map<string, number>();
  private recentFloor = 0;

  constructor(private readonly cache: ResponseCache, private readonly prefix: string) {}

  get size(): number { return this.keys.size; }

  /** Whether a 200 for `url` should be stored (ResponseCache.admitKey). */
  admit(url: string): boolean {
    return this.cache.admitKey(this.prefix + url);
  }

  /**
   * Brings the entries to state `s` (the snapshot a request is answered from): nothing when it
   * is the state they are for (one comparison: the per-request cost), the change records since
   * for a newer state of the same file, a flush for another file. An older state changes nothing.
   */
  sync(s: CacheState): void {
    if (s === this.last) return;
    if (s.fileKey !== this.fileKey) {
      this.clear();
      this.fileKey = s.fileKey;
      this.seq = s.changeSeq;
      this.recentFloor = s.changeSeq;
      this.last = s;
      return;
    }
    if (s.changeSeq < this.seq) return;
    if (s.changeSeq === this.seq) {
      // the same records, another commit (a write that recorded nothing: an older follow) → unknown changes
      if (this.last !== undefined && s.meta.snapshotId !== this.last.meta.snapshotId) this.dropAll(s.changeSeq);
      this.last = s;
      return;
    }
    const records = s.changes.since(this.seq, s.changeSeq);
    // a first follow batch on an older wire format renders every stored row again: every answer's
    // bytes (and ETag) may change, though the records name only the batch's own data
    const rerendered = this.last !== undefined && s.meta.wireFormat !== this.last.meta.wireFormat;
    if (records === undefined || rerendered) this.dropAll(s.changeSeq);
    else for (const r of records) this.apply(r.seq, r.tags);
    this.seq = s.changeSeq;
    this.last = s;
  }

  /** The entry for `url` (counted as a hit), if any. Call sync first. */
  get(url: string): CachedResponse | undefined {
    return this.cache.lookup(this.prefix + url);
  }

  /**
   * Stores a 200 computed on state `s` that read `deps` (undefined: unknown). Ignored for another
   * file, or for an older state when something it read changed since (or cannot be told).
   */
  set(s: CacheState, url: string, entry: Omit<CachedResponse, 'size' | 'deps'>, deps: readonly string[] | undefined): void {
    if (s.fileKey !== this.fileKey) return;
    this.sync(s);
    if (s !== this.last) {
      // computed on an older state (or a commit of the same records whose changes are unknown)
      if (s.changeSeq === this.seq || deps === undefined || s.changeSeq < this.recentFloor) return;
      for (const d of deps) if ((this.recent.get(d) ?? 0) > s.changeSeq) return;
    }
    const key = this.prefix + url;
    const size = entry.body.length + 2 * key.length + ENTRY_OVERHEAD;
    if (size > this.cache.maxEntryBytes) return;
    const stored: Stored = { ...entry, deps, used: false, size, part: this };
    this.cache.remove(key);
    this.keys.add(key);
    if (deps === undefined) this.wild.add(key);
    else for (const d of deps) {
      let keys = this.byTag.get(d);
      if (keys === undefined) this.byTag.set(d, keys = new Set());
      keys.add(key);
    }
    this.cache.store(key, stored);
  }

  /** @internal an entry of this part left the shared map: forget it in the indexes */
  unindex(key: string, e: Stored): void {
    this.keys.delete(key);
    if (e.deps === undefined) { this.wild.delete(key); return; }
    for (const d of e.deps) {
      const keys = this.byTag.get(d);
      if (keys === undefined) continue;
      keys.delete(key);
      if (keys.size === 0) this.byTag.delete(d);
    }
  }

  /** Drops the entries that read `tags` (one change record). */
  private apply(seq: number, tags: readonly string[]): void {
    for (const key of [...this.wild]) { this.cache.remove(key); this.cache.invalidated++; }
    for (const t of tags) {
      const keys = this.byTag.get(t);
      if (keys !== undefined) for (const key of [...keys]) { this.cache.remove(key); this.cache.invalidated++; }
      this.recent.set(t, seq);
    }
    if (this.recent.size > RECENT_TAGS) { this.recent.clear(); this.recentFloor = seq; }
  }

  /** The entries, not the file: after changes that cannot be told (see sync). */
  private dropAll(seq: number): void {
    this.cache.flushes++;
    this.clearEntries();
    this.recent.clear();
    this.recentFloor = seq;
  }

  private clearEntries(): void {
    for (const key of [...this.keys]) this.cache.remove(key);
  }

  /**
   * Empties the part and forgets its state; the root part (a replica of one chain) also forgets
   * the URLs seen once — another file is another set of URLs. A part of one chain of several
   * leaves the filter to the others.
   */
  clear(): void {
    if (this.keys.size > 0) this.cache.flushes++;
    if (this.prefix === '') this.cache.forgetSeen();
    this.clearEntries();
    this.recent.clear();
    this.fileKey = undefined;
    this.last = undefined;
    this.seq = 0;
    this.recentFloor = 0;
  }
}

/** 2^20 bits (128 KiB): ~100k distinct URLs remembered at < 10 % false "seen before". */
const DOORKEEPER_BITS = 1 << 20;

/**
 * A Bloom filter of URLs seen once (two probes from one 32-bit FNV-1a hash and its mix), reset
 * when a quarter of its bits are set so that old one-off URLs age out. A false "seen" only means
 * a one-off URL is stored, as without admission.
 */
class Doorkeeper {
  private readonly bits: Uint32Array;
  private set = 0;
  constructor(private readonly size: number) { this.bits = new Uint32Array(size >>> 5); }

  /** Whether `key` was seen since the last reset; records it. */
  seen(key: string): boolean {
    let h = 0x811c9dc5;
    for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
    const a = (h >>> 0) & (this.size - 1);
    const b = (Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0) & (this.size - 1);
    const hadA = this.test(a);
    const hadB = this.test(b);
    if (hadA && hadB) return true;
    if (this.set >= this.size >>> 2) this.clear();
    this.mark(a);
    this.mark(b);
    return false;
  }

  clear(): void { this.bits.fill(0); this.set = 0; }

  private test(i: number): boolean { return (this.bits[i >>> 5] & (1 << (i & 31))) !== 0; }
  private mark(i: number): void {
    if (!this.test(i)) { this.bits[i >>> 5] |= 1 << (i & 31); this.set++; }
  }
}

/**
 * The strong ETag of an answer: a hash of the bytes that stand for it — for an answer of packed
 * rows the gzip stream assembled from them (src/wire/packed.ts: deterministic for the stored rows,
 * so the identity and the gzip representation share it, the gzip one with `-gz`), otherwise the
 * bytes sent — seeded with `seed` (etagSeed: the chain's lineage and the wire format). Derived
 * from the data alone: unchanged across batches that do not touch the answer, equal on every
 * replica of the chain at the same state. 160-bit SHA-1, 27 base64url characters shown (162 bits).
 */
export function etagOf(seed: string, bytes: Uint8Array): string {
  return `"${createHash('sha1').update(seed).update(bytes).digest('base64url')}"`;
}

/** The ETag seed of a snapshot: its chain's lineage and its wire format (a re-render is another). */
export function etagSeed(s: { lineage: string; meta: { wireFormat: number } }): string {
  return `${s.lineage}.${s.meta.wireFormat}.`;
}

/** A year: what `immutable` answers may be kept (RFC 8246). */
const IMMUTABLE_MAX_AGE = 31_536_000;
export const IMMUTABLE_CACHE_CONTROL = `public, max-age=${IMMUTABLE_MAX_AGE}, immutable`;

const NO_CACHE = /(?:^|,)\s*?no-cache\s*?(?:,|$)/;
/** `fresh` splits the If-None-Match list on spaces and commas */
const TOKEN_SEPARATORS = /[ ,]+/;

/**
 * Whether a request with these headers gets a 304 for a 200 with this ETag — the one conditional
 * GET decision (the response cache and sendJson both use it), the same as Express's `req.fresh`
 * (the `fresh` package): If-None-Match compared weakly, `*` matches,
 * `Cache-Control: no-cache` in the request forces a full answer, If-Modified-Since alone never
 * matches (we send no Last-Modified).
 */
export function isFresh(ifNoneMatch: string | undefined, cacheControl: string | undefined, ifModifiedSince: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (cacheControl && NO_CACHE.test(cacheControl)) return false;
  // fresh: If-Modified-Since is checked against Last-Modified, which we never send → stale
  if (ifModifiedSince) return false;
  if (ifNoneMatch === '*') return true;
  for (const t of ifNoneMatch.split(TOKEN_SEPARATORS)) {
    if (t === etag || t === `W/${etag}` || `W/${t}` === etag) return true;
  }
  return false;
}

/** Whether `req` (conditional GET) gets a 304 for a 200 with this ETag: isFresh on its headers. */
export function requestIsFresh(req: IncomingMessage, etag: string): boolean {
  const h = req.headers;
  return isFresh(h['if-none-match'], h['cache-control'], h['if-modified-since'], etag);
}

/** Request headers that belong to the request, not to the cached answer (CORS, draining). */
const PER_REQUEST = new Set(['access-control-allow-origin', 'vary', 'connection']);

/**
 * The response cache's key of a representation: the normalized URL, suffixed for gzip (each
 * representation is cached apart, as encoded bytes: a hit never compresses nor inflates).
 */
export function cacheKey(url: string, gzip: boolean): string {
  return gzip ? url + '\u0000gzip' : url;
}

/**
 * After the snapshot is chosen (snapshotOf, src/http/context.ts), before validation: sets the
 * Cache-Control of the handler's 200 (sendJson, src/http/send.ts, sets its ETag from the bytes and
 * makes a matching If-None-Match a 304; immutable routes get a long Cache-Control there; the
 * error handlers of src/serve/app.ts strip both again on an error), and with a response cache,
 * stores the 200 the route sends with the tags of what it read (src/http/deps.ts) in the part of
 * the request's chain (`partOf`; the root part for a replica of one chain).
 */
export function httpCaching(maxAge: number, cache?: ResponseCache, partOf: (req: IncomingMessage) => CachePart | undefined = () => cache?.part('')): RequestHandler {
  const cacheControl = `public, max-age=${maxAge}`;
  return (req, res, next) => {
    if (req.method !== 'GET') { next(); return; }
    const snapshot = snapshotOf(res);
    const url = req.url;
    res.setHeader('Cache-Control', cacheControl);
    const part = cache && partOf(req);
    if (cache && part) {
      cache.misses++;
      if (!part.admit(url)) { next(); return; }
      const store = (body: Buffer): void => {
        if (!req.route) return;
        const route = req.baseUrl + (req.route as { path: string }).path;
        const headers: string[] = [];
        const headers304: string[] = [];
        // keyed by what the request accepts, as the front looks it up (an answer that is never
        // compressed is then stored once per kind of client)
        const gzip = requestAcceptsGzip(req);
        const finalEtag = res.getHeader('ETag');
        if (typeof finalEtag !== 'string') return;
        for (const name of (res as unknown as { getRawHeaderNames(): string[] }).getRawHeaderNames()) {
          const lower = name.toLowerCase();
          if (PER_REQUEST.has(lower)) continue;
          const value = res.getHeader(name);
          if (typeof value !== 'string' && typeof value !== 'number') return; // a list-valued header: not ours, not cached
          headers.push(name, String(value));
          if (lower !== 'content-type' && lower !== 'content-length' && lower !== 'content-encoding') headers304.push(name, String(value));
        }
        part.set(snapshot, cacheKey(url, gzip), { body, etag: finalEtag, route, headers, headers304 }, answerDeps(req, snapshot));
      };
      captureBody(res, store);
      // a revalidation answered 304 stores the 200 it stands for (sendJson): a client that always
      // sends If-None-Match — a wallet polling — is then answered from the cache from its next poll
      res.locals.storeAnswer = store;
    }
    next();
  };
}

/** Hands the body of a 200 sent in one res.end (how every route sends) to `store`. */
function captureBody(res: Response, store: (body: Buffer) => void): void {
  const end = res.end;
  res.end = function (this: Response, ...args: unknown[]) {
    const [chunk, encoding] = args;
    if (this.statusCode === 200 && !this.headersSent && chunk !== undefined && chunk !== null && typeof chunk !== 'function') {
      store(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, typeof encoding === 'string' ? encoding as BufferEncoding : 'utf8'));
    }
    return (end as (...a: unknown[]) => Response).apply(this, args);
  } as typeof res.end;
}
