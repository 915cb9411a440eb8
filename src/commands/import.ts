import type { CommandModule } from 'yargs';
import { DumpError } from '../records/dump-error';
import { ImportOptions, runImport } from './import-run';
import { IMPORT_OPTIONS } from './options';

// `runImport` and its types live in ./import-run (no yargs), so that the fixture cut (./cut)
// can run an import without an import cycle through this command module.
export { cleanStaleTemps, ImportOptions, ImportRecordError, ImportResult, runImport } from './import-run';

export const importCommand: CommandModule<object, ImportOptions> = {
  command: 'import',
  describe: 'Build a snapshot file from a dump directory (NDJSON, see docs/dump-format.md), a rollytics PostgreSQL database or a running rollytics-compatible API',
  builder: (y) => y
    .options(IMPORT_OPTIONS)
    .check((a) => {
      const n = [a['from-dump'], a['from-postgres'], a['from-api'], a['from-snapshot']].filter((x) => x !== undefined).length;
      if (n !== 1) throw new Error('name exactly one source: --from-dump DIR, --from-postgres DSN or --from-api URL (or, with --accounts, --from-snapshot FILE)');
      if (a['from-snapshot'] !== undefined && a.accounts === undefined) throw new Error('--from-snapshot is the source of a fixture cut: name the accounts with --accounts');
      if (a.collections !== undefined && a.accounts === undefined) throw new Error('--collections goes with --accounts (a fixture cut)');
      if (a['rest-url'] !== undefined && a['from-postgres'] === undefined) throw new Error('--rest-url goes with --from-postgres (a dump or an API already carries the monikers)');
      if (a['rest-url'] !== undefined && a.validators !== undefined) throw new Error('pass --validators FILE or --rest-url URL, not both');
      return true;
    })
    .example('$0 import --from-dump ./dump --out chain.sqlite', 'build chain.sqlite from ./dump')
    .example('$0 import --from-postgres postgres://ro@db:5432/rollytics --vm-type wasm --validators validators.ndjson --out chain.sqlite', 'from a rollytics database')
    .example('$0 import --from-api https://rollytics.example --vm-type move --denoms uinit --out chain.sqlite', 'crawl a running API')
    .example('$0 import --base chain.sqlite --from-dump ./new-heights --out chain.sqlite --force', 'append new heights to a snapshot')
    .example('$0 import --from-snapshot chain.sqlite --accounts init1abc...,init1def... --out fixture.sqlite', 'cut a small, deterministic CI fixture (docs/ci.md)') as never,
  handler: async (argv) => {
    try {
      const list = (v: unknown[] | undefined): string[] | undefined => v?.flatMap((d) => String(d).split(',')).map((d) => d.trim()).filter((d) => d !== '');
      const denoms = list(argv.denoms);
      const accounts = list(argv.accounts);
      const r = accounts !== undefined
        ? await (await import('./cut')).runCut({ ...argv, denoms, accounts, collections: list(argv.collections) })
        : await runImport({ ...argv, denoms });
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
