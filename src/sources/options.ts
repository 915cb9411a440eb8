/**
 * A source's options (SourceOptions and SOURCE_OPTIONS, declared once in src/settings/source.ts)
 * as the sources take them: picked out of a command's options, and the crawl client's settings
 * resolved. `follow` builds a missing snapshot with an ordinary import of the same source, so it
 * hands these on whole.
 */
import { HTTP_CLIENT_DEFAULTS, type SourceOptions } from '../settings/source';
import type { HttpOptions } from './http';
import { SOURCES, sourceKey } from './registry';

/** Every key of SourceOptions, once: the compiler refuses a key missing here or one too many. */
const SOURCE_KEYS: Record<keyof SourceOptions, true> = {
  fromPostgres: true,
  fromApi: true,
  chainId: true,
  vmType: true,
  bech32Prefix: true,
  validators: true,
  restUrl: true,
  denomContracts: true,
  statusVersion: true,
  statusCommit: true,
  denoms: true,
  concurrency: true,
  rate: true,
  timeout: true,
};

/** The source options of a larger options object (a command's), nothing else: every kind's option (src/sources/registry.ts) among them. */
export function sourceOptionsOf(o: SourceOptions): SourceOptions {
  const out: Record<string, unknown> = {};
  const given = o as Record<string, unknown>;
  for (const k of [...Object.keys(SOURCE_KEYS), ...SOURCES.map(sourceKey)]) if (given[k] !== undefined) out[k] = given[k];
  return out as SourceOptions;
}

/**
 * The crawl client's settings, resolved once for a command (`import`'s resolveImport, `follow`'s
 * runFollow): what the options give, HTTP_CLIENT_DEFAULTS for the rest. The values were checked
 * while yargs parsed (src/settings/source.ts); the client and the sources take them as they are.
 */
export function resolveHttp(o: { concurrency?: number; rate?: number; timeout?: number; retries?: number; backoffMs?: number }): HttpOptions {
  const given = { concurrency: o.concurrency, rate: o.rate, timeoutMs: o.timeout, retries: o.retries, backoffMs: o.backoffMs };
  const out: HttpOptions = { ...HTTP_CLIENT_DEFAULTS, rate: undefined };
  for (const [k, v] of Object.entries(given)) if (v !== undefined) (out as unknown as Record<string, number>)[k] = v;
  return out;
}
