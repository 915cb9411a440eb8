import type { CommandModule } from 'yargs';
import { DumpError } from '../import/dump-error';
import { VM_TYPES } from '../import/from-dump';
import { ImportOptions, runImport } from './import-run';

// `runImport` and its types live in ./import-run (no yargs), so that the fixture cut (./cut)
// can run an import without an import cycle through this command module.
export { cleanStaleTemps, ImportOptions, ImportRecordError, ImportResult, runImport } from './import-run';

export const importCommand: CommandModule<object, ImportOptions> = {
  command: 'import',
  describe: 'Build a snapshot file from a dump directory (NDJSON, see docs/dump-format.md), a rollytics PostgreSQL database or a running rollytics-compatible API',
  builder: (y) => y
    .option('from-dump', { type: 'string', describe: 'Dump directory of NDJSON files (plain or .gz)' })
    .option('from-postgres', { type: 'string', describe: 'rollytics PostgreSQL DSN (postgres://user:pass@host:5432/db); read in one read-only REPEATABLE READ transaction' })
    .option('from-api', { type: 'string', describe: 'Base URL of a running rollytics-compatible API to crawl' })
    .option('from-snapshot', { type: 'string', describe: 'With --accounts: a snapshot file to cut the fixture from' })
    .option('accounts', { type: 'string', array: true, describe: 'Cut a fixture: only what these accounts touched (their txs, the blocks holding them, their NFTs, their rich-list rows); repeat or comma-separate; deterministic output (docs/ci.md)' })
    .option('collections', { type: 'string', array: true, describe: 'With --accounts: NFT collections to keep whole (every token)' })
    .option('base', { type: 'string', describe: 'Previous snapshot to build on: the source then only holds new heights (and current NFT / rich-list state)' })
    .option('out', { type: 'string', demandOption: true, describe: 'Snapshot file to write (written to a temporary file, renamed on success)' })
    .option('force', { type: 'boolean', default: false, describe: 'Replace --out if it exists' })
    .option('quiet', { type: 'boolean', default: false, describe: 'No progress output' })
    .option('json', { type: 'boolean', default: false, describe: 'Print the final summary as JSON on stdout' })
    .option('check', {
      choices: ['integrity', 'quick', 'none'] as const,
      describe: 'Check of the finished file before it replaces --out: PRAGMA integrity_check, quick_check, or none (default: integrity; with --base none — the base was checked when built, and a check reads the whole file)',
    })
    .option('parse-threads', { type: 'number', describe: 'Threads parsing and validating txs while the main one inserts (0: parse on the main one; default: one per CPU)' })
    .option('chain-id', { type: 'string', describe: '--from-postgres: chain id (default: the only chain_id in table block)' })
    .option('vm-type', { choices: VM_TYPES, describe: '--from-postgres (required) / --from-api: the rollup VM' })
    .option('bech32-prefix', { type: 'string', describe: '--from-postgres / --from-api: account bech32 prefix (default init)' })
    .option('validators', { type: 'string', describe: 'NDJSON file in validators.ndjson format: proposer monikers' })
    .option('rest-url', { type: 'string', describe: '--from-postgres without --validators: chain node REST URL; one GET /opinit/opchild/v1/validator/{proposer} per distinct proposer (404: fallback rendering)' })
    .option('denom-contracts', { type: 'string', describe: 'EVM: NDJSON file in denom_contracts.ndjson format' })
    .option('status-version', { type: 'string', describe: '--from-postgres: version /status reports (default dev)' })
    .option('status-commit', { type: 'string', describe: '--from-postgres: commit_hash /status reports (default unknown)' })
    .option('from-height', { type: 'number', describe: '--from-api: first height to crawl (default 1; with --base, the base\'s highest block + 1)' })
    .option('to-height', { type: 'number', describe: '--from-api: last height to crawl (default: /status height)' })
    .option('denoms', { type: 'string', array: true, describe: '--from-api: rich-list denoms to crawl (repeat or comma-separate)' })
    .option('concurrency', { type: 'number', default: 4, describe: '--from-api / --rest-url: requests in flight' })
    .option('rate', { type: 'number', describe: '--from-api / --rest-url: at most this many requests per second' })
    .option('retries', { type: 'number', default: 5, describe: '--from-api / --rest-url: retries of a request failing with 5xx, 429 or a network error / timeout' })
    .option('timeout', { type: 'number', default: 30000, describe: '--from-api / --rest-url: per-request timeout in ms' })
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
