import type { ChangeReader } from '../snapshot/changes';
import { DIGEST_BYTES, digestMatches, etagText, GZ, KeyHasher, KeyTable, MAX_TAGS, parseEtag, SLOT_BYTES, tagHash, WILD } from './key-table';
import { TOKEN_SEPARATORS } from '../http/etag';

/**
 * The response cache's store (docs/response-cache.md): its bodies, its key table of validators
 * and one part per chain. An answer is valid until the data it read changes, not until the next
 * batch:
 *
 * - Its strong ETag is a hash of its bytes (the gzip stream assembled from stored rows, or the
 *   bytes sent) seeded with the chain's lineage and the wire format (src/http/etag.ts etagOf): the same answer has
 *   the same ETag across any number of batches and on every replica of the chain at the same
 *   state — followed, pulled or imported — so a conditional GET stays a 304 until the answer
 *   itself changes.
 * - Each answer the cache keeps carries the tags of what it read (its route's declared
 *   `reads`, src/routes/<resource>/routes.ts; src/snapshot/tags.ts names them) and the change sequence of the state it was computed on.
 *   A new state of the same file applies the change records committed since: each named tag's
 *   version moves to the record's sequence, and an answer is valid while every tag it read is no
 *   newer than its own state. Another file (hot swap, pull) or a gap in the records empties the
 *   chain's part.
 *
 * What is kept, per key (a chain, a normalized URL, a representation): its **validator** — the
 * ETag sent and what the answer read — in the key table (src/cache/key-table.ts, its own budget,
 * ≈ 85 bytes a key), and, when the byte budget and the admission policy allow, its **body**: the
 * bytes and header block the Express pipeline sent. A validator outlives its body: a conditional
 * GET whose ETag is the validator's is a 304 without reading a row (src/cache/front.ts), a body
 * also answers plain GETs. src/cache/fill.ts fills both; the front answers from them.
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
  /** answered since the CLOCK hand last passed it (see ResponseCache) */
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

/** Fixed overhead counted per body (the entry object, its header lists). */
const ENTRY_OVERHEAD = 256;
/**
 * Request counts are halved after this many counted requests per body the cache can hold (and
 * at least every AGE_MS): they measure recent demand (TinyLFU's sample window).
 */
const AGE_WINDOW_PER_BODY = 10;
const MIN_AGE_WINDOW = 10_240;
const AGE_MS = 60_000;
/** default key-table budget for a cache built alone (tests); serve passes --cache-validator-bytes (src/settings/serve.ts) */
const DEFAULT_VALIDATOR_BYTES = 32 * 1024 * 1024;
/** slot flag: the key holds a body but its ETag is not one etagOf writes (no validator 304s) */
const NO_VALIDATOR = 64;

/** A held body: the answer, where its key lives, and its id among the bodies. */
interface Body extends CachedResponse {
  h1: number;
  h2: number;
  part: CachePart;
  id: number;
}

/** What a store may keep (the admission decisions of httpCaching). */
export interface Keep {
  /** the body, if the byte budget and the admission policy let it in */
  body: boolean;
  /** the validator (without the body it is kept only when this is true) */
  validator: boolean;
}

const KEEP_ALL: Keep = { body: true, validator: true };

/**
 * The response cache of one serving process: a key table of validators (bounded by
 * `validatorBytes`) and the bodies of some of those keys (bounded by `maxBytes` and
 * `maxEntries`), shared by every chain the process serves — one part per chain (`part(chainId)`,
 * with its own file state and tag versions; a replica of one chain uses the part '').
 *
 * **Eviction.** Bodies are looked at in CLOCK order (a body answered since the hand last passed
 * gets a second chance); a stale one (something it read changed) goes first. A new body takes
 * the place of the bodies the hand offers only if its key was requested at least two times more
 * recently than each of theirs (request counts per key in the table, halved every
 * AGE_WINDOW_PER_BODY × capacity requests and every AGE_MS: TinyLFU's frequency-based admission
 * with a margin). A population that polls in turn — every key asked for once a cycle, the worst
 * case of least-recently-used eviction, which then never hits — keeps the bodies it has (they
 * are asked for as often as any newcomer) instead of replacing each one just before it is asked
 * for again: the share of polls answered from a body is the share of bodies that fit
 * (docs/response-cache.md#eviction, test/cache/caching.test.ts). Validators are evicted in CLOCK
 * order over the table, stale ones first, keys without a body before keys with one.
 */
