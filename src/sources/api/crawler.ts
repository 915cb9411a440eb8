/**
 * The crawl's steps (Crawler), each fetching one kind of data into its staging table: blocks,
 * txs and their sequence probes, NFT collections and tokens (or, for follow, only the changed
 * ones), NFT ↔ tx links, EVM and internal txs, rich lists. The order they run in is crawlInto's
 * (./source.ts).
 */
import type Database from 'better-sqlite3';
import type { ImportProgress } from '../../records/from-dump';
import type { VmType } from '../../lib/vm';
import { rawMembers } from '../../lib/raw-json';
import type { NftChangesSince } from '../../records/source';
import { AccountDeriver, nftKeysOfEvents } from '../../records/derive';
import { canonicalAddress } from '../../lib/address';
import { HttpClient, HttpError, forEachConcurrent } from '../http';
import { cursorValue, key, listUrl, members, PAGE, parseJson, Status, TX_FACTS, TxFacts, txFacts } from './answers';
import type { ApiSourceOptions } from './options';
import { type CrawlState, type Cursor, packBytes } from './resume';
import { type ByteList, byteList } from './scan';
import { readRichList } from './richlist';
import type { Staging } from './staging';

/** The collections newest first (by height): the new ones of a follow batch. */
const NEWEST_COLLECTIONS = '/indexer/nft/v1/collections?pagination.reverse=true&pagination.count_total=false';

/** Crawler.startAhead's requests. */
export interface Ahead {
  blocks: Promise<void>;
  probes?: Promise<[TxFacts | undefined, TxFacts | undefined]>;
  newest?: Promise<ReturnType<typeof members>>;
}

/**
 * Requests started ahead of the step that reads their answers (ApiSourceOptions.overlap): a
 * failure is thrown where that step awaits it, never as an unhandled rejection, and a failed
 * crawl waits for all of them before its staging is closed.
 */
export class Inflight {
  private readonly all: Promise<unknown>[] = [];

  start<T>(p: Promise<T>): Promise<T> {
    const settled = p.then(
      () => undefined,
      () => undefined,
    );
    this.all.push(settled);
    return p;
  }

  settle(): Promise<unknown> {
    return Promise.all(this.all);
  }
}

/** The crawl's steps, each fetching one kind of data into its staging table. */
export class Crawler {
  private readonly progress: ImportProgress | undefined;
  /** changedTokens: collections (lower-case hex) whose tokens were read whole (a burn in them) */
  completeCollections = new Set<string>();

  constructor(
    private readonly staging: Staging,
    private readonly http: HttpClient,
    private readonly concurrency: number,
    private readonly o: ApiSourceOptions,
    private readonly base: string,
    private readonly inflight: Inflight,
    /** a resumable crawl's committed state: what it holds is not asked again (./resume.ts) */
    private readonly state?: CrawlState,
  ) {
    this.progress = o.progress;
    this.listPage = o.listPage ?? PAGE;
    this.historyPage = o.historyPage ?? PAGE;
  }

  private readonly listPage: number;
  /** heights per block page, txs per tx page */
  private readonly historyPage: number;

  /** The progress of a stage that knows its size: `total` rows, `carried` of them staged by an earlier run. */
  private expect(total: number, carried: number): void {
    this.progress?.expect?.(total, carried);
  }

  /** the staging connection now (another one after a spill to the file) */
  private get db(): Database.Database {
    return this.staging.db;
  }

  /**
   * ApiSourceOptions.overlap: what needs no earlier answer, started before /status is read —
   * the blocks of from..to, the two tx probes at the base's last sequence, the first page of
   * the collections newest first (changedTokens).
   */
  startAhead(from: number, to: number): Ahead {
    const hint = this.o.txSequenceAfter;
    const probes =
      hint !== undefined && Number.isSafeInteger(hint) && hint >= 0
        ? this.inflight.start(Promise.all([this.probe(hint), hint === 0 ? Promise.resolve(undefined) : this.probe(hint - 1)]))
        : undefined;
    const newest = this.o.nftChangesSince ? this.inflight.start(this.page(listUrl(NEWEST_COLLECTIONS, 25, null), 'collections')) : undefined;
    return { blocks: this.inflight.start(this.blocks(from, to)), probes, newest };
  }

