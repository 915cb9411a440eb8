/**
 * Rich lists from an API: the holders of each --denoms entry page by page, under the denom they
 * are stored by (on EVM its ERC-20 contract, --denom-contracts). Read by a crawl (Crawler.richList)
 * and by follow's rich-list refresh (./follow.ts).
 */
import type { VmType } from '../../lib/vm';
import { ndjsonFile } from '../../records/source';
import { HttpClient, forEachConcurrent } from '../http';
import { members, PAGE, parseJson } from './answers';
import type { ApiSourceOptions } from './options';

/** --denom-contracts as a lower-cased denom → contract map (bad lines are the loader's to report). */
export async function readDenomContracts(o: Pick<ApiSourceOptions, 'denomContractsFile'>): Promise<Map<string, string>> {
  const denomContracts = new Map<string, string>();
  if (o.denomContractsFile) {
    for await (const l of ndjsonFile(o.denomContractsFile)) {
      try {
        const d = JSON.parse(l.text) as { denom?: unknown; contract?: unknown };
        if (typeof d.denom === 'string' && typeof d.contract === 'string') denomContracts.set(d.denom.toLowerCase(), d.contract.toLowerCase());
      } catch {
        /* the loader reports a bad line when it reads the file */
      }
    }
  }
  return denomContracts;
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
export async function readRichList(
  http: HttpClient,
  base: string,
  denoms: readonly string[],
  vmType: VmType,
  denomContracts: ReadonlyMap<string, string>,
  concurrency: number,
  put: (stored: string, holders: { account: string; amount: string }[], url: string, next: string | undefined) => void,
  pageSize = PAGE,
  /** a resumed crawl: where a denom goes on (null: from the start; false: it is done) */
  startAt?: (stored: string) => string | null | false,
): Promise<Map<string, number | undefined>> {
  const totals = new Map<string, number | undefined>();
  // one denom's pages in order, by next_key (docs/api-contract.md#deep-offsets: our server refuses
  // offsets past 10,000; rollytics' next_key is an offset it carries out); the denoms in parallel
  await forEachConcurrent(denoms, concurrency, async (denom) => {
    const stored = storedRichListDenom(denom, vmType, denomContracts);
    const start = startAt?.(stored) ?? null;
    if (start === false) return;
    let nextKey: string | null = start;
    for (let n = 0; ; n++) {
      const path: string =
        `/indexer/richlist/v1/${encodeURIComponent(denom)}?pagination.limit=${pageSize}` +
        `${nextKey === null ? '' : `&pagination.key=${encodeURIComponent(nextKey)}`}`;
      const page = members(base + path, await http.get(path), 'holders');
      if (n === 0 && start === null) totals.set(stored, page.total);
      const last = page.items.length < pageSize || page.nextKey === null;
      // `next`: the key the denom goes on from, undefined once it is done
      put(
        stored,
        page.items.map((text) => parseJson<{ account: string; amount: string }>(base + path, text)),
        base + path,
        last ? undefined : (page.nextKey as string),
      );
      if (last) break;
      nextKey = page.nextKey;
    }
  });
  return totals;
}
