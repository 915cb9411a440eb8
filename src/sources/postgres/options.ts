/** `import --from-postgres` / follow's PostgreSQL batches: what is read (./source.ts openPostgresSource). */
import type { VmType } from '../../lib/vm';
import type { NftChangesSince } from '../../records/source';
import type { HttpOptions } from '../http';

export interface PostgresSourceOptions {
  dsn: string;
  vmType: VmType;
  prefix: string;
  /** default: the single chain_id found in `block` */
  chainId?: string;
  /** NDJSON in validators.ndjson format */
  validatorsFile?: string;
  /** without validatorsFile: a chain node's REST API, asked once per distinct proposer (node-rest.ts) */
  rest?: { url: string; http: HttpOptions };
  /** NDJSON in denom_contracts.ndjson format (EVM) */
  denomContractsFile?: string;
  /** what /status reports as version / commit_hash (rollytics' build; default dev / unknown) */
  statusVersion: string;
  statusCommit: string;
  /**
   * rows fetched per cursor read (default 100). Small on purpose: a batch (and the next one,
   * prefetched) lives while its rows are validated, long enough for V8 to promote big row
   * strings to the old generation; with 500 the 1M-tx import peaked at 554 MB, with 100 at
   * 484 MB, ≈10 % slower.
   */
  batchRows?: number;
  /**
   * only the history of these heights (blocks, txs, NFT ↔ tx links, EVM rows; `follow` and
   * updates on a base); current state (NFTs, rich list) is read whole (but see nftChangesSince)
   */
  fromHeight?: number;
  toHeight?: number;
  /**
   * follow: deliver only the NFTs whose `height` ≥ `height` (rollytics sets an NFT's height on
   * every change: mint, transfer, update) and the collections that can have changed — when that
   * is provably the whole change: per read collection, `ours`' count plus the delivered NFTs it
   * does not hold must equal `nft_collection.nft_count`, and the names must match. Otherwise (a
   * renamed or removed collection) both tables are delivered whole, as without this option.
   */
  nftChangesSince?: NftChangesSince;
  /**
   * follow: the rich list is refreshed apart from the block batches (src/follow/richlist-refresh.ts):
   * no `richlist` records, and a meta without `rich_list_height` (the snapshot's stays)
   */
  withoutRichList?: boolean;
}