  /** GET `path`, parsed as JSON. */
  private async getJson<T>(path: string): Promise<T> {
    return parseJson<T>(this.base + path, await this.http.get(path));
  }

  /** GET `path`, its `name` array and pagination. */
  private async page(path: string, name: string): Promise<ReturnType<typeof members>> {
    return members(this.base + path, await this.http.get(path), name);
  }

  /**
   * Every page of a list, in order, following `next_key` (docs/api-contract.md#deep-offsets):
   * our server refuses offsets past 10,000 on these lists and answers cursors at the cost of a
   * first page; rollytics' offset-style next_key is an offset it carries out. So the same crawl
   * works against both. `limit(n)`: the n-th page's limit (a cursor, and an offset key, do not
   * depend on the previous page's limit). `fn` returns true to stop early.
   */
  private async eachPage(
    path: string,
    name: string,
    limit: (n: number) => number,
    fn: (url: string, page: ReturnType<typeof members>) => boolean | void,
    first?: Promise<ReturnType<typeof members>>,
    cursor?: string,
  ): Promise<void> {
    // a resumable crawl goes on from the list's committed cursor (`cursor` names the list)
    const state = cursor === undefined ? undefined : this.state;
    const at: Cursor | undefined = state?.cursor(cursor as string);
    if (at?.done) return;
    let nextKey: string | null = at?.nextKey ?? null;
    for (let n = 0; ; n++) {
      const lim = limit(n);
      const url = listUrl(path, lim, nextKey);
      // `first`: page 0 (at this url, this limit) already asked for (startAhead)
      const page = n === 0 && first !== undefined && at === undefined ? await first : await this.page(url, name);
      const last = page.items.length < lim || page.nextKey === null;
      let stop = false;
      // the page's rows and the list's new cursor in one transaction (fn's own nests in it)
      this.db.transaction(() => {
        stop = fn(this.base + url, page) === true;
        state?.saveCursor(cursor as string, { nextKey: page.nextKey, pos: 0, done: stop || last });
      })();
      if (stop || last) return;
      nextKey = page.nextKey;
    }
  }

  /** /status: chain id, build, heights. */
  async status(): Promise<Status> {
    const status = await this.getJson<Status>('/status');
    if (typeof status.chain_id !== 'string' || !Number.isSafeInteger(status.height)) {
      throw new Error(`GET ${this.base}/status: not a rollytics /status answer (need chain_id and height)`);
    }
    return status;
  }

  /** Blocks (and the validators they show): height-cursor pages, each covering at most PAGE heights, fetched in parallel. */
  async blocks(from: number, to: number): Promise<void> {
    const { db, base, progress, state } = this;
    const PAGE = this.historyPage;
    progress?.stage('crawl blocks');
    const insBlock = db.prepare('INSERT OR IGNORE INTO blocks (height, text, seconds, block_time, tx_count) VALUES (?, ?, ?, ?, ?)');
    const insValidator = db.prepare('INSERT OR IGNORE INTO validators (operator, moniker) VALUES (?, ?)');
    const starts: number[] = [];
    let carried = 0;
    for (let h = from - 1; h < to; h += PAGE) {
      // a page a previous run staged (whole, in one transaction) is not asked again
      const n = Math.min(h + PAGE, to) - h;
      if (state !== undefined && state.blocksStaged(h, h + n) === n) carried += n;
      else starts.push(h);
    }
    this.expect(to - from + 1, carried);
    await forEachConcurrent(starts, this.concurrency, async (after) => {
      const path = `/indexer/block/v1/blocks?pagination.limit=${PAGE}&pagination.reverse=false&pagination.key=${key({ height: after })}`;
      const page = await this.page(path, 'blocks');
      let n = 0;
      db.transaction(() => {
        for (const text of page.items) {
          const b = parseJson<{
            chain_id: string;
            height: string;
            hash: string;
            block_time: string;
            timestamp: string;
            gas_used: string;
            gas_wanted: string;
            tx_count: string;
            total_fee: unknown;
            proposer?: { moniker?: string; operator_address?: string };
          }>(base + path, text);
          const height = Number(b.height);
          if (!(height > after && height <= Math.min(after + PAGE, to))) continue;
          const operator = b.proposer?.operator_address ?? '';
          if (b.proposer?.moniker) insValidator.run(operator, b.proposer.moniker);
          insBlock.run(
            height,
            JSON.stringify({
              height,
              chain_id: b.chain_id,
              hash: b.hash,
              block_time: b.block_time,
              proposer: operator,
              gas_used: b.gas_used,
              gas_wanted: b.gas_wanted,
              tx_count: b.tx_count,
              total_fee: b.total_fee,
            }),
            b.timestamp,
            Number(b.block_time),
            Number(b.tx_count),
          );
          n++;
        }
      })();
      progress?.records(n);
    });
  }

