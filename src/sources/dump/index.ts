/**
 * `--from-dump DIR`, registered (src/sources/registry.ts): a dump directory of NDJSON files
 * (./source.ts), import's only (follow has no dump to poll); it names its own chain and prefix
 * (chain.json).
 */
import { checkInputDir } from '../../lib/paths';
import type { SourceKind } from '../contracts';
import { dumpSource } from './source';

export const DUMP_SOURCE: SourceKind = {
  option: 'from-dump',
  arg: 'DIR',
  declaration: { type: 'string', describe: 'Dump directory of NDJSON files (plain or .gz)' },
  import: {
    listed: 1,
    // a dump names its own prefix (chain.json)
    ownPrefix: true,
    checkPaths: (dir) => checkInputDir('--from-dump', dir),
    open: async (dir) => ({ ...dumpSource(dir), lineBased: true, close: async () => undefined }),
  },
};
