/**
 * What names a source and how to read it: the options `import` and `follow` share, declared
 * once (their yargs table is SOURCE_OPTIONS in src/commands/options.ts). `follow` builds a
 * missing snapshot with an ordinary import of the same source, so it hands these on whole.
 */
import { HTTP_CLIENT_DEFAULTS } from '../lib/defaults';
import type { VmType } from '../lib/vm';
import type { HttpOptions } from './http';

export interface SourceOptions {
  /** exactly one of fromPostgres / fromApi (import also takes a dump directory) */
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

/** Every key of SourceOptions, once: the compiler refuses a key missing here or one too many. */
const SOURCE_KEYS: Record<keyof SourceOptions, true> = {
  fromPostgres: true, fromApi: true, chainId: true, vmType: true, bech32Prefix: true, validators: true, restUrl: true,
  denomContracts: true, statusVersion: true, statusCommit: true, denoms: true, concurrency: true, rate: true, timeout: true,
};

/** The source options of a larger options object (a command's), nothing else. */
export function sourceOptionsOf(o: SourceOptions): SourceOptions {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(SOURCE_KEYS) as (keyof SourceOptions)[]) if (o[k] !== undefined) out[k] = o[k];
  return out as SourceOptions;
}

/**
 * The crawl client's settings, resolved once for a command (`import`'s resolveImport, `follow`'s
 * runFollow): what the options give, HTTP_CLIENT_DEFAULTS for the rest. The values were checked
 * while yargs parsed (src/commands/options.ts); the client and the sources take them as they are.
 */
export function resolveHttp(o: { concurrency?: number; rate?: number; timeout?: number; retries?: number; backoffMs?: number }): HttpOptions {
  const given = { concurrency: o.concurrency, rate: o.rate, timeoutMs: o.timeout, retries: o.retries, backoffMs: o.backoffMs };
  const out: HttpOptions = { ...HTTP_CLIENT_DEFAULTS, rate: undefined };
  for (const [k, v] of Object.entries(given)) if (v !== undefined) (out as unknown as Record<string, number>)[k] = v;
  return out;
}