  /**
   * Txs (and the exact times of the blocks holding them). The API shows a tx's sequence only
   * inside next_key cursors (and an implementation may omit next_key on a last page), so
   * sequences are pinned with probes instead: probe(X) = the first tx with sequence > X (a 1-row
   * page from the cursor {"sequence":X}). rollytics numbers txs without gaps, so the first tx of
   * the range is the smallest X whose probe lands at height ≥ from, plus one; the last is that
   * plus the blocks' tx counts. Every page of 1000 is then checked with two probes (its last row
   * must have exactly the expected sequence).
   */
  async txs(from: number, to: number, ahead?: Promise<[TxFacts | undefined, TxFacts | undefined]>): Promise<void> {
    const { db, progress, state } = this;
    const PAGE = this.historyPage;
    const txBlocks = db.prepare('SELECT count(*) AS n, coalesce(sum(tx_count), 0) AS txs, min(height) AS lo FROM blocks WHERE tx_count > 0').get() as {
      n: number;
      txs: number;
      lo: number | null;
    };
    progress?.stage('crawl txs');
    const insTx = db.prepare('INSERT OR IGNORE INTO txs (sequence, height, hash, text) VALUES (?, ?, ?, ?)');
    const insTime = db.prepare('INSERT OR IGNORE INTO block_times (height, ts) VALUES (?, ?)');
    const insPage = db.prepare('INSERT OR IGNORE INTO tx_pages (first, texts, lengths) VALUES (?, ?, ?)');
    const txPage = (after: number, limit: number): Promise<{ url: string; list: ByteList; facts: TxFacts[] }> => this.txPage(after, limit);
    const probe = (after: number): Promise<TxFacts | undefined> => this.probe(after);
    if (!(txBlocks.n > 0 && txBlocks.lo !== null)) return;
    const firstHeight = txBlocks.lo;
    const lands = (t: TxFacts | undefined): boolean => t === undefined || t.height >= firstHeight;
    const reaches = async (x: number): Promise<boolean> => lands(await probe(x));
    // The smallest X that reaches the range (reaches() is monotone): the base's last sequence
    // when it checks out, else searched.
    const hint = this.o.txSequenceAfter;
    // a resumed crawl: the first sequence its earlier run found
    const found = state?.get('first_tx_sequence');
    let hiX = found === undefined ? -1 : Number(found) - 1;
    if (hiX < 0 && hint !== undefined && Number.isSafeInteger(hint) && hint >= 0) {
      const [t, tBelow] = await (ahead ?? Promise.all([probe(hint), hint === 0 ? Promise.resolve(undefined) : probe(hint - 1)]));
      if (lands(t) && !(hint > 0 && lands(tBelow))) hiX = hint;
    }
    if (hiX < 0) {
      hiX = 1;
      while (!(await reaches(hiX))) hiX *= 2;
      let loX = 0;
      if (await reaches(0)) hiX = 0;
      while (hiX - loX > 1) {
        const mid = Math.floor((loX + hiX) / 2);
        if (await reaches(mid)) hiX = mid;
        else loX = mid;
      }
    }
    const lo = hiX + 1;
    if (state !== undefined && found === undefined) state.set('first_tx_sequence', String(lo));
    const hi = lo - 1 + txBlocks.txs;
    const pages: number[] = [];
    let carried = 0;
    for (let s = lo - 1; s < hi; s += PAGE) {
      const n = Math.min(s + PAGE, hi) - s;
      if (state !== undefined && state.txsStaged(s, s + n) === n) carried += n;
      else pages.push(s);
    }
    this.expect(txBlocks.txs, carried);
    await forEachConcurrent(pages, this.concurrency, async (after) => {
      const end = Math.min(after + PAGE, hi);
      const n = end - after;
      const page = await txPage(after, n);
      const { facts, list } = page;
      const lastHash = facts[facts.length - 1]?.hash;
      const [atLast, beyond] = await Promise.all([probe(end - 1), probe(end)]);
      if (facts.length !== n || atLast?.hash !== lastHash || beyond?.hash === lastHash || facts.some((f) => f.height < from || f.height > to)) {
        throw new HttpError(
          page.url,
          200,
          `GET ${page.url}: txs ${after + 1}..${end} are not the gap-free sequence range of heights ${from}..${to} ` +
            `this crawler needs (got ${facts.length} txs; rollytics numbers txs 1, 2, 3, ... without gaps)`,
        );
      }
      // a resumable crawl (an import) stages the page's texts as one compressed row (tx_pages),
      // their bytes as served
      const packed = state !== undefined ? packBytes(list.body, list.items) : undefined;
      db.transaction(() => {
        list.items.forEach((item, i) => {
          const f = facts[i];
          insTx.run(after + 1 + i, f.height, f.hash, packed === undefined ? list.body.toString('utf8', item.start, item.end) : '');
          if (typeof f.timestamp === 'string') insTime.run(f.height, f.timestamp);
        });
        if (packed !== undefined) insPage.run(after + 1, packed.texts, packed.lengths);
      })();
      progress?.records(n);
    });
    db.exec('CREATE INDEX IF NOT EXISTS txs_by_hash ON txs (hash)');
  }