export class ResponseCache {
  readonly table: KeyTable;
  readonly hasher = new KeyHasher();
  private readonly bodies: (Body | undefined)[] = [];
  private readonly freeIds: number[] = [];
  private bodyHand = 0;
  private bodyCount = 0;
  private used = 0;
  private readonly parts = new Map<string, CachePart>();
  /** parts by index (the key table's part field); undefined: free */
  private readonly partList: (CachePart | undefined)[] = [];
  private readonly routeIds = new Map<string, number>();
  private readonly routeNames: string[] = [];
  private readonly templateIds = new Map<string, number>();
  private readonly templateLists: (string | undefined)[][] = [];
  /** the part of a replica of one chain */
  private readonly root: CachePart;
  /** no single body larger than this is stored (a few huge pages must not flush everything) */
  readonly maxEntryBytes: number;
  /** GET/HEAD answered from a held body (a 200, or a 304 on a matching If-None-Match) */
  hits = 0;
  /** conditional GETs answered 304 from a validator alone (no body held, no row read) */
  validatorHits = 0;
  /** of those, the 304s decided from the file's tag versions, the key not yet held (a restart, a new file, another worker) */
  versionHits = 0;
  misses = 0;
  /** answers whose body was not stored: a first sighting of the URL, or less asked for than what it would replace */
  notAdmitted = 0;
  /** keys dropped because a change record named what they read (found when next looked at) */
  invalidated = 0;
  /** times a part's keys were emptied: another file, or a state without readable change records */
  flushes = 0;
  private readonly doorkeeper: Doorkeeper | undefined;
  private readonly digest = new Uint8Array(DIGEST_BYTES);
  private requests = 0;
  private agedAt = Date.now();

  /**
   * `admitOnSecondSight` (the default): a URL's answer is kept only when the URL is requested the
   * second time (TinyLFU's "doorkeeper") or revalidated with a matching ETag: a crawler's one-off
   * URLs then cost a miss a hash and a bit-set lookup, not a copy of the body nor a validator.
   * `validatorBytes`: the key table's budget — every key kept, with or without its body (0: no
   * response cache at all).
   */
  constructor(
    readonly maxBytes: number,
    readonly maxEntries = Infinity,
    admitOnSecondSight = true,
    validatorBytes = DEFAULT_VALIDATOR_BYTES,
  ) {
    this.maxEntryBytes = Math.floor(maxBytes / 8);
    this.table = new KeyTable(Math.floor(validatorBytes / SLOT_BYTES));
    this.doorkeeper = admitOnSecondSight ? new Doorkeeper(DOORKEEPER_BITS) : undefined;
    this.root = this.part('');
  }

  /** The part of chain `id` ('' for a replica of one chain), made on first use. */
  part(id: string): CachePart {
    let p = this.parts.get(id);
    if (p === undefined) {
      let index = this.partList.indexOf(undefined);
      if (index < 0) index = this.partList.push(undefined) - 1;
      p = new CachePart(this, index);
      this.partList[index] = p;
      this.parts.set(id, p);
    }
    return p;
  }

  /** Forgets chain `id` (its file left the replica): its keys and bodies are dropped. */
  dropPart(id: string): void {
    const p = this.parts.get(id);
    if (p === undefined || p === this.root) return;
    p.clear();
    this.parts.delete(id);
    this.partList[p.index] = undefined;
  }

  /** @internal whether a key was seen before (admission); a first sighting is remembered */
  admitKey(h1: number, h2: number): boolean {
    if (this.doorkeeper === undefined || this.doorkeeper.seen(h1, h2)) return true;
    this.notAdmitted++;
    return false;
  }

  /** bodies held */
  get size(): number {
    return this.bodyCount;
  }
  /** bytes counted against the body cap */
  get bytes(): number {
    return this.used;
  }
  /** keys known: validators, with or without a body */
  get validators(): number {
    return this.table.count;
  }
  /** bytes of the key table (its slots) and of the parts' tag versions */
  get validatorBytes(): number {
    let b = this.table.bytes;
    for (const p of this.parts.values()) b += p.versionBytes;
    return b;
  }

