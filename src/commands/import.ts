import type { CommandModule } from 'yargs';
import { DumpError } from '../records/dump-error';
import { canonicalAddress } from '../lib/address';
import { importSourceCount, type ImportOptions, type ImportResult, runImport } from '../import/run';
import type { CutOptions } from '../import/cut/run';
import { importOptions } from '../settings/import';
import type { Alternatives } from '../settings/command-line';
import { oneSourceMessage, sourceOptionNames, sourceOptionsFor } from '../sources/registry';
import { describeError } from '../lib/paths';
import { nameEnvOrigin } from '../settings/command-line';

/**
 * The fixture cut (src/import/cut/run.ts) with a snapshot file served by the library's
 * startServer (src/index.ts) while it is crawled: the import layer does not import the serve
 * stack, so the command hands it over. Loaded on use (a plain import does not load the server).
 */
export async function runCut(o: CutOptions): Promise<ImportResult> {
  const [{ cutFixture }, { startServer }] = await Promise.all([import('../import/cut/run'), import('../index')]);
  return cutFixture(o, (db) => startServer({ db, port: 0 }));
}

/** A repeatable, comma-separable option (`--denoms a,b --denoms c`) → its entries. */
function splitList(v: unknown[] | undefined): string[] | undefined {
  return v
    ?.flatMap((d) => String(d).split(','))
    .map((d) => d.trim())
    .filter((d) => d !== '');
}

/**
 * An account or collection named on the command line is an address in some form (bech32 of any
 * prefix, or hex): checked while parsing; that its prefix is the source's is the cut's to check.
 */
function checkAddressShape(name: string, text: string): void {
  const sep = text.lastIndexOf('1');
  const prefix = /^0x/i.test(text) || sep <= 0 ? 'init' : text.slice(0, sep).toLowerCase();
  try {
    canonicalAddress(text, prefix);
  } catch (e) {
    throw new Error(`${name}: ${JSON.stringify(text)} is not an address (${(e as Error).message})`);
  }
}

export const importCommand: CommandModule<object, ImportOptions> & Alternatives = {
  command: 'import',
  describe:
    'Build a snapshot file from a dump directory (NDJSON, see docs/dump-format.md), a rollytics PostgreSQL database or a running rollytics-compatible API',
  builder: (y) =>
    y
      .options(importOptions(sourceOptionsFor('import')))
      .check((a) => {
        if (importSourceCount(a) !== 1) throw new Error(`${oneSourceMessage('import')} (or, with --accounts, --from-snapshot FILE)`);
        if (a['from-snapshot'] !== undefined && a.accounts === undefined)
          throw new Error('--from-snapshot is the source of a fixture cut: name the accounts with --accounts');
        if (a.collections !== undefined && a.accounts === undefined) throw new Error('--collections goes with --accounts (a fixture cut)');
        if (a['rest-url'] !== undefined && a['from-postgres'] === undefined)
          throw new Error('--rest-url goes with --from-postgres (a dump or an API already carries the monikers)');
        if (a['rest-url'] !== undefined && a.validators !== undefined) throw new Error('pass --validators FILE or --rest-url URL, not both');
        const from = a['from-height'] as number | undefined;
        const to = a['to-height'] as number | undefined;
        if (from !== undefined && to !== undefined && to < from) throw new Error(`--to-height ${to} is below --from-height ${from}: no height to crawl`);
        if (a.accounts !== undefined) {
          if (a['from-dump'] !== undefined || a['from-postgres'] !== undefined)
            throw new Error('--accounts cuts from --from-api or --from-snapshot, not from a dump or PostgreSQL');
          if (a.base !== undefined) throw new Error('--accounts makes a new snapshot: --base does not apply');
          if ((splitList(a.accounts as unknown[]) ?? []).length === 0) throw new Error('--accounts: name at least one account');
          for (const [name, list] of [
            ['--accounts', a.accounts],
            ['--collections', a.collections],
          ] as const) {
            for (const text of splitList(list as unknown[] | undefined) ?? []) checkAddressShape(name, text);
          }
        }
        return true;
      })
      .example('$0 import --from-dump ./dump --out chain.sqlite', 'build chain.sqlite from ./dump')
      .example(
        '$0 import --from-postgres postgres://ro@db:5432/rollytics --vm-type wasm --validators validators.ndjson --out chain.sqlite',
        'from a rollytics database',
      )
      .example('$0 import --from-api https://rollytics.example --vm-type move --denoms uinit --out chain.sqlite', 'crawl a running API')
      .example('$0 import --base chain.sqlite --from-dump ./new-heights --out chain.sqlite --force', 'append new heights to a snapshot')
      .example(
        '$0 import --from-snapshot chain.sqlite --accounts init1abc...,init1def... --out fixture.sqlite',
        'cut a small, deterministic CI fixture (docs/ci.md)',
      ) as never,
  // the sources (and a cut's --from-snapshot) name one thing in different ways (src/settings/command-line.ts)
  alternatives: [[...sourceOptionNames('import'), 'from-snapshot']],
  handler: async (argv) => {
    try {
      const list = splitList;
      const denoms = list(argv.denoms);
      const accounts = list(argv.accounts);
      const r =
        accounts !== undefined ? await runCut({ ...argv, denoms, accounts, collections: list(argv.collections) }) : await runImport({ ...argv, denoms });
      if (argv.json) process.stdout.write(JSON.stringify(r) + '\n');
      else if (!argv.quiet) {
        const n = Object.entries(r.records)
          .filter(([, v]) => v > 0)
          .map(([k, v]) => `${v} ${k}`)
          .join(', ');
        process.stderr.write(`indexer-api: wrote ${r.out} (${r.chainId}, ${r.vmType}): ${n} in ${r.seconds.toFixed(1)} s\n`);
      }
    } catch (e) {
      const msg = e instanceof DumpError ? `bad dump record: ${e.message}` : nameEnvOrigin(describeError(e));
      process.stderr.write(`indexer-api import: ${msg}\n`);
      process.exitCode = 1;
    }
  },
};
