import { existsSync } from 'node:fs';
import type { CommandModule } from 'yargs';
import { DumpError } from '../import/dump-error';
import { loadDump } from '../import/from-dump';
import { Progress } from '../import/progress';
import { SnapshotWriter } from '../import/writer';

export interface ImportOptions {
  fromDump: string;
  out: string;
  force: boolean;
  quiet: boolean;
  json: boolean;
}

export interface ImportResult {
  out: string;
  chainId: string;
  vmType: string;
  records: Record<string, number>;
  seconds: number;
}

/**
 * Builds a snapshot from a dump directory into a temporary file beside --out and renames it
 * over --out only when every record validated and the file passed its checks.
 */
export async function runImport(o: ImportOptions): Promise<ImportResult> {
  if (existsSync(o.out) && !o.force) throw new Error(`refusing to overwrite ${o.out} (pass --force to replace it)`);
  const started = process.hrtime.bigint();
  const progress = new Progress(!o.quiet && !o.json && process.stderr.isTTY === true);
  const writer = SnapshotWriter.create(o.out, { onStep: (s) => progress.stage(s) });
  const abort = (): void => { writer.abort(); process.exit(130); };
  process.once('SIGINT', abort);
  process.once('SIGTERM', abort);
  try {
    const summary = await loadDump(o.fromDump, writer, progress);
    writer.finish({ prefix: summary.prefix });
    progress.done();
    return { out: o.out, chainId: summary.chainId, vmType: summary.vmType, records: summary.counts,
      seconds: Number(process.hrtime.bigint() - started) / 1e9 };
  } catch (e) {
    progress.done();
    writer.abort();
    throw e;
  } finally {
    process.off('SIGINT', abort);
    process.off('SIGTERM', abort);
  }
}

export const importCommand: CommandModule<object, ImportOptions> = {
  command: 'import',
  describe: 'Build a snapshot file from a dump directory (NDJSON, see docs/dump-format.md)',
  builder: (y) => y
    .option('from-dump', { type: 'string', demandOption: true, describe: 'Dump directory of NDJSON files (plain or .gz)' })
    .option('out', { type: 'string', demandOption: true, describe: 'Snapshot file to write (written to a temporary file, renamed on success)' })
    .option('force', { type: 'boolean', default: false, describe: 'Replace --out if it exists' })
    .option('quiet', { type: 'boolean', default: false, describe: 'No progress output' })
    .option('json', { type: 'boolean', default: false, describe: 'Print the final summary as JSON on stdout' })
    .example('$0 import --from-dump ./dump --out chain.sqlite', 'build chain.sqlite from ./dump') as never,
  handler: async (argv) => {
    try {
      const r = await runImport(argv);
      if (argv.json) process.stdout.write(JSON.stringify(r) + '\n');
      else if (!argv.quiet) {
        const n = Object.entries(r.records).filter(([, v]) => v > 0).map(([k, v]) => `${v} ${k}`).join(', ');
        process.stderr.write(`indexer-api: wrote ${r.out} (${r.chainId}, ${r.vmType}): ${n} in ${r.seconds.toFixed(1)} s\n`);
      }
    } catch (e) {
      const msg = e instanceof DumpError ? `bad dump record: ${e.message}` : (e as Error).message;
      process.stderr.write(`indexer-api import: ${msg}\n`);
      process.exitCode = 1;
    }
  },
};
