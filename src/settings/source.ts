/**
 * How `import` and `follow` read a source: SOURCE_OPTIONS, the table both commands take whole
 * after the options that name the source (each kind's own, src/sources/<kind>/index.ts; the
 * SourceOptions of src/sources/options.ts, which `follow` hands on whole to the import that builds
 * a missing snapshot), and the defaults the code applies when a caller without the
 * command line (`follow`'s first import, the fixture cut) leaves one unset — declared here, beside
 * the options that show them in `--help`.
 */
import type { Options } from 'yargs';
import { VM_TYPES, type VmType } from '../lib/vm';
import { choice, decimal, httpUrl, int, named } from './numbers';

/** What names a source and how to read it, as a command's options give it (SOURCE_OPTIONS below). */
export interface SourceOptions {
  /**
   * the source, exactly one (src/sources/registry.ts pickSource): each kind's option, by its key
   * (`--from-api` → fromApi). These are the kinds `follow` reads, typed for callers without the
   * command line; import's --from-dump is ImportOptions'. A kind's value is read by its key, so a
   * new kind needs no field here.
   */
  fromPostgres?: string;
  fromApi?: string;
  /** --from-postgres: the chain id (default: the only one in table block) */
  chainId?: string;
  /** --from-postgres: required (rollytics keeps it in its config); --from-api: detected when unset */
  vmType?: VmType;
  /** account bech32 prefix (default init) */
  bech32Prefix?: string;
  /** NDJSON file of proposer monikers (validators.ndjson format) */
  validators?: string;
  /** --from-postgres without --validators: node REST API for proposer monikers */
  restUrl?: string;
  /** EVM: NDJSON file in denom_contracts.ndjson format */
  denomContracts?: string;
  /** --from-postgres: what /status reports (rollytics keeps them in its config) */
  statusVersion?: string;
  statusCommit?: string;
  /** --from-api: rich-list denoms */
  denoms?: string[];
  /** --from-api / --rest-url HTTP client: requests in flight, requests per second, per-request timeout (ms) */
  concurrency?: number;
  rate?: number;
  timeout?: number;
}

/** The crawl HTTP client (`import --from-api`, `--rest-url`, `follow --from-api`). */
export const HTTP_CLIENT_DEFAULTS = {
  /** requests in flight */
  concurrency: 4,
  /** retries after the first attempt */
  retries: 5,
  /** per-request timeout, ms */
  timeoutMs: 30_000,
  /** first retry delay, ms (doubled per retry); not an option: tests pass less */
  backoffMs: 250,
} as const;

/** A source's options (`import`, `follow`): what /status reports of a PostgreSQL source (rollytics keeps these in its build). */
export const SOURCE_DEFAULTS = {
  statusVersion: 'dev',
  statusCommit: 'unknown',
} as const;

/**
 * How `import` and `follow` read a source (src/sources/options.ts, the SourceOptions both pass
 * on); `follow` builds a missing snapshot with an import of the same. The options that name the
 * source are its kind's (src/sources/<kind>/index.ts), put before these by each command's table.
 */
export const SOURCE_OPTIONS: Record<string, Options> = named({
  'chain-id': {
    type: 'string',
    defaultDescription: 'the only chain_id in table block',
    describe: '--from-postgres: chain id (default: the only chain_id in table block)',
  },
  'vm-type': choice({
    defaultDescription: 'detected by --from-api',
    choices: VM_TYPES,
    describe: 'The rollup VM: required with --from-postgres, detected by --from-api (follow: for its first import; afterwards read from --db)',
  }),
  'bech32-prefix': {
    type: 'string',
    defaultDescription: 'init',
    describe: 'Account bech32 prefix of --from-postgres / --from-api (default init; follow: for its first import, afterwards read from --db)',
  },
  validators: { type: 'string', describe: 'NDJSON file in validators.ndjson format: proposer monikers' },
  'rest-url': httpUrl({
    describe:
      '--from-postgres without --validators: chain node REST URL; one GET ' +
      '/opinit/opchild/v1/validator/{proposer} per distinct proposer (404: fallback rendering)',
  }),
  'denom-contracts': { type: 'string', describe: 'EVM: NDJSON file in denom_contracts.ndjson format' },
  'status-version': { type: 'string', default: SOURCE_DEFAULTS.statusVersion, describe: '--from-postgres: version /status reports' },
  'status-commit': { type: 'string', default: SOURCE_DEFAULTS.statusCommit, describe: '--from-postgres: commit_hash /status reports' },
  denoms: {
    type: 'string',
    array: true,
    defaultDescription: 'none: no rich list is read',
    describe: '--from-api: rich-list denoms to read (repeat or comma-separate)',
  },
  concurrency: int({ min: 1 }, { default: HTTP_CLIENT_DEFAULTS.concurrency, describe: '--from-api / --rest-url: requests in flight' }),
  rate: decimal({ above: 0 }, { defaultDescription: 'no limit', describe: '--from-api / --rest-url: at most this many requests per second' }),
  timeout: int({ min: 1 }, { default: HTTP_CLIENT_DEFAULTS.timeoutMs, describe: '--from-api / --rest-url: per-request timeout in ms' }),
});
