/**
 * The request target as routing sees it — one function, used by the response cache in front of
 * Express (its key) and by the app (req.url), so both agree on what a URL is.
 *
 * - Absolute form (`GET http://host/status HTTP/1.1`, RFC 9112 section 3.2.2: servers must accept it):
 *   scheme and authority are dropped.
 * - rollytics' router is case-insensitive and non-strict; clients also send `//indexer/...`
 *   (Celatone joins base URL and path without trimming): leading slashes are collapsed and one
 *   trailing slash dropped.
 * - `/indexer/nft/v1/collections/by_name/{name}`: explorers build it with encodeURI, which leaves
 *   "/" in a name (IBC class names `ibc/…`) unescaped; the rest of the path is the name, so its
 *   slashes are escaped (%2F) and the route's single segment holds it.
 *
 * The common case (nothing to do) allocates nothing.
 */
export function normalizeUrl(url: string): string {
  if (url.charCodeAt(0) !== 47) url = originForm(url);
  const q = url.indexOf('?');
  const end = q < 0 ? url.length : q;
  const leading = url.charCodeAt(1) === 47;
  const trailing = end > 1 && url.charCodeAt(end - 1) === 47;
  const byName = end > BY_NAME.length && url.charCodeAt(BY_NAME_AT) === 95 /* _ in by_name */ && hasByNamePrefix(url);
  if (!leading && !trailing && !byName) return url;
  let path = q < 0 ? url : url.slice(0, q);
  const rest = q < 0 ? '' : url.slice(q);
  path = path.replace(/^\/{2,}/, '/');
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  if (hasByNamePrefix(path)) path = path.slice(0, BY_NAME.length) + path.slice(BY_NAME.length).replace(/\//g, '%2F');
  return path + rest;
}

const BY_NAME = '/indexer/nft/v1/collections/by_name/';
const BY_NAME_AT = BY_NAME.indexOf('_');

function hasByNamePrefix(path: string): boolean {
  return path.length > BY_NAME.length && path.slice(0, BY_NAME.length).toLowerCase() === BY_NAME;
}

const ABSOLUTE = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i;

/** `http://host:8080/a?b` → `/a?b`; `http://host` → `/`; anything else is left as it is. */
function originForm(url: string): string {
  const m = ABSOLUTE.exec(url);
  if (!m) return url;
  const rest = url.slice(m[0].length);
  return rest.startsWith('/') ? rest : `/${rest}`;
}

/**
 * The request target under `base` (parseBaseUrl's form, non-empty) as the app routes it — the
 * prefix cut, `/` for the prefix itself — or undefined when the target is outside the prefix
 * (it must end at a segment boundary: `/minimove-10` is not under `/minimove-1`). Absolute form
 * and doubled leading slashes are undone first, as normalizeUrl does; the rest is left to it.
 */
export function underBase(url: string, base: string): string | undefined {
  if (url.charCodeAt(0) !== 47) url = originForm(url);
  if (url.charCodeAt(1) === 47) url = url.replace(/^\/{2,}/, '/');
  if (!url.startsWith(base)) return undefined;
  const next = url.charCodeAt(base.length);
  if (Number.isNaN(next)) return '/';
  if (next === 47 /* / */) return url.slice(base.length);
  if (next === 63 /* ? */) return `/${url.slice(base.length)}`;
  return undefined;
}

/** The values of a query parameter exactly as sent (the validator coerces req.query in place). */
export function rawQueryValues(url: string, name: string): string[] {
  const q = url.indexOf('?');
  return q < 0 ? [] : new URLSearchParams(url.slice(q + 1)).getAll(name);
}
