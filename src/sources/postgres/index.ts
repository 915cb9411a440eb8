/**
 * `--from-postgres DSN`, registered (src/sources/registry.ts): import reads the database in one
 * transaction (./source.ts openPostgresSource), follow polls it (./follow.ts), its chain is the
 * `block` table's (or --chain-id).
 */
import type { SourceKind } from '../contracts';
import { openPostgresFollowSource, postgresChainId } from './follow';
import { openPostgresSource } from './source';

export const POSTGRES_SOURCE: SourceKind = {
  option: 'from-postgres',
  arg: 'DSN',
  declaration: {
    type: 'string',
    describe: 'rollytics PostgreSQL DSN (postgres://user:pass@host:5432/db); an import (or a follow batch) reads in one read-only REPEATABLE READ transaction',
  },
  import: {
    listed: 2,
    async open(dsn, o) {
      if (!o.vmType) throw new Error('--from-postgres needs --vm-type (move, wasm or evm): rollytics keeps it in its config, not in the database');
      return openPostgresSource({
        dsn,
        vmType: o.vmType,
        prefix: o.bech32Prefix,
        chainId: o.chainId,
        validatorsFile: o.validators,
        rest: o.restUrl === undefined ? undefined : { url: o.restUrl, http: o.http },
        denomContractsFile: o.denomContracts,
        statusVersion: o.statusVersion,
        statusCommit: o.statusCommit,
      });
    },
  },
  follow: {
    listed: 2,
    open: openPostgresFollowSource,
    chainId: postgresChainId,
  },
};
