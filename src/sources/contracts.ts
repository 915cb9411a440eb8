/**
 * What a source is to the rest of the program: the registration each kind exports from its
 * folder (SourceKind: src/sources/<kind>/index.ts, listed once in ./registry.ts) and the
 * contracts it implements for `import` (an ImportSource, src/records/source.ts) and for `follow`
 * (FollowSource, with its RichListReader and CollectionLister). `follow/` and `import/` take these
 * and never name a kind.
 */
import type { Options } from 'yargs';
import type { VmType } from '../lib/vm';
import type { ImportProgress } from '../records/from-dump';
import type { ImportSource, NftStateProbe } from '../records/source';
import type { SourceOptions } from '../settings/source';
import type { CollectionState } from '../snapshot/queries/nft-state';
import type { Tip } from '../snapshot/queries/tip';
import type { HttpOptions } from './http';

/** Where a reader puts the holders it reads; the refresher (src/follow/richlist-refresh.ts) validates and stages them. */
export interface RichListSink {
  /** forget what was put (a read starting again) */
  reset(): void;
  /** one holder as the source gives it; false when (denom, account) was already put */
  put(denom: string, account: string, amount: string, label: string): boolean;
  /** distinct holders of a stored denom put so far */
  count(denom: string): number;
}

/** A source's whole rich list: what `follow` refreshes. */
export interface RichListReader {
  describe: string;
  /** Puts every holder into `sink` (after reset()), returns the height the rich list reflects. */
  read(sink: RichListSink): Promise<{ height: number }>;
}

/** A source's whole collection list: counts and names by lower-case hex address (src/follow/collections-audit.ts). */
export interface CollectionLister {
  describe: string;
  read(): Promise<Map<string, CollectionState>>;
}

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

/**
 * What `follow` asks of its source: how high it is, which block it has at a height (to notice
 * a source that went backwards), and the records of a range of new heights — the same
 * ImportSource the importer reads, so validation and derivation are the importer's.
 */
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

/**
 * What an import hands the source it opens: its options, every default decided (import's
 * resolveImport, src/import/run.ts, whose ImportConfig is one of these).
 */
export interface ImportSourceConfig extends SourceOptions {
  bech32Prefix: string;
  statusVersion: string;
  statusCommit: string;
  /** the crawl client of --from-api and --rest-url */
  http: HttpOptions;
  /** the snapshot built on (import --base) */
  base?: string;
  out: string;
  /** --from-api */
  fromHeight?: number;
  toHeight?: number;
  crawlPage?: number;
  resumeCrawl?: boolean;
}

/** What an import gives the source it opens besides its options. */
export interface ImportContext {
  progress: ImportProgress;
  /** a line for the operator (`import: ` is put before it) */
  log: (line: string) => void;
}

/**
 * One kind of source, as its folder registers it (src/sources/<kind>/index.ts) and
 * ./registry.ts lists it: the option that names it, how it opens for `import` and for `follow`
 * (a kind without `follow` is import's only), how it names its chain. The option's value is the
 * source's address (a directory, a DSN, a URL).
 */
export interface SourceKind {
  /** the option that names it, kebab-case without `--` (`from-api`); its camelCase is the options' key */
  option: string;
  /** what its value is, as "name exactly one source" says it (`URL`) */
  arg: string;
  /** the option's declaration: help, type, check (src/settings/numbers.ts; `named` by the command's table) */
  declaration: Options;
  import: {
    /** where this kind is named in import's "name exactly one source" message (1 first) */
    listed: number;
    /** the source names its own bech32 prefix (a dump's chain.json): --bech32-prefix is not checked */
    ownPrefix?: boolean;
    /** the paths it reads, checked before any work (src/lib/paths.ts) */
    checkPaths?(value: string): void;
    /** the staging an import of it keeps when it fails or is killed, for the same command to go on from (a crawl's) */
    keptStaging?(o: ImportSourceConfig): string | undefined;
    open(value: string, o: ImportSourceConfig, c: ImportContext): Promise<ImportSource>;
  };
  follow?: {
    /** where this kind is named in follow's "name exactly one source" message (1 first) */
    listed: number;
    open(value: string, o: FollowSourceOptions): FollowSource;
    /** the source's chain id, asked once before anything is read from it (follow --expect-chain-id before its first import) */
    chainId(value: string, o: SourceOptions & { http: HttpOptions }): Promise<string | undefined>;
  };
}