  /** The mean size in bytes of the newest txs served (up to 100; 0 when there are none): one request. */
  async servedTxBytes(): Promise<number> {
    const path = '/indexer/tx/v1/txs?pagination.limit=100&pagination.reverse=true&pagination.count_total=false';
    const items = members(this.base + path, await this.http.get(path), 'txs').items;
    return items.length === 0 ? 0 : items.reduce((n, t) => n + Buffer.byteLength(t), 0) / items.length;
  }

  /** The staged blocks. */
  blockCount(): number {
    return this.db.prepare('SELECT count(*) FROM blocks').pluck().get() as number;
  }

  /** The txs of the staged blocks (their tx_count). */
  txCount(): number {
    return this.db.prepare('SELECT coalesce(sum(tx_count), 0) FROM blocks').pluck().get() as number;
  }

  /** A page of `limit` txs after sequence `after`: where each is in the body, and what the crawl reads of it. */
  private async txPage(after: number, limit: number): Promise<{ url: string; list: ByteList; facts: TxFacts[] }> {
    const path = `/indexer/tx/v1/txs?pagination.limit=${limit}&pagination.reverse=false&pagination.count_total=false&pagination.key=${key({ sequence: after })}`;
    const url = this.base + path;
    const list = byteList(url, await this.http.getBytes(path), 'txs', TX_FACTS);
    return { url, list, facts: list.items.map((t) => txFacts(url, t.fields)) };
  }

  /** probe(X): the first tx with sequence > X (undefined: none). */
  private async probe(after: number): Promise<TxFacts | undefined> {
    const p = await this.txPage(after, 1);
    return p.facts[0];
  }

  /** NFT collections: pages by key, one after the other; their addresses in (height, addr) order. */
  async collections(): Promise<string[]> {
    const { db, progress } = this;
    progress?.stage('crawl collections');
    const ins = this.collectionInsert();
    await this.eachPage(
      '/indexer/nft/v1/collections?pagination.reverse=false',
      'collections',
      () => this.listPage,
      (url, page) => {
        db.transaction(() => {
          for (const text of page.items) this.stageCollection(ins, url, text);
        })();
        progress?.records(page.items.length);
      },
      undefined,
      'collections',
    );
    return db.prepare('SELECT addr FROM collections ORDER BY height, addr').pluck().all() as string[];
  }

  private collectionInsert(): Database.Statement {
    return this.db.prepare('INSERT OR IGNORE INTO collections (addr, height, nft_count, text) VALUES (?, ?, ?, ?)');
  }

