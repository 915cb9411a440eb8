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
 *
 * Here: openApiSource and the order of the crawl's steps (crawlInto); the steps themselves are
 * crawler.ts', the staging and the records read back from it staging.ts', the answers as read
 * answers.ts'; rich lists (also follow's refresh) richlist.ts; the NFT state of follow's
 * collections audit nft-state.ts.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { VmType } from '../../lib/vm';
import type { ImportSource } from '../../records/source';
import { checkFreeSpace } from '../../lib/paths';
import { HttpClient } from '../http';
import type { Status } from './answers';
import { Crawler, Inflight } from './crawler';
import { ApiSourceOptions, MEMORY_STAGING_TXS } from './options';
import { CrawlState } from './resume';
import { readDenomContracts } from './richlist';
import { Crawl, removeStagingFile, sourceFromStaging, Staging } from './staging';

/** Crawls the API into a staging file (or memory), then serves the records from there. */
export async function openApiSource(o: ApiSourceOptions): Promise<ImportSource> {
  const base = o.url.replace(/\/+$/, '');
  const http = new HttpClient(base, o.http);
  const concurrency = o.http.concurrency;
  const stagingPath = o.stagingPath ?? join(tmpdir(), `indexer-api-crawl-${process.pid}-${randomBytes(4).toString('hex')}`);
  let staging = new Staging(stagingPath, o.stageInMemory === true, o.resumable === true);
  let state: CrawlState | undefined;
  if (o.resumable) {
    state = new CrawlState(staging);
    const options = stagedOptions(o);
    const was = state.get('options');
    if (staging.resumed && was !== options) {
      o.log?.(`the crawl kept in ${stagingPath} was for other options (${was ?? 'unknown'}; now ${options}): starting over`);
      staging.dispose();
      removeStagingFile(stagingPath);
      staging = new Staging(stagingPath, false, true);
      state = new CrawlState(staging);
    }
    state.set('options', options);
    // the crawl's id: the load of it (a file beside --out, src/import/run.ts) goes on only from its own
    if (state.get('crawl_id') === undefined) state.set('crawl_id', randomBytes(8).toString('hex'));
  }
  const inflight = new Inflight();
  const dispose = (): void => staging.dispose();
  const loadId = state?.get('crawl_id');
  const crawled = state?.get('crawled');
  if (state !== undefined && crawled !== undefined) {
    // a crawl finished by an earlier run (its load was stopped): nothing is asked again
    const c = parseCrawl(crawled);
    // (as the crawl refuses it: the VM the data told is recorded)
    if (o.vmType !== undefined && o.vmType !== c.vmType) {
      dispose();
      throw new Error(
        `--vm-type ${o.vmType}, but ${base} serves a ${c.vmType} chain (${VM_EVIDENCE[c.vmType]}): pass --vm-type ${c.vmType}, or leave it out (--from-api detects it)`,
      );
    }
    o.log?.(`the crawl of ${base} kept in ${stagingPath} is complete (begun ${state.get('began') ?? '?'}): loading it, no request made`);
    return sourceFromStaging(staging.db, c, o, base, dispose, http, loadId);
  }
  try {
    const crawl = await crawlInto(staging, http, concurrency, o, base, inflight, state);
    // a request started ahead whose answer was not needed (the probes of a batch without txs)
    // does not outlive the batch
    await inflight.settle();
    if (state !== undefined) {
      // from here the load may let the staged txs go (ResumableLoad.loaded): the crawl is not run again
      state.set('crawled', JSON.stringify({ ...crawl, denomContracts: [...crawl.denomContracts], completeCollections: [...crawl.completeCollections] }));
      // only the crawl of the NFT tx histories looked txs up by hash
      staging.db.exec('DROP INDEX IF EXISTS txs_by_hash');
      staging.db.pragma('incremental_vacuum');
    }
    return sourceFromStaging(staging.db, crawl, o, base, dispose, http, loadId);
  } catch (e) {
    await inflight.settle();
    // a resumable crawl keeps what it committed, unless that is nothing (not even /status)
    const nothing = state !== undefined && staging.db.open && state.get('status') === undefined;
    dispose();
    if (nothing) removeStagingFile(stagingPath);
    throw e;
  }
}

/** A finished crawl as its staging records it ('crawled'). */
function parseCrawl(text: string): Crawl {
  const c = JSON.parse(text) as Omit<Crawl, 'denomContracts' | 'completeCollections'> & { denomContracts: [string, string][]; completeCollections: string[] };
  return { ...c, denomContracts: new Map(c.denomContracts), completeCollections: new Set(c.completeCollections) };
}

/** What a resumable crawl's staging holds depends on: another value of one of these, and it starts over. */
function stagedOptions(o: ApiSourceOptions): string {
  return JSON.stringify({
    // the staging's own layout (3: tx texts packed by page, brotli; 4: auto_vacuum incremental, a crawl id, shrunk by the load;
    // 5: the packed texts' lengths in bytes)
    format: 5,
    // (not the VM: it decides only which steps run, so a crawl refused for a wrong --vm-type goes on with the right one)
    from: o.fromHeight ?? null,
    to: o.toHeight ?? null,
    denoms: o.denoms,
    listPage: o.listPage ?? null,
    historyPage: o.historyPage ?? null,
    linkTokensSince: o.linkTokensSince ?? null,
  });
}

/**
 * A resumable crawl's /status and heights: those its first run read and chose (a resumed crawl
 * ends at the height it set out for, its meta is that /status), once the source is checked to be
 * the same chain, not behind it. A new crawl records them.
 */
