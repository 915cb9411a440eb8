/**
 * `--from-api URL`, registered (src/sources/registry.ts): import crawls the API (./source.ts
 * openApiSource, its staging kept for the next run to go on from), follow polls it (./follow.ts),
 * its chain is the chain_id of its /status.
 */
import { httpUrl } from '../../settings/numbers';
import { openSnapshotFile } from '../../snapshot/open';
import { prepareTipQueries } from '../../snapshot/queries/tip';
import { tempPathBeside } from '../../snapshot/store';
import type { ImportContext, ImportSourceConfig, SourceKind } from '../contracts';
import { apiChainId, openApiFollowSource } from './follow';
import { openApiSource } from './source';
import { crawlStagingPath } from './staging';

/** import --from-api: the crawl, on a base from its highest block + 1 by default. */
async function openForImport(url: string, o: ImportSourceConfig, c: ImportContext): ReturnType<typeof openApiSource> {
  // On top of a base snapshot, the crawl starts after the base's highest block by default.
  let fromHeight = o.fromHeight;
  let evmSequenceStart: { txs: number; internal: number } | undefined;
  let previousBlockUs: number | undefined;
  if (o.base !== undefined) {
    const b = openSnapshotFile(o.base, {});
    try {
      const tip = prepareTipQueries(b.db);
      fromHeight ??= tip.height() + 1;
      evmSequenceStart = tip.evmSequences();
      previousBlockUs = tip.blockTimeUs(fromHeight - 1);
    } finally {
      b.close();
    }
  }
  return openApiSource({
    url,
    vmType: o.vmType,
    prefix: o.bech32Prefix,
    fromHeight,
    evmSequenceStart,
    previousBlockUs,
    toHeight: o.toHeight,
    denoms: o.denoms ?? [],
    http: o.http,
    validatorsFile: o.validators,
    denomContractsFile: o.denomContracts,
    progress: c.progress,
    historyPage: o.crawlPage,
    // kept when the import fails or is killed: the same command goes on from it
    ...(o.resumeCrawl === false ? { stagingPath: tempPathBeside(o.out) } : { stagingPath: crawlStagingPath(o.out), resumable: true, log: c.log, out: o.out }),
  });
}

export const API_SOURCE: SourceKind = {
  option: 'from-api',
  arg: 'URL',
  declaration: httpUrl({ describe: 'Base URL of a running rollytics-compatible API (rollytics or indexer-api)' }),
  import: {
    listed: 3,
    keptStaging: (o) => (o.resumeCrawl !== false ? crawlStagingPath(o.out) : undefined),
    open: openForImport,
  },
  follow: {
    listed: 1,
    open: openApiFollowSource,
    chainId: apiChainId,
  },
};