  /** A served Collection as a staged collections row (a dump record); its staged address and height. */
  private stageCollection(ins: Database.Statement, url: string, text: string): { addr: string; height: number } {
    const c = parseJson<{
      object_addr: string;
      collection: { creator: string; name: string; origin_name: string; nfts?: { length?: unknown } };
      height: number;
      timestamp: string;
    }>(url, text);
    if (typeof c.object_addr !== 'string' || typeof c.collection !== 'object' || c.collection === null) {
      throw new HttpError(url, 200, `GET ${url}: a collection without object_addr or collection`);
    }
    const n = c.collection.nfts?.length;
    const count = typeof n === 'number' || (typeof n === 'string' && /^\d+$/.test(n)) ? Number(n) : null;
    const addr = c.object_addr.toLowerCase();
    ins.run(
      addr,
      c.height,
      count,
      JSON.stringify({
        object_addr: c.object_addr,
        creator: c.collection.creator,
        name: c.collection.name,
        origin_name: c.collection.origin_name,
        height: c.height,
        timestamp: c.timestamp,
      }),
    );
    return { addr, height: Number(c.height) };
  }

  /** A served Token as a staged tokens row (a dump record); its id and height. */
  private stageToken(ins: Database.Statement, addr: string, url: string, text: string): { tokenId: string; height: number; object: boolean } {
    const t = parseJson<{
      collection_addr: string;
      object_addr: string;
      owner: string;
      nft: { token_id: string; uri: string };
      height: number;
      timestamp: string;
    }>(url, text);
    ins.run(
      addr,
      t.nft.token_id,
      JSON.stringify({
        collection_addr: t.collection_addr,
        token_id: t.nft.token_id,
        object_addr: t.object_addr || undefined,
        owner: t.owner,
        uri: t.nft.uri,
        height: t.height,
        timestamp: t.timestamp,
      }),
    );
    return { tokenId: t.nft.token_id, height: Number(t.height), object: Boolean(t.object_addr) };
  }

  /** The collections' tokens: pages by key per collection; whether any token, any with an object address, was seen. */
  async tokens(collections: string[]): Promise<{ token: boolean; object: boolean }> {
    const { db, progress } = this;
    progress?.stage('crawl tokens');
    const insToken = db.prepare('INSERT OR IGNORE INTO tokens (collection, token_id, text) VALUES (?, ?, ?)');
    let sawObject = false;
    let sawToken = false;
    await forEachConcurrent(collections, this.concurrency, async (addr) => {
      await this.eachPage(
        `/indexer/nft/v1/tokens/by_collection/${addr}`,
        'tokens',
        () => this.listPage,
        (url, page) => {
          db.transaction(() => {
            for (const text of page.items) {
              sawToken = true;
              if (this.stageToken(insToken, addr, url, text).object) sawObject = true;
            }
          })();
          progress?.records(page.items.length);
        },
        undefined,
        `tokens ${addr}`,
      );
    });
    // a resumed crawl saw only what it read itself: the staged tokens tell
    return this.state?.tokensSeen() ?? { token: sawToken, object: sawObject };
  }