function crawlStatus(
  state: CrawlState | undefined,
  status: Status,
  o: ApiSourceOptions,
  base: string,
  stagingPath: string,
): { status: Status; from: number; to: number } {
  const staged = state?.get('status');
  if (state === undefined || staged === undefined) {
    const range = heightRange(o, status);
    state?.set('range', JSON.stringify(range));
    state?.set('began', new Date().toISOString());
    state?.set('status', JSON.stringify(status));
    return { status, ...range };
  }
  const was = JSON.parse(staged) as Status;
  const range = JSON.parse(state.get('range') as string) as { from: number; to: number };
  if (was.chain_id !== status.chain_id) {
    throw new Error(
      `${base} serves chain "${status.chain_id}", the crawl kept in ${stagingPath} is of chain "${was.chain_id}": ` +
        'point --from-api at the chain it was crawling, or remove that file to start over',
    );
  }
  if (status.height < range.to) {
    throw new Error(
      `${base} is at height ${status.height}, below the height ${range.to} the crawl kept in ${stagingPath} set out for: ` +
        'a source behind (or reset) is not crawled; wait for it, or remove that file to start over',
    );
  }
  const c = state.carried();
  const parts = Object.entries(c)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${n} ${k.replace(/_/g, ' ')}`);
  o.log?.(
    `resuming the crawl of ${base} kept in ${stagingPath} (begun ${state.get('began') ?? '?'}, heights ${range.from}..${range.to} ` +
      `of chain ${was.chain_id}): carried over ${parts.length ? parts.join(', ') : 'nothing yet'}; asking only for what was not committed`,
  );
  return { status: was, ...range };
}

/**
 * The crawl, step by step: /status, then blocks, txs, NFTs, EVM txs and rich lists into the
 * staging file. With `overlap` the steps that need no earlier answer are started ahead and
 * awaited where the sequential crawl would run them, so a failure surfaces at the same place.
 */
async function crawlInto(
  staging: Staging,
  http: HttpClient,
  concurrency: number,
  o: ApiSourceOptions,
  base: string,
  inflight: Inflight,
  state: CrawlState | undefined,
): Promise<Crawl> {
  const crawler = new Crawler(staging, http, concurrency, o, base, inflight, state);
  const overlap = o.overlap === true && o.fromHeight !== undefined && o.toHeight !== undefined && o.vmType !== undefined;
  const ahead = overlap ? crawler.startAhead(o.fromHeight as number, o.toHeight as number) : undefined;
  const { status, from, to } = crawlStatus(state, await crawler.status(), o, base, staging.path);
  // only the rich list's crawl needs them (a follow batch has none: it is refreshed apart)
  const richList = o.denoms.length > 0 && !o.withoutRichList;
  const denomContracts = richList ? await readDenomContracts(o) : new Map<string, string>();
  await (ahead?.blocks ?? crawler.blocks(from, to));
  if (state !== undefined && o.out !== undefined) await checkRoom(crawler, staging, o.out);
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
    throw new Error(
      `--vm-type ${o.vmType}, but ${base} serves a ${told} chain (${VM_EVIDENCE[told]}): pass --vm-type ${told}, or leave it out (--from-api detects it)`,
    );
  }
  // (the tokens whose history is crawled are those staged: with changedTokensOnly the changed ones)
  if (vmType !== 'move') await crawler.tokenTxs(from, to);
  if (vmType === 'evm') await (evm ?? crawler.evmTxs());
  if (richList) await crawler.richList(vmType, denomContracts);
  const completeCollections = changedTokensOnly ? crawler.completeCollections : new Set<string>();
  return { status, vmType, from, to, denomContracts, changedTokensOnly, fullNftReason, completeCollections, internalTxs: crawler.internalTxs };
}

/**
 * Bytes of disk a crawl takes per byte of the txs it reads, at its peak: the snapshot near its
 * end beside what is left of the staging (the load lets the tx pages go as it commits them:
 * blocks, tokens, the txs' sequence, height and hash, at most one commit's pages): 1.13× the
 * snapshot on the generated Wasm chain, 0.48 bytes a tx byte (200k 4,095-byte txs, a peak of
 * 377 MiB; bench/README.md "A crawl's footprint"). Blocks: BLOCK_BYTES each.
 */
const DISK_PER_TX_BYTE = 0.5;
const BLOCK_BYTES = 500;

/**
 * Before the txs are read (the blocks staged: their tx counts are known): does the crawl fit
 * beside --out? The estimate scales the newest served txs' mean size (one request); what the
 * staging already holds counts as used. Throws a PathError naming the free space and the estimate.
 */
async function checkRoom(crawler: Crawler, staging: Staging, out: string): Promise<void> {
  const txs = crawler.txCount();
  const blocks = crawler.blockCount();
  const txBytes = txs > 0 ? await crawler.servedTxBytes() : 0;
  const estimate = Math.ceil(txs * txBytes * DISK_PER_TX_BYTE + blocks * BLOCK_BYTES);
  const used = [staging.path, `${staging.path}-wal`].reduce((n, f) => n + (existsSync(f) ? statSync(f).size : 0), 0);
  checkFreeSpace(
    '--out',
    out,
    estimate - used,
    `the crawl of ${txs} txs in ${blocks} blocks (its staging and the snapshot; ` +
      `${Math.round(txBytes * DISK_PER_TX_BYTE)} bytes a tx, from the newest txs' mean size of ${Math.round(txBytes)} bytes)`,
  );
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
