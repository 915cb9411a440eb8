/**
 * `import`'s options, declared once (name, check, default, help; the options naming the source are
 * their kinds', src/sources/registry.ts, passed in by the command): the table yargs parses, and the
 * defaults runImport applies for a caller without the command line. The resolve step is
 * resolveImport (src/import/run.ts: ImportOptions → ImportConfig), which `follow`'s first import
 * and the fixture cut go through too.
 */
import type { Options } from 'yargs';
import { HTTP_CLIENT_DEFAULTS, SOURCE_OPTIONS } from './source';
import { LOG_FORMAT_OPTION } from './log';
import { choice, duration, int, named } from './numbers';

/** `import`: what it says while it runs. */
export const IMPORT_DEFAULTS = {
  /** off a terminal, a progress line this often (a duration) */
  progressInterval: '10s',
} as const;

/** `import`'s options: `sources`, the options that name a source (src/sources/registry.ts sourceOptionsFor), first. */
export const importOptions = (sources: Record<string, Options>): Record<string, Options> =>
  named({
    ...sources,
    ...SOURCE_OPTIONS,
    'from-snapshot': { type: 'string', describe: 'With --accounts: a snapshot file to cut the fixture from' },
    accounts: {
      type: 'string',
      array: true,
      describe:
        'Cut a fixture: only what these accounts touched (their txs, the blocks holding them, their NFTs, ' +
        'their rich-list rows); repeat or comma-separate; deterministic output (docs/ci.md)',
    },
    collections: { type: 'string', array: true, describe: 'With --accounts: NFT collections to keep whole (every token)' },
    base: { type: 'string', describe: 'Previous snapshot to build on: the source then only holds new heights (and current NFT / rich-list state)' },
    out: { type: 'string', demandOption: true, describe: 'Snapshot file to write (written to a temporary file, renamed on success)' },
    force: { type: 'boolean', default: false, describe: 'Replace --out if it exists' },
    quiet: { type: 'boolean', default: false, describe: 'No progress output' },
    json: { type: 'boolean', default: false, describe: 'Print the final summary as JSON on stdout' },
    check: choice({
      defaultDescription: 'integrity; with --base, none',
      choices: ['integrity', 'quick', 'none'] as const,
      describe:
        'Check of the finished file before it replaces --out: PRAGMA integrity_check, quick_check, or none ' +
        '(default: integrity; with --base none — the base was checked when built, and a check reads the whole file)',
    }),
    'parse-threads': int(
      { min: 0 },
      {
        defaultDescription: 'one per CPU',
        describe: 'Threads parsing and validating txs while the main one inserts (0: parse on the main one; default: one per CPU)',
      },
    ),
    'from-height': int(
      { min: 1 },
      {
        defaultDescription: '1; with --base, its highest block + 1',
        describe: "--from-api: first height to crawl (default 1; with --base, the base's highest block + 1)",
      },
    ),
    'to-height': int({ min: 1 }, { defaultDescription: "the source's /status height", describe: '--from-api: last height to crawl (default: /status height)' }),
    ...LOG_FORMAT_OPTION,
    'progress-interval': duration({
      default: IMPORT_DEFAULTS.progressInterval,
      describe:
        'Off a terminal (systemd, CI, a pipe): a progress line on stderr this often while the import runs ' +
        '(stage, rows, rows/s); on a terminal the progress is drawn in place',
    }),
    retries: int(
      { min: 0 },
      { default: HTTP_CLIENT_DEFAULTS.retries, describe: '--from-api / --rest-url: retries of a request failing with 5xx, 429 or a network error / timeout' },
    ),
  });
