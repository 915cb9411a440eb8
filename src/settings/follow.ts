/**
 * `follow`'s settings, in one module: each option declared once (followOptions: name, check,
 * default, help; the options naming the source are their kinds', src/sources/registry.ts, passed
 * in by the command), what the command line gives (FollowArgs), and the resolve step
 * (resolveFollow) into FollowOptions, which runFollow (src/commands/follow.ts) and the follower
 * take whole.
 */
import type { Options } from 'yargs';
import { defaultLogFormat, type LogFormat } from '../lib/log';
import { SOURCE_OPTIONS, type SourceOptions } from './source';
import { LOG_FORMAT_OPTION } from './log';
import { duration, int, named } from './numbers';

/** `follow`'s options: `sources`, the options that name a source (src/sources/registry.ts sourceOptionsFor), in their place. */
export const followOptions = (sources: Record<string, Options>): Record<string, Options> =>
  named({
    db: {
      type: 'string',
      demandOption: true,
      describe: 'Snapshot file to keep current (created by an import from the source if missing); serve it with `serve --db` at the same time',
    },
    'expect-chain-id': {
      type: 'string',
      requiresArg: true,
      defaultDescription: 'the chain of --db',
      describe:
        'Follow only this chain: a --db of another chain is refused before anything is written, and a source ' +
        'of another chain before anything is imported or appended (without it: the chain of --db; a source ' +
        'of another chain is always refused)',
    },
    ...sources,
    ...SOURCE_OPTIONS,
    interval: duration({ default: '2s', describe: 'Poll interval when caught up (2s, 500ms, 1m; at least 50ms: 0 would poll without pause)' }),
    'richlist-interval': duration({
      zero: 'never',
      default: '60s',
      describe:
        'How often the rich list is read whole and its changed rows written, apart from the block batches ' +
        '(60s, 5m; 0: never). From an API: the --denoms rich lists',
    }),
    'richlist-swap-rows': int(
      { min: 0 },
      {
        default: 50_000,
        describe:
          'A rich-list refresh changing more rows than this builds the new list beside the old one and swaps ' +
          'it in (one short transaction); fewer are written in place in one transaction',
      },
    ),
    'richlist-chunk-rows': int(
      { min: 1 },
      { default: 50_000, describe: "Rows per chunk of a rich-list refresh's diff and of a build beside (block batches run between the chunks)" },
    ),
    'collections-audit-interval': duration({
      zero: 'never',
      default: '5m',
      describe:
        "How often the source's whole NFT collection list (counts, names) is compared with ours, apart from " +
        'the block batches, which read only the collections their txs name; a collection that differs is ' +
        'read again by the next batch (5m, 30s; 0: never)',
    }),
    'batch-blocks': int({ min: 1 }, { default: 2_000, describe: 'At most this many heights per batch (one write transaction; catching up takes several)' }),
    'metrics-port': int(
      { min: 0, max: 65535 },
      {
        defaultDescription: 'off',
        describe: 'Serve Prometheus metrics (source height, our height, lag in blocks and seconds) on this port (0: any free port)',
      },
    ),
    'metrics-host': { type: 'string', default: '127.0.0.1', describe: 'Address of --metrics-port' },
    'max-stall': duration({
      default: '60s',
      describe:
        '--metrics-port also answers /ready: 503 (with the last failure) once the follower has not advanced ' +
        'for longer than this — its source failing, every poll — and 200 otherwise; ' +
        'indexer_api_follow_stalled_seconds is the figure',
    }),
    'max-backoff': duration({ default: '60s', describe: 'Longest wait between retries while the source fails (the wait doubles from --interval)' }),
    quiet: { type: 'boolean', default: false, describe: 'No line per batch (failures, start and stop are still logged)' },
    ...LOG_FORMAT_OPTION,
  });

/** `follow`'s settings, resolved: every field filled, every check done. */
export interface FollowOptions extends SourceOptions {
  db: string;
  /** the crawl client's, with their defaults (SOURCE_OPTIONS) */
  concurrency: number;
  timeout: number;
  statusVersion: string;
  statusCommit: string;
  /** poll interval when caught up, ms (≥ MIN_DURATION_MS, 50, src/settings/numbers.ts) */
  interval: number;
  /** rich-list refresh interval, ms; 0: never */
  richlistInterval: number;
  /** a refresh changing more rows than this is built beside and swapped in */
  richlistSwapRows: number;
  /** rows per chunk of a refresh's diff and build beside */
  richlistChunkRows: number;
  /** collections audit interval, ms; 0: never */
  collectionsAuditInterval: number;
  batchBlocks: number;
  metricsPort?: number;
  metricsHost: string;
  /** --metrics-port's /ready: 503 once the follower has not advanced for longer than this, ms */
  maxStall: number;
  /** longest wait between retries, ms */
  maxBackoff: number;
  quiet: boolean;
  /** the log on stderr (src/lib/log.ts) */
  logFormat: LogFormat;
  /** follow only this chain: --db and the source must both be it */
  expectChainId?: string;
}

/** `follow`'s options as yargs gives them: each with its default, each value already checked. */
export type FollowArgs = Omit<FollowOptions, 'logFormat'> & { logFormat?: LogFormat };

/** The one resolve step: --denoms as a list (repeated or comma-separated), the log format decided (text on a terminal). */
export function resolveFollow(a: FollowArgs): FollowOptions {
  const denoms = a.denoms
    ?.flatMap((d) => String(d).split(','))
    .map((d) => d.trim())
    .filter((d) => d !== '');
  return { ...a, denoms, logFormat: a.logFormat ?? defaultLogFormat(process.stderr) };
}