  /** The root part's (a replica of one chain): see CachePart. */
  admit(url: string): boolean {
    return this.root.admit(url);
  }
  sync(s: CacheState): void {
    this.root.sync(s);
  }
  get(key: string): CachedResponse | undefined {
    return this.root.get(key);
  }
  set(s: CacheState, key: string, entry: Omit<CachedResponse, 'size' | 'deps'>, deps: readonly string[] | undefined): void {
    this.root.set(s, key, entry, deps);
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

  /** @internal the held body of slot `i` */
  bodyOf(i: number): CachedResponse | undefined {
    const id = this.table.body[i];
    return id < 0 ? undefined : this.bodies[id];
  }

  /**
   * @internal the ETag to send when `ifNoneMatch` matches the validator of slot `i` (RFC 9110
   * section 13.1.2: weak comparison, a list, `*`), else undefined.
   */
  matchValidator(i: number, ifNoneMatch: string): string | undefined {
    const t = this.table;
    const f = t.flags[i];
    if ((f & NO_VALIDATOR) !== 0) return undefined;
    const off = i * DIGEST_BYTES;
    const gz = (f & GZ) !== 0;
    const len = gz ? 32 : 29;
    // one strong ETag, what browsers and fetch() send back: compared in place
    if (ifNoneMatch.length === len) return tokenMatches(ifNoneMatch, 0, len, t.digest, off, gz) ? ifNoneMatch : undefined;
    if (ifNoneMatch.trim() === '*') return etagText(t.digest, off, gz);
    for (const raw of ifNoneMatch.split(TOKEN_SEPARATORS)) {
      const token = raw.startsWith('W/') ? raw.slice(2) : raw;
      if (token.length === len && tokenMatches(token, 0, len, t.digest, off, gz)) return token;
    }
    return undefined;
  }

  /** @internal the 304 header list of slot `i`'s validator (its ETag's value left to the caller: index 1 of the pair after 'ETag') */
  template(i: number): (string | undefined)[] {
    return this.templateLists[this.table.tpl[i]];
  }
  /** @internal the route (its id) slot `i` answered */
  routeIdOf(i: number): number {
    return this.table.route[i];
  }
  /** @internal the route pattern of a route id */
  routeName(id: number): string {
    return this.routeNames[id];
  }

  /** @internal a request for slot `i`: its count, its CLOCK bit, and the counts' aging */
  touch(i: number): void {
    this.table.touch(i);
    const id = this.table.body[i];
    if (id >= 0) (this.bodies[id] as Body).used = true;
    if (++this.requests >= Math.max(MIN_AGE_WINDOW, AGE_WINDOW_PER_BODY * this.bodyCount)) this.age();
    else if ((this.requests & 1023) === 0 && Date.now() - this.agedAt >= AGE_MS) this.age();
  }

  private age(): void {
    this.requests = 0;
    this.agedAt = Date.now();
    this.table.age();
  }

  /** @internal drops slot `i` and its body */
  drop(i: number): void {
    const p = this.partList[this.table.part[i]];
    const id = this.table.body[i];
    if (id >= 0) this.freeBody(id);
    this.table.remove(i);
    if (p !== undefined) p.count--;
  }

  /**
   * @internal keeps `entry` for the key (h1, h2) of part `p`, computed on change sequence `asOf`,
   * having read the tags `tags` (hashed; undefined: everything).
   */
  keep(
    p: CachePart,
    h1: number,
    h2: number,
    asOf: number,
    entry: Omit<CachedResponse, 'size' | 'deps'>,
    deps: readonly string[] | undefined,
    tags: number[] | undefined,
    keep: Keep,
    seen: boolean,
  ): void {
    const t = this.table;
    let i = t.find(h1, h2, p.index);
    const parsed = parseEtag(entry.etag, this.digest);
    const size = entry.body.length + ENTRY_OVERHEAD;
    const bodyFits = keep.body && size <= this.maxEntryBytes && this.maxEntries > 0;
    if (i < 0) {
      if (!(keep.validator && parsed) && !bodyFits) return;
      i = t.slot(h1, h2, p.index, () => this.evictKey());
      if (i < 0) return;
      p.count++;
      p.grow();
      t.freq[i] = seen ? 2 : 1;
    }
    t.setValidator(i, asOf, this.digest, parsed?.gz ?? false, tags, this.routeId(entry.route), this.templateId(entry.headers304));
    if (!parsed) t.flags[i] |= NO_VALIDATOR;
    // the body held for an earlier answer of this key is not this one
    const old = t.body[i];
    if (old >= 0) this.freeBody(old);
    const freq = t.freq[i];
    if (!bodyFits || !this.makeRoom(size, freq)) {
      if (bodyFits) this.notAdmitted++;
      if (!parsed) this.drop(t.find(h1, h2, p.index));
      return;
    }
    // makeRoom may have dropped stale keys, moving others in the table
    i = t.find(h1, h2, p.index);
    if (i < 0) return;
    let id = this.freeIds.pop();
    if (id === undefined) id = this.bodies.length;
    const body: Body = { ...entry, deps, used: false, size, h1, h2, part: p, id };
    this.bodies[id] = body;
    t.body[i] = id;
    this.bodyCount++;
    p.bodies++;
    this.used += size;
  }

  /**
   * Frees bodies until one of `size` bytes fits: stale ones, then those the CLOCK hand offers if
   * the newcomer's count (`freq`) beats each by at least 2. False (nothing freed but stale
   * bodies) when it does not.
   */
  private makeRoom(size: number, freq: number): boolean {
    const t = this.table;
    const over = (): boolean => this.used + size > this.maxBytes || this.bodyCount + 1 > this.maxEntries;
    if (!over()) return true;
    const victims: number[] = [];
    let freed = 0;
    let count = 0;
    let steps = 0;
    const limit = 2 * this.bodies.length + 2;
    while (this.used - freed + size > this.maxBytes || this.bodyCount - count + 1 > this.maxEntries) {
      if (++steps > limit) return false;
      if (this.bodyHand >= this.bodies.length) this.bodyHand = 0;
      const b = this.bodies[this.bodyHand++];
      if (b === undefined || victims.includes(b.id)) continue;
      const i = t.find(b.h1, b.h2, b.part.index);
      if (i < 0) continue;
      if (!b.part.valid(i)) {
        // stale: goes without a contest
        this.invalidated++;
        this.drop(i);
        if (!over()) return true;
        continue;
      }
      if (b.used) {
        b.used = false;
        continue;
      }
      if (freq <= t.freq[i] + 1) return false;
      victims.push(b.id);
      freed += b.size;
      count++;
    }
    for (const id of victims) this.freeBody(id);
    return true;
  }

  /** Frees one slot of the key table (it is full): stale first, then CLOCK, keys without a body first. */
  private evictKey(): void {
    const t = this.table;
    const cap = t.cap;
    for (let steps = 0; steps < 3 * cap; steps++) {
      if (t.hand >= cap) t.hand = 0;
      const i = t.hand++;
      if (t.h1[i] === 0) continue;
      const p = this.partList[t.part[i]];
      if (p === undefined || !p.valid(i)) {
        if (p !== undefined) this.invalidated++;
        this.drop(i);
        return;
      }
      if (t.usedBit(i)) {
        t.clearUsed(i);
        continue;
      }
      if (t.body[i] >= 0 && steps < cap) continue;
      this.drop(i);
      return;
    }
  }

  private freeBody(id: number): void {
    const b = this.bodies[id];
    if (b === undefined) return;
    this.bodies[id] = undefined;
    this.freeIds.push(id);
    this.bodyCount--;
    b.part.bodies--;
    this.used -= b.size;
    const i = this.table.find(b.h1, b.h2, b.part.index);
    if (i >= 0 && this.table.body[i] === id) this.table.body[i] = -1;
  }

  /** @internal the id of a route pattern (metrics) */
  routeId(route: string): number {
    let id = this.routeIds.get(route);
    if (id === undefined) {
      id = this.routeNames.push(route) - 1;
      this.routeIds.set(route, id);
    }
    return id;
  }

  /** The 304 header list with the ETag's value left out, interned (a handful per process). */
  private templateId(headers304: string[]): number {
    const list = headers304.map((h, n) => (n % 2 === 1 && headers304[n - 1].toLowerCase() === 'etag' ? undefined : h));
    const key = list.map((h) => h ?? '\u0000').join('\u0001');
    let id = this.templateIds.get(key);
    if (id === undefined) {
      id = this.templateLists.push(list) - 1;
      this.templateIds.set(key, id);
    }
    return id;
  }

  /** @internal removes every key of part `p` */
  sweep(p: CachePart): void {
    if (p.count === 0) return;
    this.table.forEach((i) => {
      if (this.table.part[i] === p.index) this.drop(i);
    });
  }
}

/** Whether `text[at, at+len)` is the ETag `"<digest>"` (or `"<digest>-gz"` when gz). */
function tokenMatches(text: string, at: number, len: number, digest: Uint8Array, off: number, gz: boolean): boolean {
  if (text.charCodeAt(at) !== 34 || text.charCodeAt(at + len - 1) !== 34) return false;
  if (gz && (text.charCodeAt(at + len - 4) !== 45 || text.charCodeAt(at + len - 3) !== 103 || text.charCodeAt(at + len - 2) !== 122)) return false;
  return digestMatches(text, at + 1, digest, off);
}

/** tag versions per part: buckets of the tags' hashes, grown with the part's keys */
const MIN_VERSION_BUCKETS = 1024;

/**
 * One chain's share of a ResponseCache: the state its keys are valid for, and its tag versions.
 *
 * Validity: the part reflects one state of one file (`sync`). A newer state of the same file
 * applies its change records: each named tag's version (a bucket of its hash: two tags sharing
 * a bucket only drop each other's answers, never keep one) becomes the record's sequence; a key
 * computed on sequence S is valid while every tag it read has a version ≤ S — checked when the
 * key is looked at, so a batch costs what its records name, not what the cache holds. A state
 * whose records cannot all be read (pruned, or a file written without them) or that renders the
 * rows again empties the part; another file empties it and forgets its state. An answer computed
 * on an older state (a request in flight across a batch) is kept only if nothing it read changed
 * since that state — the same rule.
 */
export class CachePart {
  /** the state the keys are valid for */
  private fileKey: string | undefined;
  private seq = 0;
  private last: CacheState | undefined;
  /** keys computed before this sequence are not valid (the last flush) */
  private floor = 0;
  /** the last record applied: the version of what no tag names (answers of unknown deps) */
  private wildSeq = 0;
  private versions = new Uint32Array(MIN_VERSION_BUCKETS);
  private mask = MIN_VERSION_BUCKETS - 1;
  /** keys of this part in the table (its validators) */
  count = 0;
  /** bodies of this part held */
  bodies = 0;

