/**
 * What `follow` asks of its source: how high it is, which block it has at a height (to notice
 * a source that went backwards), and the records of a range of new heights — the same
 * ImportSource the importer reads (src/sources/*), so validation and derivation are the
 * importer's.
 */
import type { VmType } from '../lib/vm';
import { openApiSource } from '../sources/api/source';
import { readCollectionStates } from '../sources/api/nft-state';
import { readDenomContracts, readRichList } from '../sources/api/richlist';
import { HttpClient, type HttpOptions } from '../sources/http';
import { openPostgresSource } from '../sources/postgres/source';
import { postgresHead } from '../sources/postgres/head';
import { readPostgresCollections, readPostgresRichList } from '../sources/postgres/state';
import { redactDsn } from '../sources/postgres/dsn';
import type { SourceOptions } from '../settings/source';
import { ImportSource, NftStateProbe } from '../records/source';
import type { Tip } from '../snapshot/queries/tip';
import { tempPathBeside } from '../snapshot/store';
import type { RichListReader } from './richlist-refresh';
import type { CollectionLister } from './collections-audit';

/** A crawled rich list is read again at most this many times while the source's rich_list_height moves. */
const RICH_LIST_READS = 3;

/**
 * A batch of fewer heights is staged in memory (a follower at the tip: one or two heights per
 * batch); a bigger one (catching up) in a file beside the snapshot, as an import's crawl is.
 */
const MEMORY_STAGING_HEIGHTS = 16;

/** The source options with what the snapshot decided: its VM type and prefix, its file. */
export interface FollowSourceOptions extends SourceOptions {
  vmType: VmType;
  bech32Prefix: string;
  /** the snapshot file: crawl staging files go beside it (cleaned like an import's temporaries) */
  db: string;
  /**
   * the crawl client's settings, resolved (src/sources/options.ts resolveHttp); its retries are
   * not used: the follower retries the whole step with backoff and logs each failure
   */
  http: HttpOptions;
  /** --from-postgres: what /status reports (with their defaults, SOURCE_OPTIONS) */
  statusVersion: string;
  statusCommit: string;
}

export interface FollowSource {
  describe: string;
  /** the source's newest height */
  head(): Promise<number>;
  /** the source's block hash at `height` (lower-case hex), undefined if it has no such block */
  hashAt(height: number): Promise<string | undefined>;
  /** the source's chain id, asked only when its blocks disagree with ours (to name another chain) */
  chainId(): Promise<string | undefined>;
  /**
   * the records of heights from..to plus the current NFT / rich-list state — only the NFTs
   * changed since `from` when `ours` proves that enough (openPostgresSource's and
   * openApiSource's nftChangesSince)
   */
  batch(from: number, to: number, tip: Tip, ours: NftStateProbe, recheck?: ReadonlySet<string>): Promise<ImportSource>;
  /**
   * the source's whole rich list, refreshed apart from the batches (src/follow/richlist-refresh.ts);
   * undefined when there is none to follow (an API without --denoms)
   */
  richList?: RichListReader;
  /** the source's whole collection list, for the collections audit (src/follow/collections-audit.ts) */
  collections: CollectionLister;
  close(): Promise<void>;
}

/** The follower retries the whole step with backoff and logs each failure: no retries below it. */
function noRetries(http: HttpOptions): HttpOptions {
  return { ...http, retries: 0 };
}

function apiSource(o: FollowSourceOptions & { fromApi: string }): FollowSource {
  const base = o.fromApi.replace(/\/+$/, '');
  // One request at a time, unpaced: /status and one block, each poll.
  const http = new HttpClient(base, { ...noRetries(o.http), concurrency: 1, rate: undefined });
  const json = async <T>(path: string): Promise<T> => {
    const text = await http.get(path);
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new Error(`GET ${base}${path}: not JSON`);
    }
  };
  return {
    describe: `api ${base}`,
    async head() {
      const s = await json<{ height?: unknown }>('/status');
      if (!Number.isSafeInteger(s.height)) throw new Error(`GET ${base}/status: no integer height`);
      return s.height as number;
    },
    async hashAt(height) {
      try {
        const b = await json<{ block?: { hash?: unknown } }>(`/indexer/block/v1/blocks/${height}`);
        return typeof b.block?.hash === 'string' ? b.block.hash.toLowerCase() : undefined;
      } catch (e) {
        if (/HTTP 404/.test((e as Error).message)) return undefined;
        throw e;
      }
    },
    richList: (o.denoms ?? []).length === 0 ? undefined : apiRichList(o, base),
    async chainId() {
      const s = await json<{ chain_id?: unknown }>('/status');
      return typeof s.chain_id === 'string' ? s.chain_id : undefined;
    },
    collections: {
      describe: `api ${base}`,
      read: () => readCollectionStates(http, base, o.bech32Prefix),
    },
    batch(from, to, tip, ours, recheck) {
      return openApiSource({
        nftChangesSince: { height: from, ours, recheck },
        url: base,
        vmType: o.vmType,
        prefix: o.bech32Prefix,
        fromHeight: from,
        toHeight: to,
        evmSequenceStart: { txs: tip.evmTxs, internal: tip.evmInternalTxs },
        txSequenceAfter: tip.txs,
        previousBlockUs: tip.height > 0 ? tip.timeUs : undefined,
        denoms: [],
        withoutRichList: true,
        http: noRetries(o.http),
        validatorsFile: o.validators,
        denomContractsFile: o.denomContracts,
        linkTokensSince: from,
        stagingPath: tempPathBeside(o.db),
        stageInMemory: to - from < MEMORY_STAGING_HEIGHTS,
        overlap: true,
      });
    },
    async close() {
      /* nothing held between steps */
    },
  };
}

