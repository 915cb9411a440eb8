import { statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { CommandModule } from 'yargs';
import { checkFreeSpace, checkInputFile, checkOutputDir } from '../lib/paths';
import { createLogger, defaultLogFormat, type LogFormat } from '../lib/log';
import { choice, int, named } from '../settings/numbers';
import { LOG_FORMAT_OPTION } from '../settings/log';
import { Compression, publishSnapshot, PublishResult } from '../publish/publish';

export interface PublishCommandOptions {
  db: string;
  to: string;
  keep: number;
  compress: Compression;
  /** start --to over with the chain of --db, whatever its manifest names */
  newChain: boolean;
  /** publish --db even when --to's manifest names a greater height of its chain (a rollback) */
  allowOlder: boolean;
  quiet: boolean;
  /** the progress lines on stderr (src/lib/log.ts) */
  logFormat: LogFormat;
}

/**
 * The paths, before any work (src/lib/paths.ts): --db a snapshot file that can be read, --to a
 * directory that can be written (or made), with room on its device for the copy and its gzip.
 */
export function checkPublishPaths(o: Pick<PublishCommandOptions, 'db' | 'to' | 'compress'>): void {
  checkInputFile('--db', o.db, 'snapshot file');
  checkOutputDir('--to', o.to, 'name the directory to publish into (it is created if missing)');
  // the VACUUM INTO copy is at most the file; its gzip (≈80 % of it, docs/scaling.md) comes beside it
  const size = statSync(o.db).size;
  checkFreeSpace('--to', o.to, o.compress === 'none' ? size : Math.ceil(size * 1.8), `a copy of ${o.db}${o.compress === 'none' ? '' : ' and its gzip'}`);
}

export async function runPublish(o: PublishCommandOptions): Promise<PublishResult> {
  checkPublishPaths(o);
  const started = Date.now();
  const logger = createLogger(
    'info',
    (t) => {
      process.stderr.write(t);
    },
    {},
    o.logFormat,
  );
  try {
    return await publishSnapshot({
      db: o.db,
      to: o.to,
      keep: o.keep,
      compress: o.compress,
      newChain: o.newChain,
      allowOlder: o.allowOlder,
      onPhase: o.quiet ? undefined : (p) => logger.info(`publish: ${p}`, { seconds: Number(((Date.now() - started) / 1000).toFixed(1)) }),
    });
  } finally {
    logger.flush();
  }
}

function describeResult(r: PublishResult, to: string): string {
  const m = r.manifest;
  const mb = (n: number): string => (n / 1e6).toFixed(1);
  const stored = m.encoding === 'gzip' ? `gzip ${mb(m.file_size)} MB of ${mb(m.size)} MB` : `${mb(m.size)} MB, not compressed`;
  return (
    `indexer-api: published height ${m.height} as ${to}/${m.file} (${stored}${r.reused ? ', already there' : ''}); ` +
    `manifest.json updated${r.removed.length ? `; removed ${r.removed.join(', ')}` : ''}`
  );
}

export const publishCommand: CommandModule<object, Omit<PublishCommandOptions, 'logFormat'> & { logFormat?: LogFormat }> = {
  command: 'publish',
  describe: 'Copy a snapshot into a directory for replicas to pull (content-addressed file + manifest.json)',
  builder: (y) =>
    y
      .options(
        named({
          db: { type: 'string', demandOption: true, describe: 'Snapshot file to publish (may be in use: the copy is consistent)' },
          to: {
            type: 'string',
            demandOption: true,
            describe: 'Directory served by any static file host; gets <height>-<sha256 prefix>.sqlite[.gz] and manifest.json (replaced atomically)',
          },
          keep: int(
            { min: 1 },
            { default: 3, describe: 'Data files kept in the directory, the new one included (replicas mid-download of an older one can finish)' },
          ),
          ...LOG_FORMAT_OPTION,
          compress: choice({
            choices: ['auto', 'gzip', 'none'] as const,
            default: 'auto' as Compression,
            describe: 'gzip the file: auto = only when it saves ≥ 10 % of the bytes',
          }),
        }),
      )
      .option('new-chain', {
        type: 'boolean',
        default: false,
        describe:
          'Publish into a directory whose manifest.json names another chain (or is not a manifest), starting ' +
          'it over with the chain of --db. Without it that is refused: the replicas pulling the directory ' +
          'serve its chain (and refuse another one until restarted with --expect-chain-id)',
      })
      .option('allow-older', {
        type: 'boolean',
        default: false,
        describe:
          'Publish --db even when the manifest of --to names a greater height of its chain: roll the directory ' +
          'back (a bad snapshot withdrawn). Without it that is refused: replicas already at the greater height ' +
          'would skip the older file, while a new replica would start at it',
      })
      .option('quiet', { type: 'boolean', default: false, describe: 'No progress lines on stderr' })
      .check((a) => {
        if (typeof a.to === 'string' && typeof a.db === 'string' && resolve(a.to) === resolve(a.db)) {
          throw new Error(
            `--to ${a.to} is the snapshot file itself (--db ${a.db}): name a directory to publish into, e.g. ${join(dirname(a.db), 'published')}`,
          );
        }
        return true;
      })
      .example('$0 publish --db chain.sqlite --to /srv/snapshots', 'then: serve --pull http://origin/snapshots/manifest.json --db local.sqlite')
      .example('$0 publish --db yesterday.sqlite --to /srv/snapshots --allow-older', 'roll the directory back to a lower height of its chain') as never,
  handler: async (argv) => {
    // resolved here, once: unset, text on a terminal and JSON otherwise
    const r = await runPublish({ ...argv, logFormat: argv.logFormat ?? defaultLogFormat(process.stderr) });
    process.stdout.write(`${describeResult(r, argv.to)}\n`);
  },
};
