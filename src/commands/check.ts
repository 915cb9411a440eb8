import type { CommandModule } from 'yargs';
import { inputFileProblem } from '../lib/paths';

/**
 * `indexer-api check FILE…`: the check every file passes before `serve` serves it
 * (src/snapshot/verify.ts checkSnapshot: open as serve opens it, then SQLite's quick check of
 * every page), offline — before putting a file in place, in a deploy script, on a backup. The
 * same check `serve --pull` runs on each download (in a child: this command with --json).
 * Exit 0 when every file passes, 1 when one does not (its reason: serve's one line), 2 on a
 * usage error.
 */

export interface CheckOptions {
  files: string[];
  /** one JSON object per file on stdout instead of text */
  json: boolean;
  /** the files must be of this chain */
  expectChainId?: string;
}

/** Checks each file in turn; each result is one line (stdout when it passes, stderr when not; --json: stdout). */
export async function runCheck(o: CheckOptions, out: (line: string) => void, err: (line: string) => void): Promise<number> {
  // loaded here, not with the command table: `check --help` loads no SQLite
  const { checkSnapshot } = await import('../snapshot/verify');
  let failed = 0;
  for (const file of o.files) {
    try {
      // a path that is no file to read: serve's words for its --db (src/lib/paths.ts), the file named as typed
      const problem = inputFileProblem(file, 'snapshot file');
      if (problem !== undefined) throw new Error(`${file}: ${problem}`);
      const c = await checkSnapshot(file, { expectChainId: o.expectChainId });
      const m = c.meta;
      if (o.json) {
        out(
          JSON.stringify({
            file,
            ok: true,
            chain_id: m.chainId,
            vm_type: m.vmType,
            height: m.height,
            snapshot_id: m.snapshotId,
            bytes: c.bytes,
            ms: Math.round(c.ms),
          }),
        );
      } else {
        out(`${file}: ok — chain ${m.chainId} (${m.vmType}), height ${m.height}, ${(c.bytes / 1e6).toFixed(1)} MB, checked in ${Math.round(c.ms)} ms`);
      }
    } catch (e) {
      failed++;
      const message = (e as Error).message;
      if (o.json) out(JSON.stringify({ file, ok: false, error: message }));
      else err(`indexer-api check: ${message}`);
    }
  }
  return failed === 0 ? 0 : 1;
}

export const checkCommand: CommandModule<object, { file?: string[]; json: boolean; expectChainId?: string }> = {
  command: 'check [file..]',
  describe: 'Check snapshot files as serve does before serving one (open + quick check of every page), offline: exit 0 if all pass, 1 if one does not',
  builder: (y) =>
    y
      .positional('file', { type: 'string', array: true, describe: 'Snapshot files to check (one or more)' })
      .option('json', {
        type: 'boolean',
        default: false,
        describe:
          'One JSON object per file on stdout: {"file","ok":true,"chain_id","vm_type","height","snapshot_id","bytes","ms"} or {"file","ok":false,"error"}',
      })
      .option('expect-chain-id', { type: 'string', requiresArg: true, describe: 'The files must be snapshots of this chain (as serve --expect-chain-id)' })
      .check((a) => {
        if ((a.file ?? []).length === 0) throw new Error('name the snapshot file(s) to check: indexer-api check FILE [FILE…]');
        return true;
      })
      .epilog(
        'The check reads the whole file: about 7 s per GB with the file in the page cache, several times that from a cold disk (docs/reliability.md). ' +
          'A pass is recorded: serve, and check, take it for the same unchanged file without reading it again ' +
          '(a file checked before a deploy starts ready; docs/reliability.md#a-check-once-per-file). ' +
          'On failure the line is the one serve prints for that file (serve puts its option before a path it cannot read: --db FILE: no such snapshot file).',
      )
      .example('$0 check chain.sqlite', 'is chain.sqlite a snapshot serve would serve?')
      .example('$0 check --json --expect-chain-id minimove-1 download.sqlite', 'a download of the right chain, for a script') as never,
  handler: async (argv) => {
    process.exitCode = await runCheck(
      { files: (argv.file ?? []).map(String), json: argv.json, expectChainId: argv.expectChainId },
      (l) => process.stdout.write(`${l}\n`),
      (l) => process.stderr.write(`${l}\n`),
    );
  },
};
