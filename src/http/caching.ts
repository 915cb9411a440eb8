import { createHash } from 'node:crypto';
import type { RequestHandler, Response } from 'express';
import type { Snapshot } from '../snapshot/open';

/**
 * HTTP caching of an immutable snapshot (DESIGN.md "Serve"). A response is a function of the
 * snapshot and the URL, so the strong ETag is `"<snapshot_id>-<hash of method + URL>"` — no
 * body hashing — and changes exactly when the snapshot does. 200s are cacheable for
 * `max-age` seconds; errors are `no-store` and carry no ETag. The optional response cache
 * holds 200 bodies only, keyed by snapshot id + URL, LRU by entries with a byte cap.
 */

interface Entry { body: Buffer; type: string; route: string; size: number }

/** Bounded LRU of 200 bodies. A Map iterates in insertion order, so its first key is the oldest. */
export class ResponseCache {
  private readonly map = new Map<string, Entry>();
  private used = 0;
  hits = 0;
  misses = 0;

  constructor(readonly maxEntries: number, readonly maxBytes: number) {}

  get size(): number { return this.map.size; }
  get bytes(): number { return this.used; }

  get(key: string): Entry | undefined {
    const e = this.map.get(key);
    if (e === undefined) { this.misses++; return undefined; }
    this.hits++;
    this.map.delete(key);
    this.map.set(key, e);
    return e;
  }

  set(key: string, body: Buffer, type: string, route: string): void {
    const size = body.length + key.length;
    if (size > this.maxBytes) return;
    const old = this.map.get(key);
    if (old) { this.map.delete(key); this.used -= old.size; }
    this.map.set(key, { body, type, route, size });
    this.used += size;
    for (const [k, e] of this.map) {
      if (this.map.size <= this.maxEntries && this.used <= this.maxBytes) break;
      this.map.delete(k);
      this.used -= e.size;
    }
  }

  clear(): void {
    this.map.clear();
    this.used = 0;
  }
}

/** The ETag of a URL on a snapshot: cheap (one short hash), stable, strong. */
export function etagOf(snapshotId: string, method: string, url: string): string {
  return `"${snapshotId}-${createHash('sha1').update(method).update(' ').update(url).digest('base64url').slice(0, 22)}"`;
}

/** If-None-Match (weak comparison, RFC 9110 §13.1.2) against our ETag. */
export function noneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  for (const raw of header.split(',')) {
    const t = raw.trim();
    if (t === '*' || t === etag || (t.startsWith('W/') && t.slice(2) === etag)) return true;
  }
  return false;
}

/**
 * After the snapshot is chosen (res.locals.snapshot), before validation: answers from the
 * response cache when it can (only 200s are ever stored, so a 304 from it is safe), otherwise
 * sets ETag + Cache-Control for the handler's response — Express's res.send turns a matching
 * If-None-Match into a 304; the error handlers of src/app.ts strip them again on an error.
 */
export function httpCaching(maxAge: number, cache?: ResponseCache): RequestHandler {
  const cacheControl = `public, max-age=${maxAge}`;
  return (req, res, next) => {
    if (req.method !== 'GET') { next(); return; }
    const snapshot = res.locals.snapshot as Snapshot;
    const etag = etagOf(snapshot.meta.snapshotId, req.method, req.url);
    const key = cache && `${snapshot.meta.snapshotId} ${req.url}`;
    if (cache && key) {
      const hit = cache.get(key);
      if (hit) {
        res.locals.route = hit.route;
        if (noneMatch(req.headers['if-none-match'], etag)) {
          res.writeHead(304, { ETag: etag, 'Cache-Control': cacheControl }).end();
        } else {
          res.writeHead(200, { 'Content-Type': hit.type, 'Content-Length': hit.body.length, ETag: etag, 'Cache-Control': cacheControl })
            .end(hit.body);
        }
        return;
      }
    }
    res.setHeader('ETag', etag);
    res.setHeader('Cache-Control', cacheControl);
    if (cache && key) captureBody(res, (body) => {
      const route = req.route ? req.baseUrl + (req.route as { path: string }).path : undefined;
      if (route !== undefined) cache.set(key, body, String(res.getHeader('Content-Type') ?? 'application/json'), route);
    });
    next();
  };
}

/** Hands the body of a 200 sent in one res.end (how res.send sends) to `store`. */
function captureBody(res: Response, store: (body: Buffer) => void): void {
  const end = res.end;
  res.end = function (this: Response, ...args: unknown[]) {
    const [chunk, encoding] = args;
    if (this.statusCode === 200 && !this.headersSent && chunk !== undefined && typeof chunk !== 'function') {
      store(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, typeof encoding === 'string' ? encoding as BufferEncoding : 'utf8'));
    }
    return (end as (...a: unknown[]) => Response).apply(this, args);
  } as typeof res.end;
}
