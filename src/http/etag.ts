import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/*
 * ETags and conditional GETs: the one definition sendJson (src/http/send.ts), the static files
 * (src/http/static.ts) and the response cache above them (src/cache/store.ts, src/cache/front.ts)
 * share. A leaf: it imports nothing of src/.
 */

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

/** The Cache-Control of a 200 that is not immutable: `--cache-max-age` seconds. */
export const maxAgeCacheControl = (seconds: number): string => `public, max-age=${seconds}`;

/** `fresh` splits the If-None-Match list on spaces and commas */
export const TOKEN_SEPARATORS = /[ ,]+/;

/**
 * Whether a request with these headers gets a 304 for a 200 with this ETag — the one conditional
 * GET decision (the response cache, its validators and sendJson all use it): If-None-Match
 * compared weakly, `*` matches, If-Modified-Since alone never matches (we send no
 * Last-Modified). A request's `Cache-Control: no-cache` does not force a 200: it asks the caches
 * on the way to validate with the origin (RFC 9111 section 5.2.1.4), and this is the origin —
 * its answer to a matching If-None-Match is a 304 (fetch() adds no-cache to every request that
 * sets If-None-Match: docs/response-cache.md#conditional-get).
 */
export function isFresh(ifNoneMatch: string | undefined, _cacheControl: string | undefined, ifModifiedSince: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  // fresh: If-Modified-Since is checked against Last-Modified, which we never send → stale
  if (ifModifiedSince) return false;
  return ifNoneMatch === '*' || namesEtag(ifNoneMatch, etag);
}

/**
 * Whether If-None-Match names `etag` itself (weakly compared, in a list) — isFresh without `*`:
 * what a 304 decided from tag versions needs (src/http/version-etag.ts). `*` asks whether any
 * answer exists, which only the answer can tell (an absent block or collection is a 404).
 */
export function namesEtag(ifNoneMatch: string, etag: string): boolean {
  if (ifNoneMatch === etag) return true;
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