  /**
   * follow: the collections that can have changed in from..to, and of each the tokens changed
   * since `from` — never the whole collections list (docs/follow.md "Cost"). Candidates: the
   * collections the batch's txs name in their events (the addresses AccountDeriver finds there,
   * as for tx ↔ account links: a Wasm `_contract_address`, an EVM log's contract, a Move event's
   * collection, or, through `ours`, a Move NFT object's collection), the new ones (the list
   * newest first by height down to `from`; on EVM also the contracts of ERC-721 Transfer logs we
   * have no collection of — an EVM collection's height is its contract's first tx, not its first
   * mint), and `recheck` (the collections audit found them different). Each candidate is read
   * with GET /collections/{addr} (a 404 is no collection) and its tokens newest first until one
   * below `from`. A collection whose count "ours + these" does not explain (a burn) is then read
   * whole (completeCollections). Returns why the result would still not be the source's state
   * (then nothing is kept), or undefined when it is.
   */
  async changedTokens(
    since: NftChangesSince,
    vmType: VmType,
    from: number,
    to: number,
    newest?: Promise<ReturnType<typeof members>>,
  ): Promise<string | undefined> {
    const { db, base, o, progress } = this;
    progress?.stage('crawl changed collections and tokens');
    const ours = since.ours;
    // Addresses the batch's txs name in their events.
    const named = new Set<string>();
    const mints = new Set<string>();
    const deriver = new AccountDeriver(o.prefix);
    for (const text of db.prepare('SELECT text FROM txs WHERE height BETWEEN ? AND ?').pluck().iterate(from, to) as IterableIterator<string>) {
      const events = rawMembers(text).get('events');
      if (events === undefined) continue;
      const parsed = parseJson<unknown>(base, events);
      deriver.eventAccounts(parsed, named);
      // EVM: the contracts of the ERC-721 Transfer logs (the NFTs' (collection, token id) pairs)
      if (vmType === 'evm') nftKeysOfEvents(parsed, deriver, (hex) => mints.add(hex));
    }
    const candidates = new Set<string>(since.recheck ?? []);
    for (const hex of named) if (ours.collection(hex) !== undefined) candidates.add(hex);
    if (vmType === 'move') {
      for (const hex of ours.collectionsOfObjects([...named].filter((a) => !candidates.has(a)))) candidates.add(hex);
    }
    for (const hex of mints) if (ours.collection(hex) === undefined) candidates.add(hex);
    const ins = this.collectionInsert();
    const staged = new Map<string, string>(); // hex → staged address
    const stage = (url: string, text: string): void => {
      const { addr } = this.stageCollection(ins, url, text);
      let hex: string;
      try {
        hex = canonicalAddress(addr, o.prefix).toString('hex');
      } catch {
        throw new HttpError(url, 200, `GET ${url}: collection ${addr} has no valid address`);
      }
      staged.set(hex, addr);
    };
    // New collections: newest first by height (rollytics orders the list by height only).
    await this.eachPage(
      NEWEST_COLLECTIONS,
      'collections',
      (n) => Math.min(this.listPage, 25 * 4 ** n),
      (url, page) => {
        let below = false;
        for (const text of page.items) {
          const height = Number(parseJson<number | string>(url, rawMembers(text).get('height') ?? '0'));
          if (!(height >= since.height)) {
            below = true;
            break;
          }
          stage(url, text);
        }
        return below;
      },
      this.listPage >= 25 ? newest : undefined,
    );
    await forEachConcurrent(
      [...candidates].filter((hex) => !staged.has(hex)),
      this.concurrency,
      async (hex) => {
        const path = `/indexer/nft/v1/collections/0x${hex}`;
        let text: string;
        try {
          text = await this.http.get(path);
        } catch (e) {
          if (e instanceof HttpError && e.status === 404) return; // not (or no longer) a collection: see below
          throw e;
        }
        const c = rawMembers(text).get('collection');
        if (c === undefined) throw new HttpError(base + path, 200, `GET ${base}${path}: expected {"collection": {...}}`);
        stage(base + path, c);
      },
    );
    for (const hex of candidates) if (!staged.has(hex) && (ours.collection(hex)?.count ?? 0) > 0) return `collection 0x${hex} is gone`;
    const stagedRow = db.prepare('SELECT nft_count, text FROM collections WHERE addr = ?');
    const theirs = [...staged].map(([hex, addr]) => ({ hex, addr, ...(stagedRow.get(addr) as { nft_count: number | null; text: string }) }));
    for (const c of theirs) {
      if (c.nft_count === null) return `collection ${c.addr} has no nfts.length`;
      const m = ours.collection(c.hex);
      const j = JSON.parse(c.text) as { name?: string | null; origin_name?: string | null };
      if (m && (m.name !== (j.name ?? '') || m.originName !== (j.origin_name ?? ''))) return `collection 0x${c.hex} was renamed`;
    }
    const insToken = db.prepare('INSERT OR IGNORE INTO tokens (collection, token_id, text) VALUES (?, ?, ?)');
    const added = new Map<string, number>();
    await forEachConcurrent(theirs, this.concurrency, async ({ addr, hex }) => {
      let fresh = 0;
      // Newest first; small pages first (a batch changes few tokens of a collection).
      await this.eachPage(
        `/indexer/nft/v1/tokens/by_collection/${addr}?order_by=height&pagination.reverse=true&pagination.count_total=false`,
        'tokens',
        (n) => Math.min(this.listPage, 25 * 4 ** n),
        (url, page) => {
          let below = false;
          db.transaction(() => {
            for (const text of page.items) {
              const height = Number(parseJson<number | string>(url, rawMembers(text).get('height') ?? '0'));
              if (!(height >= since.height)) {
                below = true;
                break;
              }
              const t = this.stageToken(insToken, addr, url, text);
              if (!ours.hasToken(hex, t.tokenId)) fresh++;
            }
          })();
          progress?.records(page.items.length);
          return below;
        },
      );
      added.set(addr, fresh);
    });
    // A count the changed tokens do not explain (a burn of a token we hold): that collection's
    // tokens are read whole (what is not delivered is gone, completeCollections).
    const off: { addr: string; hex: string; count: number }[] = [];
    for (const c of theirs) {
      const want = (ours.collection(c.hex)?.count ?? 0) + (added.get(c.addr) ?? 0);
      if (c.nft_count !== want) off.push({ addr: c.addr, hex: c.hex, count: c.nft_count as number });
    }
    if (off.length > 0) {
      const drop = db.prepare('DELETE FROM tokens WHERE collection = ?');
      for (const c of off) drop.run(c.addr);
      await this.tokens(off.map((c) => c.addr));
      const count = db.prepare('SELECT count(*) FROM tokens WHERE collection = ?').pluck();
      for (const c of off) {
        const n = count.get(c.addr) as number;
        if (n !== c.count) return `collection 0x${c.hex} has ${c.count} NFTs, ${n} read`;
      }
      this.completeCollections = new Set(off.map((c) => c.hex));
    }
    return undefined;
  }

