import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { RequestHandler, Response } from 'express';
import { snapshotOf } from './context';
import { requestAcceptsGzip } from './encoding';

/**
 * HTTP caching of an immutable snapshot (docs/architecture.md#serve). A response is a function of the
 * snapshot and the URL, so the strong ETag is `"<snapshot_id>-<hash of method + URL>"` — no
 * body hashing — and changes exactly when the snapshot does. 200s are cacheable for
 * `max-age` seconds; errors are `no-store` and carry no ETag.
 *
 * The response cache holds the 200s the Express pipeline computed — body bytes plus the exact
 * header block it sent — keyed by normalized URL, for one snapshot at a time. It is answered
 * from in front of Express (src/http/front.ts); this module's middleware fills it.
 */

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
  /** bytes counted against the cap */
  size: number;
}

/** Fixed overhead counted per entry (Map slot, entry object, header strings). */
const ENTRY_OVERHEAD = 256;

/**
 * 200 responses for the snapshot being served, bounded by bytes (bodies + keys + a fixed
 * overhead per entry) and by entries, evicted in CLOCK order (an approximation of least
 * recently used that costs a hit nothing but a flag): a Map iterates in insertion order, so its
 * first key is the oldest; an entry answered since it was stored is moved to the end once
 * (its second chance) instead of being evicted. Entries of another snapshot are never answered: the first
 * request that sees a new snapshot id empties the cache (`adopt`), and a response computed on
 * the old one that finishes after that is not stored.
 */
export class ResponseCache {
  private readonly map = new Map<string, CachedResponse>();
  /**
   * Walks the map from its oldest entry, kept between evictions: a fresh iterator would skip
   * over every entry deleted since the map was last rehashed — O(entries) per eviction.
   */
  private cursor = this.map.entries();
  private used = 0;
  private snapshotId: string | undefined;
  /** no single body larger than this is stored (a few huge pages must not flush everything) */
  readonly maxEntryBytes: number;
  hits = 0;
  misses = 0;
  /** 200s not stored because their URL was seen for the first time (admission, see admit) */
  notAdmitted = 0;
  private readonly doorkeeper: Doorkeeper | undefined;

  /**
   * `admitOnSecondSight` (the default): a URL's 200 is stored only when the URL is requested
   * the second time (TinyLFU's "doorkeeper"): a crawler's one-off URLs then cost a miss only a
   * hash and a bit-set lookup, not a copy of the body, its header list and an eviction.
   */
  constructor(readonly maxBytes: number, readonly maxEntries = Infinity, admitOnSecondSight = true) {
    this.maxEntryBytes = Math.floor(maxBytes / 8);
    this.doorkeeper = admitOnSecondSight ? new Doorkeeper(DOORKEEPER_BITS) : undefined;
  }

  /**
   * Whether a 200 for `url` should be stored: true when the URL was seen before (or admission is
   * off); a first sighting is remembered and answered false.
   */
  admit(url: string): boolean {
    if (this.doorkeeper === undefined || this.doorkeeper.seen(url)) return true;
    this.notAdmitted++;
    return false;
  }

  get size(): number { return this.map.size; }
  get bytes(): number { return this.used; }

  /** Makes `snapshotId` the snapshot answered for; a different one empties the cache. */
  adopt(snapshotId: string): void {
    if (snapshotId === this.snapshotId) return;
    this.clear();
    this.snapshotId = snapshotId;
  }

  /** The entry for `url` (counted as a hit), if any. */
  get(url: string): CachedResponse | undefined {
    const e = this.map.get(url);
    if (e === undefined) return undefined;
    this.hits++;
    e.used = true;
    return e;
  }

  /** Stores a 200 computed on snapshot `snapshotId` (ignored if that is not the current one). */
  set(snapshotId: string, url: string, entry: Omit<CachedResponse, 'size'>): void {
    if (snapshotId !== this.snapshotId) return;
    const size = entry.body.length + 2 * url.length + ENTRY_OVERHEAD;
    if (size > this.maxEntryBytes) return;
    const old = this.map.get(url);
    if (old) { this.map.delete(url); this.used -= old.size; }
    this.map.set(url, { ...entry, used: false, size });
    this.used += size;
    while (this.map.size > this.maxEntries || this.used > this.maxBytes) {
      let next = this.cursor.next();
      if (next.done) { this.cursor = this.map.entries(); next = this.cursor.next(); }
      const [k, e] = next.value as [string, CachedResponse];
      if (this.map.get(k) !== e) continue; // replaced since the cursor passed it: the new one is further on
      this.map.delete(k);
      if (e.used && k !== url) { e.used = false; this.map.set(k, e); continue; }
      this.used -= e.size;
    }
  }

  clear(): void {
    this.doorkeeper?.clear();
    this.map.clear();
    this.cursor = this.map.entries();
    this.used = 0;
    this.snapshotId = undefined;
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

/** The ETag of a URL on a snapshot: cheap (one short hash), stable, strong. */
export function etagOf(snapshotId: string, method: string, url: string): string {
  return `"${snapshotId}-${createHash('sha1').update(method).update(' ').update(url).digest('base64url').slice(0, 22)}"`;
}

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
 * After the snapshot is chosen (snapshotOf, src/http/context.ts), before validation: sets ETag +
 * Cache-Control for the handler's response (a matching If-None-Match becomes a 304 when it is
 * sent; the error handlers of src/serve/app.ts strip them again on an error), and with a response
 * cache, stores the 200 the route sends.
 */
export function httpCaching(maxAge: number, cache?: ResponseCache): RequestHandler {
  const cacheControl = `public, max-age=${maxAge}`;
  return (req, res, next) => {
    if (req.method !== 'GET') { next(); return; }
    const snapshotId = snapshotOf(res).meta.snapshotId;
    const url = req.url;
    const etag = etagOf(snapshotId, req.method, url);
    res.setHeader('ETag', etag);
    res.setHeader('Cache-Control', cacheControl);
    if (cache) {
      cache.misses++;
      if (!cache.admit(url)) { next(); return; }
      captureBody(res, (body) => {
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
        cache.set(snapshotId, cacheKey(url, gzip), { body, etag: finalEtag, route, headers, headers304 });
      });
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
