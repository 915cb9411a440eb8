/**
 * `follow --from-api URL`: the API as a FollowSource (src/sources/contracts.ts). Its polls are
 * /status and one block; a batch is a crawl of the new heights (./source.ts openApiSource, staged
 * in memory when small); the --denoms rich lists and the collection list are read whole apart from
 * the batches. /status is read by one function (readStatus) for the head, the chain id and the
 * rich list's height.
 */
import { tempPathBeside } from '../../snapshot/store';
import type { SourceOptions } from '../../settings/source';
import type { FollowSource, FollowSourceOptions, RichListReader } from '../contracts';
import { HttpClient, type HttpOptions } from '../http';
import { readCollectionStates } from './nft-state';
import { readDenomContracts, readRichList } from './richlist';
import { openApiSource } from './source';

/** A crawled rich list is read again at most this many times while the source's rich_list_height moves. */
const RICH_LIST_READS = 3;

/**
 * A batch of fewer heights is staged in memory (a follower at the tip: one or two heights per
 * batch); a bigger one (catching up) in a file beside the snapshot, as an import's crawl is.
 */
const MEMORY_STAGING_HEIGHTS = 16;

/** What follow reads of an API's /status. */
interface FollowStatus {
  height?: unknown;
  chain_id?: unknown;
  rich_list_height?: unknown;
}

/** GET path, parsed as JSON. */
async function getJson<T>(http: HttpClient, base: string, path: string): Promise<T> {
  const text = await http.get(path);
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new Error(`GET ${base}${path}: not JSON`);
  }
}

/** The API's /status, parsed: the one place follow reads it. */
function readStatus(http: HttpClient, base: string): Promise<FollowStatus> {
  return getJson<FollowStatus>(http, base, '/status');
}

const chainIdOf = (s: FollowStatus): string | undefined => (typeof s.chain_id === 'string' ? s.chain_id : undefined);

/** The URL without its trailing slashes. */
export function apiBase(url: string): string {
  return url.replace(/\/+$/, '');
}

/** The follower retries the whole step with backoff and logs each failure: no retries below it. */
function noRetries(http: HttpOptions): HttpOptions {
  return { ...http, retries: 0 };
}

export function openApiFollowSource(url: string, o: FollowSourceOptions): FollowSource {
  const base = apiBase(url);
  // One request at a time, unpaced: /status and one block, each poll.
  const http = new HttpClient(base, { ...noRetries(o.http), concurrency: 1, rate: undefined });
  return {
    describe: `api ${base}`,
    async head() {
      const s = await readStatus(http, base);
      if (!Number.isSafeInteger(s.height)) throw new Error(`GET ${base}/status: no integer height`);
      return s.height as number;
    },
    async hashAt(height) {
      try {
        const b = await getJson<{ block?: { hash?: unknown } }>(http, base, `/indexer/block/v1/blocks/${height}`);
        return typeof b.block?.hash === 'string' ? b.block.hash.toLowerCase() : undefined;
      } catch (e) {
        if (/HTTP 404/.test((e as Error).message)) return undefined;
        throw e;
      }
    },
    richList: (o.denoms ?? []).length === 0 ? undefined : apiRichList(o, base),
    async chainId() {
      return chainIdOf(await readStatus(http, base));
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
    const s = await readStatus(http, base);
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

/** The API's chain id (/status), asked once before anything is read from it: with the import's retries. */
export async function apiChainId(url: string, o: SourceOptions & { http: HttpOptions }): Promise<string | undefined> {
  const base = apiBase(url);
  return chainIdOf(await readStatus(new HttpClient(base, { ...o.http, concurrency: 1, rate: undefined }), base));
}
