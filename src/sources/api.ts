/**
 * `import --from-api URL`: crawls a running rollytics-compatible API (rollytics itself or
 * another indexer-api) into dump-format records.
 *
 * The crawl runs first, into a staging SQLite file beside --out (bounded memory, removed at
 * the end, and cleaned like any stale temporary file if the import is killed; follow's small
 * batches stage in memory, stageInMemory, and overlap their steps, overlap), because the
 * loader wants records in an order the API cannot give cheaply (validators before blocks,
 * block times that need the txs). Requests go through HttpClient (bounded concurrency, --rate,
 * retries with exponential backoff on 5xx / 429 / timeouts / network errors, after the answer's
 * Retry-After when it has one). What is fetched:
 *   /status                                   chain id, build, heights
 *   /indexer/block/v1/blocks                  height-cursor pages of 1000, in parallel
 *   /indexer/tx/v1/txs                        sequence-cursor pages of 1000, in parallel, plus
 *                                             1-row probes that pin sequence numbers (below)
 *   /indexer/nft/v1/collections               pages by next_key (never a deep offset: we refuse
 *                                             those, docs/api-contract.md#deep-offsets)
 *   /indexer/nft/v1/tokens/by_collection/{c}  pages by next_key; with nftChangesSince (follow) only
 *                                             for the collections that can have changed,
 *                                             order_by=height newest first, down to the batch
 *   /indexer/nft/v1/txs/{c}/{token}           Wasm / EVM: per live token (with linkTokensSince /
 *                                             nftChangesSince: per changed token), to rebuild
 *                                             NFT ↔ tx links
 *   /indexer/richlist/v1/{denom}              pages by next_key, per --denoms entry
 *   /indexer/tx/v1/evm-txs/by_height/{h}      EVM: per block with txs, receipts in block order
 *   /indexer/tx/v1/evm-internal-txs/by_height/{h}  EVM: per block with txs, calls in order
 *
 * follow on top of a snapshot (nftChangesSince): only the collections that can have changed —
 * new ones, those the batch's txs name in their events (the addresses AccountDeriver finds for
 * tx ↔ account links; on Move also through the NFT objects the events name, mapped by our
 * snapshot), those the collections audit asks to recheck — each read by address (it carries
 * `nfts.length`), and of those only the tokens changed since the batch's first height.
 * "ours + the read tokens" must give each read collection's count and names: a collection whose
 * count does not add up (a burn) is read whole (completeCollections()); a renamed or removed
 * one, and every collection and token is read; partialKinds() says which was delivered
 * (docs/follow.md "Cost").
 *
 * Sequences (they drive every tx cursor) are not part of the Tx object: they are pinned by
 * probing `/txs` with 1-row pages from chosen cursors, relying on rollytics numbering txs
 * 1, 2, 3, ... without gaps; every page is checked and a gap is an error, not a guess. On top
 * of a snapshot (follow: txSequenceAfter) the first sequence is expected right after the
 * snapshot's highest and confirmed with two probes instead of searched.
 *
 * What a crawl cannot reproduce exactly:
 * - tx ↔ account links are derived from events (as for a dump without `accounts`), so the
 *   results of rollytics' account-cleanup extensions are not carried over;
 * - block times are served to the second only: blocks with txs take the exact time from their
 *   txs; empty blocks are estimated from the previous block + block_time, so avg_blocktime can
 *   differ (sub-millisecond) when the newest or 100th-newest block is empty;
 * - NFT ↔ tx links of burned NFTs (their history is not served) and links to txs outside
 *   --from-height..--to-height are lost; NFT and rich-list state is the current one, whatever
 *   --to-height says;
 * - a block's stored proposer string is not served: blocks keep the operator address, and
 *   validators are rebuilt from the monikers the blocks show (unless --validators is given);
 * - EVM and internal tx sequences are numbered from 1 over the crawled heights (rollytics'
 *   own numbers when the crawl starts at height 1, its counters being gap-free); EVM tx account
 *   links are derived from the receipts, internal ones from the calls;
 * - token ids are sent percent-encoded: rollytics does not decode path parameters, so tokens
 *   whose id needs encoding (spaces, '/', '#', non-ASCII) cannot be crawled from rollytics
 *   itself (their tx history comes back empty), only from an indexer-api.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { openStore } from '../snapshot/store';
import type { ImportProgress } from '../records/from-dump';
import type { VmType } from '../lib/vm';
import { NdjsonLine } from '../records/ndjson';
import { rawMembers } from '../lib/raw-json';
import { HttpClient, HttpError, HttpOptions, forEachConcurrent } from './http';
import { rawElements } from './raw';
import { ImportSource, ndjsonFile, NftChangesSince, record } from '../records/source';
import type { CollectionState } from '../snapshot/queries/nft-state';
import { AccountDeriver, nftKeysOfEvents } from '../records/derive';
import { canonicalAddress } from '../lib/address';
import { STATUS_EXTENSIONS, type StatusExtension } from '../wire/status';

export interface ApiSourceOptions {
  url: string;
  /** default: detected (EVM: 20-byte collection addresses; Move: tokens with an object address) */
  vmType?: VmType;
  prefix: string;
  fromHeight?: number;
  /** on top of a base snapshot: its highest EVM / internal tx sequences (numbering goes on from them) */
  evmSequenceStart?: { txs: number; internal: number };
  /**
   * on top of a base snapshot: its highest tx sequence. rollytics numbers txs without gaps, so
   * the first tx of fromHeight.. should be the next one: two probes check that, instead of the
   * ≈2·log2(sequence) probes of the search (which still runs when the check fails)
   */
  txSequenceAfter?: number;
  /**
   * on top of a base snapshot: the stored time (µs) of its block at fromHeight - 1, so an empty
   * first block is estimated from it exactly as a crawl from height 1 would (block times are
   * served to the second only)
   */
  previousBlockUs?: number;
  toHeight?: number;
  /** rich-list denoms to crawl (EVM: 0x contracts, or denoms listed in --denom-contracts) */
  denoms: string[];
  /** rows per page of the lists crawled by next_key (collections, tokens, rich lists); default 1000 */
  listPage?: number;
  /** the crawl client's settings, resolved (src/sources/options.ts resolveHttp) */
  http: HttpOptions;
  validatorsFile?: string;
  denomContractsFile?: string;
  /** staging file (default: a temporary file in the OS temp dir) */
  stagingPath?: string;
  /**
   * follow's small batches: stage in memory (no file made, written, synced or removed per
   * batch). Memory stays bounded: when the batch has to read the whole NFT state (nftChangesSince
   * could not be used), the staging moves to `stagingPath` before that read.
   */
  stageInMemory?: boolean;
  /**
   * with stageInMemory: blocks holding more txs than this (known once the blocks are read) move
   * the staging to its file before their txs are read, so a few heights of a busy chain do not
   * fill memory; default MEMORY_STAGING_TXS
   */
  memoryStagingTxs?: number;
  /**
   * follow (with fromHeight, toHeight and vmType given): run the crawl's steps that do not
   * need each other's answers at the same time — /status with the blocks, the tx sequence
   * probes and the newest collections page; the tx pages with the EVM and internal txs; the EVM
   * txs with the internal txs. Requests stay within http.concurrency (one client); the records,
   * and the error thrown when several steps fail (the first in the sequential order), are the
   * same as without.
   */
  overlap?: boolean;
  progress?: ImportProgress;
  /**
   * Wasm / EVM: crawl the tx history of the tokens whose height (last mint / transfer /
   * mutation, rollytics' nft.height) is at least this, not of every live token. A tx of
   * --from-height..--to-height that touches a token leaves the token's height in that range, so
   * with this at --from-height no link of the range is missed (`follow` uses it: one request
   * per changed token instead of one per token).
   */
  linkTokensSince?: number;
  /**
   * follow, on top of a snapshot (`ours`): read the tokens of only the collections that can have
   * changed since `height`, and of each only the tokens whose `height` ≥ it (newest first).
   * Delivered as changed rows (partialKinds() = {'tokens'}) only when "ours + these" reproduces
   * every collection's `nfts.length` and names; otherwise every token is read, as without this.
   */
  nftChangesSince?: NftChangesSince;
  /**
   * follow: the rich list is refreshed apart from the block batches (src/follow/richlist-refresh.ts):
   * no `richlist` records, and a meta without `rich_list_height` (the snapshot's stays)
   */
  withoutRichList?: boolean;
}