  /** NFT ↔ tx links (Wasm / EVM): the tx history of every live token, mapped to sequences by hash. */
  async tokenTxs(from: number, to: number): Promise<void> {
    const { db, base, o, progress, state } = this;
    progress?.stage('crawl token txs');
    const bySeqHash = db.prepare('SELECT sequence FROM txs WHERE hash = ? AND height = ?').pluck();
    const insLink = db.prepare('INSERT OR IGNORE INTO token_txs (collection, token_id, sequence) VALUES (?, ?, ?)');
    // Keyset chunks (a statement cannot stay open while the workers write).
    const chunk = db
      .prepare(
        `SELECT collection, token_id FROM tokens WHERE (collection, token_id) > (?, ?)
      ${o.linkTokensSince !== undefined ? "AND json_extract(text, '$.height') >= " + Math.floor(o.linkTokensSince) : ''}
      ORDER BY collection, token_id LIMIT 5000`,
      )
      .raw();
    const tokens = function* (): Generator<[string, string]> {
      let after: [string, string] = ['', ''];
      for (;;) {
        const rows = chunk.all(...after) as [string, string][];
        if (!rows.length) return;
        yield* rows;
        after = rows[rows.length - 1];
      }
    };
    await forEachConcurrent(tokens(), this.concurrency, async ([collection, tokenId]) => {
      // a resumable crawl: each token's history goes on from its committed cursor
      const name = `token txs ${collection} ${tokenId}`;
      const at = state?.cursor(name);
      if (at?.done) return;
      let keyParam = at?.nextKey ? `&pagination.key=${at.nextKey}` : '';
      for (;;) {
        const path = `/indexer/nft/v1/txs/${collection}/${encodeURIComponent(tokenId)}?pagination.limit=${PAGE}&pagination.reverse=false&pagination.count_total=false${keyParam}`;
        const page = byteList(base + path, await this.http.getBytes(path), 'txs', TX_FACTS);
        db.transaction(() => {
          for (const { fields } of page.items) {
            const { hash, height } = txFacts(base + path, fields);
            if (height < from || height > to) continue; // outside the crawled range
            const seq = bySeqHash.get(hash, height) as number | undefined;
            if (seq === undefined) throw new HttpError(base + path, 200, `GET ${base}${path}: tx ${hash} (height ${height}) is not in the crawled tx list`);
            insLink.run(collection, tokenId, seq);
          }
          const next = cursorValue(page.nextKey, 'sequence');
          const done = page.items.length < PAGE || next === undefined;
          state?.saveCursor(name, { nextKey: done ? null : key({ sequence: next as number }), pos: 0, done });
        })();
        progress?.records(page.items.length);
        const next = cursorValue(page.nextKey, 'sequence');
        if (page.items.length < PAGE || next === undefined) break;
        keyParam = `&pagination.key=${key({ sequence: next })}`;
      }
    });
  }

