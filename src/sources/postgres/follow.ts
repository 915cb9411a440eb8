/**
 * `follow --from-postgres DSN`: the database as a FollowSource (src/sources/contracts.ts). Its
 * polls are ./head.ts'; a batch is the import's read of the new heights (./source.ts
 * openPostgresSource); the rich list and the collection list are read whole apart from the batches
 * (./state.ts).
 */
import type { SourceOptions } from '../../settings/source';
import type { FollowSource, FollowSourceOptions } from '../contracts';
import type { HttpOptions } from '../http';
import { redactDsn } from './dsn';
import { postgresHead } from './head';
import { openPostgresSource } from './source';
import { readPostgresCollections, readPostgresRichList } from './state';

/** The follower retries the whole step with backoff and logs each failure: no retries below it. */
function noRetries(http: HttpOptions): HttpOptions {
  return { ...http, retries: 0 };
}

export function openPostgresFollowSource(dsn: string, o: FollowSourceOptions): FollowSource {
  const where = redactDsn(dsn);
  const tip = postgresHead(dsn, o.chainId);
  return {
    describe: `postgres ${where}`,
    head: () => tip.head(),
    hashAt: (height) => tip.hashAt(height),
    chainId: () => tip.chainId(),
    collections: {
      describe: `postgres ${where}`,
      read: () => readPostgresCollections(dsn),
    },
    batch(from, to, _tip, ours, recheck) {
      return openPostgresSource({
        nftChangesSince: { height: from, ours, recheck },
        dsn,
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
        return readPostgresRichList(dsn, (r) => {
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

/** The database's chain id (the `block` table, or --chain-id's), asked once before anything is read from it. */
export async function postgresChainId(dsn: string, o: SourceOptions): Promise<string | undefined> {
  const tip = postgresHead(dsn, o.chainId);
  try {
    return await tip.chainId();
  } finally {
    await tip.close();
  }
}