  constructor(
    private readonly cache: ResponseCache,
    readonly index: number,
  ) {}

  /** bodies held for this part */
  get size(): number {
    return this.bodies;
  }
  get versionBytes(): number {
    return this.versions.byteLength;
  }

  /** Whether a 200 for `url` should be kept (ResponseCache.admitKey): seen before. */
  admit(url: string): boolean {
    const h1 = this.cache.hasher.hash(url, this.index * 2);
    return this.cache.admitKey(h1, this.cache.hasher.h2);
  }

  /**
   * Brings the keys to state `s` (the snapshot a request is answered from): nothing when it is
   * the state they are for (one comparison: the per-request cost), the change records since for
   * a newer state of the same file, a flush for another file. An older state changes nothing.
   */
  sync(s: CacheState): void {
    if (s === this.last) return;
    if (s.fileKey !== this.fileKey) {
      this.clear();
      this.fileKey = s.fileKey;
      this.seq = s.changeSeq;
      this.floor = s.changeSeq;
      this.wildSeq = s.changeSeq;
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
    else {
      for (const r of records) {
        for (const tag of r.tags) {
          const b = tagHash(tag) & this.mask;
          this.versions[b] = r.seq;
        }
        this.wildSeq = r.seq;
      }
    }
    this.seq = s.changeSeq;
    this.last = s;
  }

  /**
   * The slot of the key (`url`, gzip or identity) when the cache holds it valid for the current
   * state, counting the request (Call sync first); -1 otherwise. A stale key is dropped here.
   */
  lookup(url: string, gzip: boolean): number {
    const c = this.cache;
    const h1 = c.hasher.hash(url, this.index * 2 + (gzip ? 1 : 0));
    const i = c.table.find(h1, c.hasher.h2, this.index);
    if (i < 0) return -1;
    if (!this.valid(i)) {
      c.invalidated++;
      c.drop(i);
      return -1;
    }
    c.touch(i);
    return i;
  }

  /** The held body for key `key` (identity representation), counted as a hit; tests and tools. */
  get(key: string): CachedResponse | undefined {
    const i = this.lookup(key, false);
    const body = i < 0 ? undefined : this.cache.bodyOf(i);
    if (body !== undefined) this.cache.hits++;
    return body;
  }

  /** Keeps the answer for `key` (identity) with its body and validator (tests and tools; the app uses keep). */
  set(s: CacheState, key: string, entry: Omit<CachedResponse, 'size' | 'deps'>, deps: readonly string[] | undefined): void {
    this.keep(s, key, false, entry, deps, KEEP_ALL, true);
  }

  /**
   * Keeps what `keep` allows of a 200 for (`url`, `gzip`) computed on state `s` that read `deps`
   * (undefined: unknown). Ignored for another file, or for an older state when something it read
   * changed since (or cannot be told). `seen`: the URL was requested before (admission).
   */
  keep(
    s: CacheState,
    url: string,
    gzip: boolean,
    entry: Omit<CachedResponse, 'size' | 'deps'>,
    deps: readonly string[] | undefined,
    keep: Keep,
    seen: boolean,
  ): void {
    if (s.fileKey !== this.fileKey) return;
    this.sync(s);
    if (s.changeSeq < this.floor) return;
    const tags = deps === undefined || deps.length > MAX_TAGS ? undefined : deps.map(tagHash);
    if (s !== this.last) {
      // computed on an older state (or a commit of the same records whose changes are unknown)
      if (s.changeSeq === this.seq || tags === undefined || !this.unchangedSince(tags, s.changeSeq)) return;
    }
    const c = this.cache;
    const h1 = c.hasher.hash(url, this.index * 2 + (gzip ? 1 : 0));
    c.keep(this, h1, c.hasher.h2, s.changeSeq, entry, deps, tags, keep, seen);
  }

  /** @internal whether slot `i` (a key of this part) is valid for the current state */
  valid(i: number): boolean {
    const t = this.cache.table;
    const asOf = t.asOf[i];
    if (asOf < this.floor) return false;
    const f = t.flags[i];
    if ((f & WILD) !== 0) return this.wildSeq <= asOf;
    const n = t.tagCount(i);
    const v = this.versions;
    const m = this.mask;
    for (let k = 0; k < n; k++) if (v[t.tags[i * MAX_TAGS + k] & m] > asOf) return false;
    return true;
  }

  /** @internal the tag versions grow with the keys (fewer tags sharing a bucket); old buckets carry over */
  grow(): void {
    if (this.count <= this.versions.length || this.versions.length >= 1 << 22) return;
    const size = this.versions.length * 4;
    const next = new Uint32Array(size);
    // a tag's new bucket (hash & new mask) maps onto its old one (hash & old mask): same version or newer
    for (let b = 0; b < size; b++) next[b] = this.versions[b & this.mask];
    this.versions = next;
    this.mask = size - 1;
  }

  private unchangedSince(tags: number[], seq: number): boolean {
    for (const t of tags) if (this.versions[t & this.mask] > seq) return false;
    return true;
  }

  /** The keys, not the file: after changes that cannot be told (see sync). */
  private dropAll(seq: number): void {
    this.cache.flushes++;
    this.cache.sweep(this);
    this.floor = seq;
    this.wildSeq = seq;
    this.versions.fill(0);
  }

  /**
   * Empties the part and forgets its state; the root part (a replica of one chain) also forgets
   * the URLs seen once — another file is another set of URLs. A part of one chain of several
   * leaves the filter to the others.
   */
  clear(): void {
    if (this.count > 0) this.cache.flushes++;
    if (this.index === 0) this.cache.forgetSeen();
    this.cache.sweep(this);
    this.fileKey = undefined;
    this.last = undefined;
    this.seq = 0;
    this.floor = 0;
    this.wildSeq = 0;
    this.versions.fill(0);
  }
}

/** 2^20 bits (128 KiB): ~100k distinct URLs remembered at < 10 % false "seen before". */
const DOORKEEPER_BITS = 1 << 20;

/**
 * A Bloom filter of URLs seen once (two probes, from the key's two hash lanes), reset when a
 * quarter of its bits are set so that old one-off URLs age out. A false "seen" only means a
 * one-off URL is kept, as without admission.
 */
class Doorkeeper {
  private readonly bits: Uint32Array;
  private set = 0;
  constructor(private readonly size: number) {
    this.bits = new Uint32Array(size >>> 5);
  }

  /** Whether the key (h1, h2) was seen since the last reset; records it. */
  seen(h1: number, h2: number): boolean {
    const a = h1 & (this.size - 1);
    const b = h2 & (this.size - 1);
    const hadA = this.test(a);
    const hadB = this.test(b);
    if (hadA && hadB) return true;
    if (this.set >= this.size >>> 2) this.clear();
    this.mark(a);
    this.mark(b);
    return false;
  }

  clear(): void {
    this.bits.fill(0);
    this.set = 0;
  }

  private test(i: number): boolean {
    return (this.bits[i >>> 5] & (1 << (i & 31))) !== 0;
  }
  private mark(i: number): void {
    if (!this.test(i)) {
      this.bits[i >>> 5] |= 1 << (i & 31);
      this.set++;
    }
  }
}