  /**
   * Whether the source indexes EVM internal txs: rollytics with its internal-tx extension off
   * answers 404 on the whole evm-internal-txs group ("evm routes are not available on this
   * chain"), so does an indexer-api replica of such a source. Asked once per crawl (evmTxs).
   */
  internalTxs?: boolean;

  private async indexesInternalTxs(): Promise<boolean> {
    try {
      await this.http.get('/indexer/tx/v1/evm-internal-txs?pagination.limit=1&pagination.count_total=false');
      return true;
    } catch (e) {
      if (e instanceof HttpError && e.status === 404) return false;
      throw e;
    }
  }

  /** EVM txs and internal txs (when the source indexes them), block by block (only blocks with cosmos txs can hold any). */
  async evmTxs(): Promise<void> {
    const { db, progress, state } = this;
    const heights = db.prepare('SELECT height FROM blocks WHERE tx_count > 0 ORDER BY height').pluck().all() as number[];
    const groups = [
      ['evm-txs', 'evm_txs', 'txs'],
      ['evm-internal-txs', 'evm_internal_txs', 'internal_txs'],
    ] as const;
    const indexed = this.inflight.start(
      this.indexesInternalTxs().then((yes) => {
        this.internalTxs = yes;
        return yes;
      }),
    );
    const crawlGroup = async ([group, table, itemsKey]: (typeof groups)[number]): Promise<void> => {
      if (group === 'evm-internal-txs' && !(await indexed)) return;
      progress?.stage(`crawl ${group}`);
      const ins = db.prepare(`INSERT OR IGNORE INTO ${table} (height, pos, text) VALUES (?, ?, ?)`);
      await forEachConcurrent(heights, this.concurrency, async (height) => {
        // a resumable crawl: each height's list goes on from its committed cursor and position
        const name = `${group} ${height}`;
        const at = state?.cursor(name);
        if (at?.done) return;
        let keyParam = at?.nextKey ? `&pagination.key=${at.nextKey}` : '';
        for (let pos = at?.pos ?? 0; ;) {
          const path = `/indexer/tx/v1/${group}/by_height/${height}?pagination.limit=${PAGE}&pagination.reverse=false&pagination.count_total=false${keyParam}`;
          const page = await this.page(path, itemsKey);
          db.transaction(() => {
            for (const text of page.items) ins.run(height, pos++, text);
            const next = cursorValue(page.nextKey, 'sequence');
            const done = page.items.length < PAGE || next === undefined;
            state?.saveCursor(name, { nextKey: done ? null : key({ sequence: next as number }), pos, done });
          })();
          progress?.records(page.items.length);
          const next = cursorValue(page.nextKey, 'sequence');
          if (page.items.length < PAGE || next === undefined) break;
          keyParam = `&pagination.key=${key({ sequence: next })}`;
        }
      });
    };
    if (!this.o.overlap) {
      for (const g of groups) await crawlGroup(g);
      await indexed;
      return;
    }
    // both groups at once (the client bounds the requests in flight); the EVM txs' failure first
    const started = groups.map((g) => this.inflight.start(crawlGroup(g)));
    for (const p of started) await p;
  }

  /** Rich lists: pages by key per --denoms entry (on EVM stored by ERC-20 contract). */
  async richList(vmType: VmType, denomContracts: Map<string, string>): Promise<void> {
    const { db, progress } = this;
    progress?.stage('crawl rich list');
    const insHolder = db.prepare('INSERT OR IGNORE INTO holders (denom, account, text) VALUES (?, ?, ?)');
    const { state } = this;
    await readRichList(
      this.http,
      this.base,
      this.o.denoms,
      vmType,
      denomContracts,
      this.concurrency,
      (stored, holders, _url, next) => {
        db.transaction(() => {
          for (const h of holders) insHolder.run(stored, h.account, JSON.stringify({ denom: stored, account: h.account, amount: h.amount }));
          state?.saveCursor(`holders ${stored}`, { nextKey: next ?? null, pos: 0, done: next === undefined });
        })();
        progress?.records(holders.length);
      },
      this.listPage,
      state &&
        ((stored) => {
          // a resumable crawl: each denom goes on from its committed cursor
          const at = state.cursor(`holders ${stored}`);
          return at === undefined ? null : at.done ? false : at.nextKey;
        }),
    );
  }
}