/**
 * The --denoms rich lists of an API, read between two /status reads of rich_list_height: read
 * again when it moved, or when a denom's distinct holders are not the total its first page
 * announced (offset pages over holders of equal amounts can repeat or skip some), so a refresh
 * never mixes two states of the source.
 */
function apiRichList(o: FollowSourceOptions, base: string): RichListReader {
  const http = new HttpClient(base, noRetries(o.http));
  const concurrency = o.http.concurrency;
  const richHeight = async (): Promise<number> => {
    let s: { rich_list_height?: unknown };
    try {
      s = JSON.parse(await http.get('/status')) as typeof s;
    } catch (e) {
      throw e instanceof SyntaxError ? new Error(`GET ${base}/status: not JSON`) : e;
    }
    return s.rich_list_height === undefined ? 0 : Number(s.rich_list_height);
  };
  return {
    describe: `api ${base}`,
    async read(sink) {
      const contracts = await readDenomContracts({ denomContractsFile: o.denomContracts });
      let why = '';
      for (let attempt = 1; attempt <= RICH_LIST_READS; attempt++) {
        sink.reset();
        const before = await richHeight();
        const totals = await readRichList(http, base, o.denoms ?? [], o.vmType, contracts, concurrency, (stored, holders, url) => {
          holders.forEach((h, i) => sink.put(stored, h.account, h.amount, `${url} holder ${i}`));
        });
        const after = await richHeight();
        const off = [...totals].find(([d, total]) => total !== undefined && sink.count(d) !== total);
        if (before === after && !off) return { height: after };
        why =
          before !== after
            ? `its rich_list_height moved from ${before} to ${after} while it was read`
            : `denom ${off?.[0]}: ${sink.count(off?.[0] as string)} distinct holders read, the source counts ${off?.[1]}`;
      }
      throw new Error(`${base}: the rich list was read ${RICH_LIST_READS} times and never in one state: ${why}`);
    },
  };
}

function postgresSource(o: FollowSourceOptions & { fromPostgres: string }): FollowSource {
  const where = redactDsn(o.fromPostgres);
  const tip = postgresHead(o.fromPostgres, o.chainId);
  return {
    describe: `postgres ${where}`,
    head: () => tip.head(),
    hashAt: (height) => tip.hashAt(height),
    chainId: () => tip.chainId(),
    collections: {
      describe: `postgres ${where}`,
      read: () => readPostgresCollections(o.fromPostgres),
    },
    batch(from, to, _tip, ours, recheck) {
      return openPostgresSource({
        nftChangesSince: { height: from, ours, recheck },
        dsn: o.fromPostgres,
        vmType: o.vmType,
        prefix: o.bech32Prefix,
        chainId: o.chainId,
        validatorsFile: o.validators,
        rest: o.restUrl === undefined ? undefined : { url: o.restUrl, http: noRetries(o.http) },
        denomContractsFile: o.denomContracts,
        statusVersion: o.statusVersion,
        statusCommit: o.statusCommit,
        fromHeight: from,
        toHeight: to,
        withoutRichList: true,
      });
    },
    richList: {
      describe: `postgres ${where}`,
      async read(sink) {
        sink.reset();
        return readPostgresRichList(o.fromPostgres, (r) => {
          let h: { denom?: unknown; account?: unknown; amount?: unknown };
          try {
            h = JSON.parse(r.text) as typeof h;
          } catch {
            throw new Error(`${r.file}: not JSON`);
          }
          if (!sink.put(h.denom as string, h.account as string, h.amount as string, r.file)) {
            throw new Error(`${r.file}: denom: duplicate holder for denom ${JSON.stringify(String(h.denom).toLowerCase())}`);
          }
        });
      },
    },
    close: () => tip.close(),
  };
}

/**
 * The source's chain id, asked once before anything is read from it (follow --expect-chain-id
 * before its first import): /status of an API, the `block` table of a database.
 */
export async function sourceChainId(o: SourceOptions & { http: HttpOptions }): Promise<string | undefined> {
  if (o.fromApi !== undefined) {
    const base = o.fromApi.replace(/\/+$/, '');
    const http = new HttpClient(base, { ...o.http, concurrency: 1, rate: undefined });
    let s: { chain_id?: unknown };
    try {
      s = JSON.parse(await http.get('/status')) as typeof s;
    } catch (e) {
      throw e instanceof SyntaxError ? new Error(`GET ${base}/status: not JSON`) : e;
    }
    return typeof s.chain_id === 'string' ? s.chain_id : undefined;
  }
  if (o.fromPostgres === undefined) throw new Error('name exactly one source: --from-api URL or --from-postgres DSN');
  const tip = postgresHead(o.fromPostgres, o.chainId);
  try {
    return await tip.chainId();
  } finally {
    await tip.close();
  }
}

export function openFollowSource(o: FollowSourceOptions): FollowSource {
  if ((o.fromApi === undefined) === (o.fromPostgres === undefined)) throw new Error('name exactly one source: --from-api URL or --from-postgres DSN');
  return o.fromApi !== undefined ? apiSource({ ...o, fromApi: o.fromApi }) : postgresSource({ ...o, fromPostgres: o.fromPostgres as string });
}
