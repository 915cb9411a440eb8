/** `import --from-api` / follow's API batches: what a crawl is asked to do (./source.ts openApiSource). */
import type { ImportProgress } from '../../records/from-dump';
import type { NftChangesSince } from '../../records/source';
import type { VmType } from '../../lib/vm';
import type { HttpOptions } from '../http';

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
  /** heights per block page and txs per tx page (default 1000; tests use small pages to have many) */
  historyPage?: number;
  /** the crawl client's settings, resolved (src/sources/options.ts resolveHttp) */
  http: HttpOptions;
  validatorsFile?: string;
  denomContractsFile?: string;
  /** staging file (default: a temporary file in the OS temp dir) */
  stagingPath?: string;
  /**
   * import: the staging file is kept when the crawl fails or is killed and continued by the next
   * run with the same options (./resume.ts; docs/follow.md "A crawl that resumes"); the caller
   * removes it (removeStagingFile) once the snapshot is in place
   */
  resumable?: boolean;
  /** lines for the operator (a resumed crawl says what it carried over) */
  log?: (line: string) => void;
  /**
   * with resumable: the --out the crawl is for. Once the blocks are staged (their tx counts
   * known) the crawl checks that its staging and that snapshot fit in the free space there, and
   * stops naming both figures when they do not (./source.ts checkRoom)
   */
  out?: string;
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

/** ApiSourceOptions.memoryStagingTxs' default: a few MB of tx JSON (and their EVM receipts). */
export const MEMORY_STAGING_TXS = 2000;