const PAGE = 1000;

const key = (fields: Record<string, number>): string => encodeURIComponent(Buffer.from(JSON.stringify(fields)).toString('base64'));

interface Status extends Partial<Record<StatusExtension, unknown>> {
  chain_id: string; height: number; version?: string; commit_hash?: string; rich_list_height?: number; internal_tx_height?: number;
}

function parseJson<T>(url: string, text: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (e) {
    throw new HttpError(url, 200, `GET ${url}: not JSON: ${(e as Error).message}`);
  }
}

function members(url: string, text: string, name: string): { items: string[]; nextKey: string | null; total: number | undefined } {
  const m = rawMembers(text);
  const items = m.get(name);
  const pag = m.get('pagination');
  if (items === undefined || pag === undefined) throw new HttpError(url, 200, `GET ${url}: expected {"${name}": [...], "pagination": {...}}`);
  const p = parseJson<{ next_key?: string | null; total?: string }>(url, pag);
  const total = p.total !== undefined && /^\d+$/.test(p.total) ? Number(p.total) : undefined;
  return { items: rawElements(items), nextKey: p.next_key ?? null, total };
}

export function cursorValue(nextKey: string | null, field: string): number | undefined {
  if (!nextKey) return undefined;
  try {
    const v = (JSON.parse(Buffer.from(nextKey, 'base64').toString('utf8')) as Record<string, unknown>)[field];
    return typeof v === 'number' && Number.isSafeInteger(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** What the tx crawl reads of a served tx: its height, hash and (the block's exact) time. */
interface TxFacts { height: number; hash: string; timestamp: unknown }

function txFacts(url: string, text: string): TxFacts {
  const m = rawMembers(text);
  return {
    height: Number(parseJson<string>(url, m.get('height') ?? '""')),
    hash: parseJson<string>(url, m.get('txhash') ?? '""').toUpperCase(),
    timestamp: parseJson<unknown>(url, m.get('timestamp') ?? 'null'),
  };
}

/** A page of a list crawled by next_key. */
function listUrl(path: string, limit: number, nextKey: string | null): string {
  return `${path}${path.includes('?') ? '&' : '?'}pagination.limit=${limit}${nextKey === null ? '' : `&pagination.key=${encodeURIComponent(nextKey)}`}`;
}

/** ApiSourceOptions.memoryStagingTxs' default: a few MB of tx JSON (and their EVM receipts). */
export const MEMORY_STAGING_TXS = 2000;

/** The collections newest first (by height): the new ones of a follow batch. */
const NEWEST_COLLECTIONS = '/indexer/nft/v1/collections?pagination.reverse=true&pagination.count_total=false';

/** Crawler.startAhead's requests. */
interface Ahead {
  blocks: Promise<void>;
  probes?: Promise<[TxFacts | undefined, TxFacts | undefined]>;
  newest?: Promise<ReturnType<typeof members>>;
}

function parseUtcMicros(text: string): number | undefined {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z$/.exec(text);
  if (!m) return undefined;
  return Date.parse(`${m[1]}Z`) * 1000 + Number((m[2] ?? '').padEnd(9, '0').slice(0, 6));
}

function formatMicrosUtc(us: number): string {
  const sec = Math.floor(us / 1e6);
  return `${new Date(sec * 1000).toISOString().slice(0, 19)}.${String(us - sec * 1e6).padStart(6, '0')}Z`;
}

const STAGING_SQL = `
  CREATE TABLE blocks (height INTEGER PRIMARY KEY, text TEXT NOT NULL, seconds TEXT NOT NULL, block_time INTEGER NOT NULL, tx_count INTEGER NOT NULL);
  CREATE TABLE block_times (height INTEGER PRIMARY KEY, ts TEXT NOT NULL);
  CREATE TABLE validators (operator TEXT PRIMARY KEY, moniker TEXT NOT NULL);
  CREATE TABLE txs (sequence INTEGER PRIMARY KEY, height INTEGER NOT NULL, hash TEXT NOT NULL, text TEXT NOT NULL);
  CREATE TABLE collections (addr TEXT PRIMARY KEY, height INTEGER NOT NULL, nft_count INTEGER, text TEXT NOT NULL);
  CREATE TABLE tokens (collection TEXT NOT NULL, token_id TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY (collection, token_id)) WITHOUT ROWID;
  CREATE TABLE token_txs (collection TEXT NOT NULL, token_id TEXT NOT NULL, sequence INTEGER NOT NULL, PRIMARY KEY (collection, token_id, sequence)) WITHOUT ROWID;
  CREATE TABLE holders (denom TEXT NOT NULL, account TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY (denom, account)) WITHOUT ROWID;
  CREATE TABLE evm_txs (height INTEGER NOT NULL, pos INTEGER NOT NULL, text TEXT NOT NULL, PRIMARY KEY (height, pos)) WITHOUT ROWID;
  CREATE TABLE evm_internal_txs (height INTEGER NOT NULL, pos INTEGER NOT NULL, text TEXT NOT NULL, PRIMARY KEY (height, pos)) WITHOUT ROWID;`;

/**
 * The crawl's staging database: a file, or (stageInMemory) memory until a read too big for it
 * (spill()). Whoever reads it asks for `db` each time (it is another connection after a spill).
 */
class Staging {
  db: Database.Database;
  /** the file in use; undefined while in memory */
  private file: string | undefined;

  constructor(private readonly path: string, inMemory: boolean) {
    this.file = inMemory ? undefined : path;
    this.db = openStore(inMemory ? ':memory:' : path, 'scratch');
  }

  get inMemory(): boolean {
    return this.file === undefined;
  }

  /** Moves an in-memory staging to its file (nothing may hold a statement of the old one). */
  spill(): void {
    if (this.file !== undefined) return;
    this.db.prepare('VACUUM INTO ?').run(this.path);
    this.db.close();
    this.file = this.path;
    this.db = openStore(this.path, 'scratch');
  }

  dispose(): void {
    try { if (this.db.open) this.db.close(); } catch { /* closing anyway */ }
    try { if (this.file !== undefined && existsSync(this.file)) unlinkSync(this.file); } catch { /* already gone */ }
  }
}

/**
 * Requests started ahead of the step that reads their answers (ApiSourceOptions.overlap): a
 * failure is thrown where that step awaits it, never as an unhandled rejection, and a failed
 * crawl waits for all of them before its staging is closed.
 */
class Inflight {
  private readonly all: Promise<unknown>[] = [];

  start<T>(p: Promise<T>): Promise<T> {
    const settled = p.then(() => undefined, () => undefined);
    this.all.push(settled);
    return p;
  }

  settle(): Promise<unknown> {
    return Promise.all(this.all);
  }
}

/** Crawls the API into a staging file (or memory), then serves the records from there. */
export async function openApiSource(o: ApiSourceOptions): Promise<ImportSource> {
  const base = o.url.replace(/\/+$/, '');
  const http = new HttpClient(base, o.http);
  const concurrency = o.http.concurrency;
  const stagingPath = o.stagingPath ?? join(tmpdir(), `indexer-api-crawl-${process.pid}-${randomBytes(4).toString('hex')}`);
  const staging = new Staging(stagingPath, o.stageInMemory === true);
  const inflight = new Inflight();
  const dispose = (): void => staging.dispose();
  try {
    staging.db.exec(STAGING_SQL);
    const crawl = await crawlInto(staging, http, concurrency, o, base, inflight);
    // a request started ahead whose answer was not needed (the probes of a batch without txs)
    // does not outlive the batch
    await inflight.settle();
    return sourceFromStaging(staging.db, crawl, o, base, dispose, http);
  } catch (e) {
    await inflight.settle();
    dispose();
    throw e;
  }
}

interface Crawl {
  status: Status;
  vmType: VmType;
  from: number;
  to: number;
  denomContracts: Map<string, string>;
  /** the tokens are the changed ones only (nftChangesSince held) */
  changedTokensOnly: boolean;
  /** why every token was read although nftChangesSince was given */
  fullNftReason?: string;
  /** with changedTokensOnly: collections (lower-case hex) whose tokens were read whole (a burn) */
  completeCollections: ReadonlySet<string>;
  /** EVM: whether the source indexes internal txs (Crawler.internalTxs) */
  internalTxs?: boolean;
}

/**
 * The crawl, step by step: /status, then blocks, txs, NFTs, EVM txs and rich lists into the
 * staging file. With `overlap` the steps that need no earlier answer are started ahead and
 * awaited where the sequential crawl would run them, so a failure surfaces at the same place.
 */
async function crawlInto(staging: Staging, http: HttpClient, concurrency: number, o: ApiSourceOptions, base: string,
  inflight: Inflight): Promise<Crawl> {
  const crawler = new Crawler(staging, http, concurrency, o, base, inflight);
  const overlap = o.overlap === true && o.fromHeight !== undefined && o.toHeight !== undefined && o.vmType !== undefined;
  const ahead = overlap ? crawler.startAhead(o.fromHeight as number, o.toHeight as number) : undefined;
  const status = await crawler.status();
  const { from, to } = heightRange(o, status);
  // only the rich list's crawl needs them (a follow batch has none: it is refreshed apart)
  const richList = o.denoms.length > 0 && !o.withoutRichList;
  const denomContracts = richList ? await readDenomContracts(o) : new Map<string, string>();
  await (ahead?.blocks ?? crawler.blocks(from, to));
  // (nothing else writes yet: the requests started ahead besides the blocks only read)
  if (staging.inMemory && crawler.txCount() > (o.memoryStagingTxs ?? MEMORY_STAGING_TXS)) staging.spill();
  const evm = overlap && o.vmType === 'evm' ? inflight.start(crawler.evmTxs()) : undefined;
  await crawler.txs(from, to, ahead?.probes);
  let collections: string[] = [];
  let changedTokensOnly = false;
  let fullNftReason: string | undefined;
  let seen = { token: false, object: false };
  if (o.nftChangesSince) {
    fullNftReason = o.vmType === undefined ? 'the VM is not known' : await crawler.changedTokens(o.nftChangesSince, o.vmType, from, to, ahead?.newest);
    changedTokensOnly = fullNftReason === undefined;
    if (!changedTokensOnly) staging.db.exec('DELETE FROM tokens; DELETE FROM collections');
  }
  if (!changedTokensOnly) {
    // every collection and token: too many for memory (nothing else may be writing meanwhile)
    if (staging.inMemory) {
      await evm?.catch(() => undefined);
      staging.spill();
    }
    collections = await crawler.collections();
    seen = await crawler.tokens(collections);
  }
  // The VM: given, or told by the data; given and told otherwise by the data is refused here,
  // naming both, before a record of the other VM fails the loader on a field of its own.
  const vmType = o.vmType ?? detectVm(collections, seen, base);
  const told = o.vmType === undefined ? undefined : vmOfData(collections, seen);
  if (told !== undefined && told !== o.vmType) {
    throw new Error(`--vm-type ${o.vmType}, but ${base} serves a ${told} chain (${VM_EVIDENCE[told]}): pass --vm-type ${told}, or leave it out (--from-api detects it)`);
  }
  // (the tokens whose history is crawled are those staged: with changedTokensOnly the changed ones)
  if (vmType !== 'move') await crawler.tokenTxs(from, to);
  if (vmType === 'evm') await (evm ?? crawler.evmTxs());
  if (richList) await crawler.richList(vmType, denomContracts);
  const completeCollections = changedTokensOnly ? crawler.completeCollections : new Set<string>();
  return { status, vmType, from, to, denomContracts, changedTokensOnly, fullNftReason, completeCollections, internalTxs: crawler.internalTxs };
}

/**
 * The crawled heights: --from-height..--to-height (default: 1 to the API's height). Each was
 * checked while yargs parsed (a whole number ≥ 1, and --to-height not below --from-height when
 * both are given); what is left to check depends on the source: a default end (its height) or a
 * default start (the base's next height) may leave nothing to crawl, or go beyond the source.
 */
function heightRange(o: ApiSourceOptions, status: Status): { from: number; to: number } {
  const from = o.fromHeight ?? 1;
  const to = o.toHeight ?? status.height;
  if (to < from) throw new Error(`--to-height must be an integer ≥ --from-height (${from}), got ${to}`);
  if (to > status.height) throw new Error(`--to-height ${to} is above the API's height ${status.height}`);
  return { from, to };
}

/** --denom-contracts as a lower-cased denom → contract map (bad lines are the loader's to report). */
export async function readDenomContracts(o: Pick<ApiSourceOptions, 'denomContractsFile'>): Promise<Map<string, string>> {
  const denomContracts = new Map<string, string>();
  if (o.denomContractsFile) {
    for await (const l of ndjsonFile(o.denomContractsFile)) {
      try {
        const d = JSON.parse(l.text) as { denom?: unknown; contract?: unknown };
        if (typeof d.denom === 'string' && typeof d.contract === 'string') denomContracts.set(d.denom.toLowerCase(), d.contract.toLowerCase());
      } catch { /* the loader reports a bad line when it reads the file */ }
    }
  }
  return denomContracts;
}

/** The VM told by the data: EVM collections are 20-byte contracts; Move NFTs are objects. */
function detectVm(collections: string[], seen: { token: boolean; object: boolean }, base: string): VmType {
  const vm = vmOfData(collections, seen);
  if (vm === undefined) throw new Error(`cannot tell the VM of ${base} (no NFTs to look at): pass --vm-type`);
  return vm;
}

const VM_EVIDENCE: Record<VmType, string> = {
  evm: 'its NFT collections are 20-byte contracts',
  move: 'its NFTs are objects with an object_addr',
  wasm: 'its NFTs have no object_addr',
};

function vmOfData(collections: string[], seen: { token: boolean; object: boolean }): VmType | undefined {
  if (collections.some((a) => /^0x[0-9a-f]{40}$/.test(a))) return 'evm';
  if (seen.object) return 'move';
  if (seen.token) return 'wasm';
  return undefined;
}

/** The crawl's steps, each fetching one kind of data into its staging table. */
class Crawler {
  private readonly progress: ImportProgress | undefined;
  /** changedTokens: collections (lower-case hex) whose tokens were read whole (a burn in them) */
  completeCollections = new Set<string>();

  constructor(private readonly staging: Staging, private readonly http: HttpClient, private readonly concurrency: number,
    private readonly o: ApiSourceOptions, private readonly base: string, private readonly inflight: Inflight) {
    this.progress = o.progress;
    this.listPage = o.listPage ?? PAGE;
  }

  private readonly listPage: number;

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
    const probes = hint !== undefined && Number.isSafeInteger(hint) && hint >= 0
      ? this.inflight.start(Promise.all([this.probe(hint), hint === 0 ? Promise.resolve(undefined) : this.probe(hint - 1)])) : undefined;
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
  private async eachPage(path: string, name: string, limit: (n: number) => number,
    fn: (url: string, page: ReturnType<typeof members>) => boolean | void, first?: Promise<ReturnType<typeof members>>): Promise<void> {
    let nextKey: string | null = null;
    for (let n = 0; ; n++) {
      const lim = limit(n);
      const url = listUrl(path, lim, nextKey);
      // `first`: page 0 (at this url, this limit) already asked for (startAhead)
      const page = n === 0 && first !== undefined ? await first : await this.page(url, name);
      if (fn(this.base + url, page) === true || page.items.length < lim || page.nextKey === null) return;
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
    const { db, base, progress } = this;
    progress?.stage('crawl blocks');
    const insBlock = db.prepare('INSERT OR IGNORE INTO blocks (height, text, seconds, block_time, tx_count) VALUES (?, ?, ?, ?, ?)');
    const insValidator = db.prepare('INSERT OR IGNORE INTO validators (operator, moniker) VALUES (?, ?)');
    const starts: number[] = [];
    for (let h = from - 1; h < to; h += PAGE) starts.push(h);
    await forEachConcurrent(starts, this.concurrency, async (after) => {
      const path = `/indexer/block/v1/blocks?pagination.limit=${PAGE}&pagination.reverse=false&pagination.key=${key({ height: after })}`;
      const page = await this.page(path, 'blocks');
      let n = 0;
      db.transaction(() => {
        for (const text of page.items) {
          const b = parseJson<{
            chain_id: string; height: string; hash: string; block_time: string; timestamp: string; gas_used: string; gas_wanted: string;
            tx_count: string; total_fee: unknown; proposer?: { moniker?: string; operator_address?: string };
          }>(base + path, text);
          const height = Number(b.height);
          if (!(height > after && height <= Math.min(after + PAGE, to))) continue;
          const operator = b.proposer?.operator_address ?? '';
          if (b.proposer?.moniker) insValidator.run(operator, b.proposer.moniker);
          insBlock.run(height, JSON.stringify({
            height, chain_id: b.chain_id, hash: b.hash, block_time: b.block_time, proposer: operator,
            gas_used: b.gas_used, gas_wanted: b.gas_wanted, tx_count: b.tx_count, total_fee: b.total_fee,
          }), b.timestamp, Number(b.block_time), Number(b.tx_count));
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
    const { db, progress } = this;
    const txBlocks = db.prepare('SELECT count(*) AS n, coalesce(sum(tx_count), 0) AS txs, min(height) AS lo FROM blocks WHERE tx_count > 0')
      .get() as { n: number; txs: number; lo: number | null };
    progress?.stage('crawl txs');
    const insTx = db.prepare('INSERT OR IGNORE INTO txs (sequence, height, hash, text) VALUES (?, ?, ?, ?)');
    const insTime = db.prepare('INSERT OR IGNORE INTO block_times (height, ts) VALUES (?, ?)');
    const txPage = (after: number, limit: number): Promise<{ url: string; items: string[] }> => this.txPage(after, limit);
    const probe = (after: number): Promise<TxFacts | undefined> => this.probe(after);
    if (!(txBlocks.n > 0 && txBlocks.lo !== null)) return;
    const firstHeight = txBlocks.lo;
    const lands = (t: TxFacts | undefined): boolean => t === undefined || t.height >= firstHeight;
    const reaches = async (x: number): Promise<boolean> => lands(await probe(x));
    // The smallest X that reaches the range (reaches() is monotone): the base's last sequence
    // when it checks out, else searched.
    const hint = this.o.txSequenceAfter;
    let hiX = -1;
    if (hint !== undefined && Number.isSafeInteger(hint) && hint >= 0) {
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
        if (await reaches(mid)) hiX = mid; else loX = mid;
      }
    }
    const lo = hiX + 1;
    const hi = lo - 1 + txBlocks.txs;
    const pages: number[] = [];
    for (let s = lo - 1; s < hi; s += PAGE) pages.push(s);
    await forEachConcurrent(pages, this.concurrency, async (after) => {
      const end = Math.min(after + PAGE, hi);
      const n = end - after;
      const page = await txPage(after, n);
      const facts = page.items.map((t) => txFacts(page.url, t));
      const lastHash = facts[facts.length - 1]?.hash;
      const [atLast, beyond] = await Promise.all([probe(end - 1), probe(end)]);
      if (facts.length !== n || atLast?.hash !== lastHash || beyond?.hash === lastHash
        || facts.some((f) => f.height < from || f.height > to)) {
        throw new HttpError(page.url, 200, `GET ${page.url}: txs ${after + 1}..${end} are not the gap-free sequence range of heights ${from}..${to} `
          + `this crawler needs (got ${facts.length} txs; rollytics numbers txs 1, 2, 3, ... without gaps)`);
      }
      db.transaction(() => {
        page.items.forEach((text, i) => {
          const f = facts[i];
          insTx.run(after + 1 + i, f.height, f.hash, text);
          if (typeof f.timestamp === 'string') insTime.run(f.height, f.timestamp);
        });
      })();
      progress?.records(n);
    });
    db.exec('CREATE INDEX txs_by_hash ON txs (hash)');
  }

  /** The txs of the staged blocks (their tx_count). */
  txCount(): number {
    return this.db.prepare('SELECT coalesce(sum(tx_count), 0) FROM blocks').pluck().get() as number;
  }

  /** A page of `limit` txs after sequence `after`. */
  private async txPage(after: number, limit: number): Promise<{ url: string; items: string[] }> {
    const path = `/indexer/tx/v1/txs?pagination.limit=${limit}&pagination.reverse=false&pagination.count_total=false&pagination.key=${key({ sequence: after })}`;
    return { url: this.base + path, items: members(this.base + path, await this.http.get(path), 'txs').items };
  }

  /** probe(X): the first tx with sequence > X (undefined: none). */
  private async probe(after: number): Promise<TxFacts | undefined> {
    const p = await this.txPage(after, 1);
    return p.items.length ? txFacts(p.url, p.items[0]) : undefined;
  }

  /** NFT collections: pages by key, one after the other; their addresses in (height, addr) order. */
  async collections(): Promise<string[]> {
    const { db, progress } = this;
    progress?.stage('crawl collections');
    const ins = this.collectionInsert();
    await this.eachPage('/indexer/nft/v1/collections?pagination.reverse=false', 'collections', () => this.listPage, (url, page) => {
      db.transaction(() => { for (const text of page.items) this.stageCollection(ins, url, text); })();
      progress?.records(page.items.length);
    });
    return db.prepare('SELECT addr FROM collections ORDER BY height, addr').pluck().all() as string[];
  }

  private collectionInsert(): Database.Statement {
    return this.db.prepare('INSERT OR IGNORE INTO collections (addr, height, nft_count, text) VALUES (?, ?, ?, ?)');
  }

  /** A served Collection as a staged collections row (a dump record); its staged address and height. */
  private stageCollection(ins: Database.Statement, url: string, text: string): { addr: string; height: number } {
    const c = parseJson<{
      object_addr: string; collection: { creator: string; name: string; origin_name: string; nfts?: { length?: unknown } }; height: number; timestamp: string;
    }>(url, text);
    if (typeof c.object_addr !== 'string' || typeof c.collection !== 'object' || c.collection === null) {
      throw new HttpError(url, 200, `GET ${url}: a collection without object_addr or collection`);
    }
    const n = c.collection.nfts?.length;
    const count = typeof n === 'number' || (typeof n === 'string' && /^\d+$/.test(n)) ? Number(n) : null;
    const addr = c.object_addr.toLowerCase();
    ins.run(addr, c.height, count, JSON.stringify({
      object_addr: c.object_addr, creator: c.collection.creator, name: c.collection.name,
      origin_name: c.collection.origin_name, height: c.height, timestamp: c.timestamp,
    }));
    return { addr, height: Number(c.height) };
  }

  /** A served Token as a staged tokens row (a dump record); its id and height. */
  private stageToken(ins: Database.Statement, addr: string, url: string, text: string): { tokenId: string; height: number; object: boolean } {
    const t = parseJson<{ collection_addr: string; object_addr: string; owner: string; nft: { token_id: string; uri: string }; height: number; timestamp: string }>(url, text);
    ins.run(addr, t.nft.token_id, JSON.stringify({
      collection_addr: t.collection_addr, token_id: t.nft.token_id, object_addr: t.object_addr || undefined,
      owner: t.owner, uri: t.nft.uri, height: t.height, timestamp: t.timestamp,
    }));
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
      await this.eachPage(`/indexer/nft/v1/tokens/by_collection/${addr}`, 'tokens', () => this.listPage, (url, page) => {
        db.transaction(() => {
          for (const text of page.items) {
            sawToken = true;
            if (this.stageToken(insToken, addr, url, text).object) sawObject = true;
          }
        })();
        progress?.records(page.items.length);
      });
    });
    return { token: sawToken, object: sawObject };
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
  async changedTokens(since: NftChangesSince, vmType: VmType, from: number, to: number,
    newest?: Promise<ReturnType<typeof members>>): Promise<string | undefined> {
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
      try { hex = canonicalAddress(addr, o.prefix).toString('hex'); } catch { throw new HttpError(url, 200, `GET ${url}: collection ${addr} has no valid address`); }
      staged.set(hex, addr);
    };
    // New collections: newest first by height (rollytics orders the list by height only).
    await this.eachPage(NEWEST_COLLECTIONS, 'collections', (n) => Math.min(this.listPage, 25 * 4 ** n), (url, page) => {
      let below = false;
      for (const text of page.items) {
        const height = Number(parseJson<number | string>(url, rawMembers(text).get('height') ?? '0'));
        if (!(height >= since.height)) { below = true; break; }
        stage(url, text);
      }
      return below;
    }, this.listPage >= 25 ? newest : undefined);
    await forEachConcurrent([...candidates].filter((hex) => !staged.has(hex)), this.concurrency, async (hex) => {
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
    });
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
      await this.eachPage(`/indexer/nft/v1/tokens/by_collection/${addr}?order_by=height&pagination.reverse=true&pagination.count_total=false`,
        'tokens', (n) => Math.min(this.listPage, 25 * 4 ** n), (url, page) => {
          let below = false;
          db.transaction(() => {
            for (const text of page.items) {
              const height = Number(parseJson<number | string>(url, rawMembers(text).get('height') ?? '0'));
              if (!(height >= since.height)) { below = true; break; }
              const t = this.stageToken(insToken, addr, url, text);
              if (!ours.hasToken(hex, t.tokenId)) fresh++;
            }
          })();
          progress?.records(page.items.length);
          return below;
        });
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
    const { db, base, o, progress } = this;
    progress?.stage('crawl token txs');
    const bySeqHash = db.prepare('SELECT sequence FROM txs WHERE hash = ? AND height = ?').pluck();
    const insLink = db.prepare('INSERT OR IGNORE INTO token_txs (collection, token_id, sequence) VALUES (?, ?, ?)');
    // Keyset chunks (a statement cannot stay open while the workers write).
    const chunk = db.prepare(`SELECT collection, token_id FROM tokens WHERE (collection, token_id) > (?, ?)
      ${o.linkTokensSince !== undefined ? "AND json_extract(text, '$.height') >= " + Math.floor(o.linkTokensSince) : ''}
      ORDER BY collection, token_id LIMIT 5000`).raw();
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
      let keyParam = '';
      for (;;) {
        const path = `/indexer/nft/v1/txs/${collection}/${encodeURIComponent(tokenId)}?pagination.limit=${PAGE}&pagination.reverse=false&pagination.count_total=false${keyParam}`;
        const page = await this.page(path, 'txs');
        db.transaction(() => {
          for (const text of page.items) {
            const m = rawMembers(text);
            const hash = parseJson<string>(base + path, m.get('txhash') ?? '""').toUpperCase();
            const height = Number(parseJson<string>(base + path, m.get('height') ?? '""'));
            if (height < from || height > to) continue; // outside the crawled range
            const seq = bySeqHash.get(hash, height) as number | undefined;
            if (seq === undefined) throw new HttpError(base + path, 200, `GET ${base}${path}: tx ${hash} (height ${height}) is not in the crawled tx list`);
            insLink.run(collection, tokenId, seq);
          }
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
    const { db, progress } = this;
    const heights = db.prepare('SELECT height FROM blocks WHERE tx_count > 0 ORDER BY height').pluck().all() as number[];
    const groups = [['evm-txs', 'evm_txs', 'txs'], ['evm-internal-txs', 'evm_internal_txs', 'internal_txs']] as const;
    const indexed = this.inflight.start(this.indexesInternalTxs().then((yes) => { this.internalTxs = yes; return yes; }));
    const crawlGroup = async ([group, table, itemsKey]: (typeof groups)[number]): Promise<void> => {
      if (group === 'evm-internal-txs' && !await indexed) return;
      progress?.stage(`crawl ${group}`);
      const ins = db.prepare(`INSERT OR IGNORE INTO ${table} (height, pos, text) VALUES (?, ?, ?)`);
      await forEachConcurrent(heights, this.concurrency, async (height) => {
        let keyParam = '';
        for (let pos = 0; ;) {
          const path = `/indexer/tx/v1/${group}/by_height/${height}?pagination.limit=${PAGE}&pagination.reverse=false&pagination.count_total=false${keyParam}`;
          const page = await this.page(path, itemsKey);
          db.transaction(() => { for (const text of page.items) ins.run(height, pos++, text); })();
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
    await readRichList(this.http, this.base, this.o.denoms, vmType, denomContracts, this.concurrency, (stored, holders) => {
      db.transaction(() => {
        for (const h of holders) insHolder.run(stored, h.account, JSON.stringify({ denom: stored, account: h.account, amount: h.amount }));
      })();
      progress?.records(holders.length);
    }, this.listPage);
  }
}

/** The denom a rich list is stored under: on EVM its ERC-20 contract (`0x…`), else the denom lower-cased. */
export function storedRichListDenom(denom: string, vmType: VmType, denomContracts: ReadonlyMap<string, string>): string {
  const stored = denom.toLowerCase();
  if (vmType !== 'evm' || stored.startsWith('0x')) return stored;
  const c = denomContracts.get(stored) ?? (/^evm\/[0-9a-f]{40}$/.test(stored) ? `0x${stored.slice(4)}` : undefined);
  if (!c) throw new Error(`--denoms ${denom}: on EVM the rich list is stored by ERC-20 contract; pass the 0x contract or list the denom in --denom-contracts`);
  return c;
}

/**
 * Every holder of `denoms` as served (`/indexer/richlist/v1/{denom}`, offset pages of 1000, in
 * parallel once the first page gave the total), handed to `put` page by page with the stored
 * denom. Returns, per stored denom, the `pagination.total` the first page announced (undefined
 * when the API did not count): rollytics orders holders by amount without a tie-breaker, so
 * offset pages can repeat or skip holders of equal amounts — a reader that must be exact
 * compares the distinct holders it got with it (src/follow/richlist-refresh.ts).
 */
export async function readRichList(http: HttpClient, base: string, denoms: readonly string[], vmType: VmType,
  denomContracts: ReadonlyMap<string, string>, concurrency: number,
  put: (stored: string, holders: { account: string; amount: string }[], url: string) => void, pageSize = PAGE): Promise<Map<string, number | undefined>> {
  const totals = new Map<string, number | undefined>();
  // one denom's pages in order, by next_key (docs/api-contract.md#deep-offsets: our server refuses
  // offsets past 10,000; rollytics' next_key is an offset it carries out); the denoms in parallel
  await forEachConcurrent(denoms, concurrency, async (denom) => {
    const stored = storedRichListDenom(denom, vmType, denomContracts);
    let nextKey: string | null = null;
    for (let n = 0; ; n++) {
      const path: string = `/indexer/richlist/v1/${encodeURIComponent(denom)}?pagination.limit=${pageSize}${nextKey === null ? '' : `&pagination.key=${encodeURIComponent(nextKey)}`}`;
      const page = members(base + path, await http.get(path), 'holders');
      if (n === 0) totals.set(stored, page.total);
      put(stored, page.items.map((text) => parseJson<{ account: string; amount: string }>(base + path, text)), base + path);
      if (page.items.length < pageSize || page.nextKey === null) break;
      nextKey = page.nextKey;
    }
  });
  return totals;
}

/**
 * follow's collections audit (src/follow/collections-audit.ts): every collection of an API with
 * its NFT count and names, keyed by canonical hex — pages by next_key, one after the other.
 */
export async function readCollectionStates(http: HttpClient, base: string, prefix: string, pageSize = PAGE): Promise<Map<string, CollectionState>> {
  const out = new Map<string, CollectionState>();
  let nextKey: string | null = null;
  for (;;) {
    const path: string = `/indexer/nft/v1/collections?pagination.reverse=false&pagination.count_total=false&pagination.limit=${pageSize}${nextKey === null ? '' : `&pagination.key=${encodeURIComponent(nextKey)}`}`;
    const page = members(base + path, await http.get(path), 'collections');
    for (const text of page.items) {
      const c = parseJson<{ object_addr?: unknown; collection?: { name?: unknown; origin_name?: unknown; nfts?: { length?: unknown } } }>(base + path, text);
      let hex: string;
      try { hex = canonicalAddress(String(c.object_addr), prefix).toString('hex'); } catch {
        throw new HttpError(base + path, 200, `GET ${base}${path}: collection ${JSON.stringify(c.object_addr)} has no valid address`);
      }
      const n = c.collection?.nfts?.length;
      out.set(hex, { count: Number(n), name: String(c.collection?.name ?? ''), originName: String(c.collection?.origin_name ?? '') });
    }
    if (page.items.length < pageSize || page.nextKey === null) return out;
    nextKey = page.nextKey;
  }
}

function sourceFromStaging(db: Database.Database, c: Crawl, o: ApiSourceOptions, base: string, dispose: () => void,
  http: HttpClient): ImportSource {
  const at = (what: string): string => `${base} ${what}`;
  const count = (table: string): number => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
  const totals: Record<string, number> = {
    meta: 1, validators: count('validators'), blocks: count('blocks'), txs: count('txs'), collections: count('collections'),
    tokens: count('tokens'), token_txs: count('token_txs'), richlist: count('holders'),
    evm_txs: count('evm_txs'), evm_internal_txs: count('evm_internal_txs'),
  };
  function* rows<T>(sql: string): Generator<T> {
    yield* db.prepare(sql).iterate() as IterableIterator<T>;
  }
  const kinds: Record<string, () => AsyncIterable<NdjsonLine> | Iterable<NdjsonLine> | undefined> = {
    meta: () => [record(at('/status'), JSON.stringify({
      chain_id: c.status.chain_id, vm_type: c.vmType, bech32_prefix: o.prefix,
      version: c.status.version ?? 'dev', commit_hash: c.status.commit_hash ?? 'unknown', source: `api ${base}`,
      ...(c.to === c.status.height ? { height: c.status.height } : {}),
      internal_tx_height: c.status.internal_tx_height ?? 0,
      // recorded on every crawl of an EVM source: an extension turned on (or off) later is seen by the next batch
      ...(c.vmType === 'evm' && c.internalTxs !== undefined ? { evm_internal_txs: c.internalTxs } : {}),
      ...(o.withoutRichList ? {} : { rich_list_height: c.status.rich_list_height ?? 0 }),
      // rollytics' cleanup progress, passed on as the source shows it (the loader checks the values)
      ...Object.fromEntries(STATUS_EXTENSIONS.filter((k) => c.status[k] !== undefined).map((k) => [k, c.status[k]])),
    }))],
    validators: () => (o.validatorsFile ? ndjsonFile(o.validatorsFile) : (function* () {
      for (const v of rows<{ operator: string; moniker: string }>('SELECT operator, moniker FROM validators ORDER BY operator')) {
        yield record(at(`validator ${v.operator}`), JSON.stringify({ proposer: v.operator, moniker: v.moniker, operator_address: v.operator }));
      }
    })()),
    blocks: () => (function* () {
      let prevUs: number | undefined = o.previousBlockUs;
      for (const b of rows<{ height: number; text: string; seconds: string; block_time: number; ts: string | null }>(
        'SELECT b.height, b.text, b.seconds, b.block_time, t.ts FROM blocks b LEFT JOIN block_times t ON t.height = b.height ORDER BY b.height')) {
        let ts = b.ts;
        if (ts === null) {
          // Empty block: only whole seconds are served; estimate within that second.
          const sec = parseUtcMicros(b.seconds);
          if (sec !== undefined) {
            const est = prevUs !== undefined ? prevUs + b.block_time * 1000 : sec;
            ts = formatMicrosUtc(Math.min(Math.max(est, sec), sec + 999_999));
          } else {
            ts = b.seconds; // the loader reports it
          }
        }
        prevUs = parseUtcMicros(ts);
        yield record(at(`block ${b.height}`), b.text.slice(0, -1) + ',"timestamp":' + JSON.stringify(ts) + '}');
      }
    })(),
    txs: () => (function* () {
      for (const t of rows<{ sequence: number; hash: string; text: string }>('SELECT sequence, hash, text FROM txs ORDER BY sequence')) {
        yield record(at(`tx ${t.hash} (sequence ${t.sequence})`), '{"sequence":' + t.sequence + ',"tx":' + t.text + '}');
      }
    })(),
    collections: () => (function* () {
      for (const r of rows<{ addr: string; text: string }>('SELECT addr, text FROM collections ORDER BY height, addr')) {
        yield record(at(`collection ${r.addr}`), r.text);
      }
    })(),
    tokens: () => (function* () {
      for (const r of rows<{ collection: string; token_id: string; text: string }>('SELECT collection, token_id, text FROM tokens ORDER BY collection, token_id')) {
        yield record(at(`token ${r.collection} ${JSON.stringify(r.token_id)}`), r.text);
      }
    })(),
    token_txs: () => (c.vmType === 'move' ? undefined : (function* () {
      for (const r of rows<{ collection: string; token_id: string; sequence: number }>('SELECT collection, token_id, sequence FROM token_txs ORDER BY collection, token_id, sequence')) {
        yield record(at(`nft tx ${r.collection} ${JSON.stringify(r.token_id)} ${r.sequence}`),
          JSON.stringify({ collection_addr: r.collection, token_id: r.token_id, sequence: r.sequence }));
      }
    })()),
    richlist: () => (o.denoms.length && !o.withoutRichList ? (function* () {
      for (const r of rows<{ denom: string; account: string; text: string }>('SELECT denom, account, text FROM holders ORDER BY denom, account')) {
        yield record(at(`holder ${r.denom} ${r.account}`), r.text);
      }
    })() : undefined),
    denom_contracts: () => (o.denomContractsFile ? ndjsonFile(o.denomContractsFile) : undefined),
    // Sequences are numbered from 1 (or after a base snapshot's) in (height, position) order over the crawled range.
    evm_txs: () => (c.vmType !== 'evm' ? undefined : (function* () {
      let sequence = o.evmSequenceStart?.txs ?? 0;
      for (const r of rows<{ height: number; text: string }>('SELECT height, text FROM evm_txs ORDER BY height, pos')) {
        sequence++;
        yield record(at(`evm tx ${sequence} (height ${r.height})`), '{"sequence":' + sequence + ',"height":' + r.height + ',"receipt":' + r.text + '}');
      }
    })()),
    // The served object has the record's fields (height, hash, index, parent_index, ...) but the sequence.
    evm_internal_txs: () => (c.vmType !== 'evm' ? undefined : (function* () {
      let sequence = o.evmSequenceStart?.internal ?? 0;
      for (const r of rows<{ height: number; text: string }>('SELECT height, text FROM evm_internal_txs ORDER BY height, pos')) {
        sequence++;
        yield record(at(`evm internal tx ${sequence} (height ${r.height})`), '{"sequence":' + sequence + ',' + r.text.slice(1));
      }
    })()),
  };
  return {
    describe: `api ${base}`,
    lineBased: false,
    partialKinds: () => new Set(c.changedTokensOnly ? ['collections', 'tokens'] : []),
    completeCollections: () => c.completeCollections,
    fullStateReason: () => c.fullNftReason,
    records(kind) {
      const k = kinds[kind]?.();
      if (!k) return undefined;
      return (async function* () { yield* k; })();
    },
    total: (kind) => totals[kind],
    stats: () => ({ requests: http.stats.requests, retries: http.stats.retries, bytes: http.stats.bytes }),
    dispose,
    async close() { dispose(); },
  };
}
