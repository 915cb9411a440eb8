import { hash } from 'node:crypto';
import { parse as parseQuery } from 'node:querystring';
import type { Snapshot } from '../snapshot/open';
import { buildInfo } from '../version';
import type { ApiRoute, RouteParams } from './route';

/*
 * ETags from versions (docs/response-cache.md "ETags from versions"): the ETag of an answer that
 * reads change-record tags (src/snapshot/tags.ts; a route's declared `reads`) is a hash of what
 * decides its bytes — the chain's lineage, the wire format, this build, the normalized URL, the
 * representation and the **version of every tag it reads** (src/snapshot/tag-versions.ts: kept
 * in or derived from the file). So whether an answer a client holds is still the answer is
 * decided without computing it: one indexed lookup per tag and a hash, by any process, after a
 * restart, in a new worker, on a later file of the same chain — equal on every replica of the
 * same data. The same inputs always name the same bytes (a version names the data its tag
 * covers; the build names the code that renders it), and any change to the data an answer
 * reads moves a version, so a changed answer never keeps an ETag.
 *
 * Answers that read no tag (a tx or EVM tx by hash: immutable once present, a 404 before) and
 * answers whose tags cannot be computed keep the ETag of their bytes (src/http/etag.ts etagOf).
 */

/** This build, in every version ETag: another build may render other bytes for the same data. */
const BUILD = ((): string => {
  const b = buildInfo();
  return `${b.version}+${b.commit}`;
})();

/** The tags an answer reads and their versions on one state (versionedTags). */
export interface Versioned {
  tags: readonly string[];
  versions: string[];
}

/**
 * The ETag of the answer to `key` (the normalized, root-relative URL: src/http/url.ts) on
 * snapshot `s`, reading the tags of `v` at their versions, for a client that accepts gzip (`-gz`)
 * or not. Same format as etagOf's (27 base64url characters of a SHA-1), so the response cache's
 * key table holds either.
 */
export function versionEtag(s: Snapshot, key: string, v: Versioned, gzip: boolean): string {
  // one string, hashed in one call
  let text = `${s.lineage}.${s.meta.wireFormat}.${BUILD}\n${key}`;
  for (let i = 0; i < v.tags.length; i++) text += `\n${v.tags[i]}=${v.versions[i]}`;
  // one-shot: no Hash object (and its native handle) for the GC to collect per poll
  const d = hash('sha1', text, 'base64url');
  return gzip ? `"${d}-gz"` : `"${d}"`;
}

/**
 * The tags `route`'s answer to these parameters reads on `s` and their versions, when they decide
 * its ETag: undefined for a route that reads none (a tx by hash), when they cannot be computed, or
 * when one of them has no version (the NFT tags: src/snapshot/tag-versions.ts).
 */
export function versionedTags(route: ApiRoute | undefined, p: RouteParams, s: Snapshot): Versioned | undefined {
  if (route === undefined) return undefined;
  const { reads } = route;
  let tags: readonly string[];
  if (typeof reads !== 'function') tags = reads;
  else {
    try {
      tags = reads(p, s);
    } catch {
      return undefined;
    }
  }
  if (tags.length === 0) return undefined;
  const versions: string[] = [];
  for (const t of tags) {
    const v = s.versions.of(t);
    if (v === undefined) return undefined;
    versions.push(v);
  }
  return { tags, versions };
}

/** A route of the table matched by a URL, with its parameters as the Express router would give them. */
export interface RouteMatch {
  route: ApiRoute;
  params: RouteParams;
}

/**
 * The API route a normalized URL is answered by, without Express: the route table's patterns in
 * its order (the router's match order), case-insensitive like Express's router, path
 * parameters decoded, the query parsed as the app's 'simple' query parser does. Used by the
 * response cache's front to decide a conditional GET from the versions (src/cache/front.ts);
 * anything it cannot match exactly goes on to the app, which decides as always.
 */
export function routeMatcher(routes: readonly ApiRoute[]): (url: string) => RouteMatch | undefined {
  const compiled = routes.map((route) => {
    const names: string[] = [];
    const source = route.path
      .split('/')
      .map((seg) => {
        if (seg.startsWith(':')) {
          names.push(seg.slice(1));
          return '([^/]+?)';
        }
        return seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      })
      .join('/');
    // the path up to its first parameter, lower-cased: a cheap test before the pattern
    const colon = route.path.indexOf(':');
    return { route, names, re: new RegExp(`^${source}$`, 'i'), literal: (colon < 0 ? route.path : route.path.slice(0, colon)).toLowerCase() };
  });
  return (url) => {
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const lower = path.toLowerCase();
    for (const { route, names, re, literal } of compiled) {
      if (!lower.startsWith(literal)) continue;
      const m = re.exec(path);
      if (m === null) continue;
      const params: Record<string, string> = {};
      try {
        for (let i = 0; i < names.length; i++) params[names[i]] = decodeURIComponent(m[i + 1]);
      } catch {
        return undefined;
      }
      // the query is parsed only if the route's tags read it (one route does: tokens/by_account's collection_addr)
      let query: RouteParams['query'] | undefined;
      return {
        route,
        params: {
          path: params,
          get query() {
            return (query ??= q < 0 ? {} : firstValues(parseQuery(url.slice(q + 1))));
          },
        },
      };
    }
    return undefined;
  };
}

/** A repeated parameter read as its first value, as the app does (src/http/params.ts rollyticsQuery) for what `reads` looks at. */
function firstValues(q: Record<string, string | string[] | undefined>): RouteParams['query'] {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(q)) if (v !== undefined) out[k] = Array.isArray(v) ? v[0] : v;
  return out as RouteParams['query'];
}
