import type { Argv, CommandModule } from 'yargs';
import { buildInfo } from './version';

/**
 * The commands, loaded lazily: yargs calls a command's builder (its options) and handler only
 * when that command runs, so `serve` never loads the importer, the generator or pg, and
 * `--help` loads none of them. `describe` is what the top-level help lists; test/cli.test.ts
 * checks it against each command module's own.
 */
export const COMMANDS: readonly { name: string; describe: string; load(): CommandModule<object, never> }[] = [
  {
    name: 'serve',
    describe: 'Serve the read API from a snapshot file',
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when the command runs (see above)
    load: () => (require('./commands/serve') as typeof import('./commands/serve')).serveCommand as CommandModule<object, never>,
  },
  {
    name: 'publish',
    describe: 'Copy a snapshot into a directory for replicas to pull (content-addressed file + manifest.json)',
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when the command runs (see above)
    load: () => (require('./commands/publish') as typeof import('./commands/publish')).publishCommand as CommandModule<object, never>,
  },
  {
    name: 'import',
    describe: 'Build a snapshot file from a dump directory (NDJSON, see docs/dump-format.md), a rollytics PostgreSQL database or a running rollytics-compatible API',
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when the command runs (see above)
    load: () => (require('./commands/import') as typeof import('./commands/import')).importCommand as CommandModule<object, never>,
  },
  {
    name: 'follow',
    describe: 'Keep a snapshot current: import it if missing, then poll a PostgreSQL database or an API and append new heights in place',
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when the command runs (see above)
    load: () => (require('./commands/follow') as typeof import('./commands/follow')).followCommand as CommandModule<object, never>,
  },
  {
    name: 'generate',
    describe: 'Write a synthetic, deterministic Initia rollup chain as an NDJSON dump (for demos and benchmarks)',
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when the command runs (see above)
    load: () => (require('./commands/generate') as typeof import('./commands/generate')).generateCommand as CommandModule<object, never>,
  },
];

function lazy(c: (typeof COMMANDS)[number]): CommandModule<object, never> {
  return {
    command: c.name,
    describe: c.describe,
    builder: (y: Argv) => (c.load().builder as (y: Argv) => Argv)(y) as Argv<never>,
    handler: (argv) => c.load().handler(argv),
  };
}

/** Registers the commands; every option can also come from INDEXER_API_<OPTION> (e.g. INDEXER_API_DB). */
export async function main(argv: string[]): Promise<void> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded when main() runs, not with the module (cold start)
  const yargs = require('yargs/yargs') as typeof import('yargs/yargs');
  const info = buildInfo();
  let y = yargs(argv.slice(2))
    .scriptName('indexer-api')
    .usage('$0 <command> [options]\n\nA read-only replica of the rollytics / kvindexer HTTP API, served from one SQLite snapshot file.');
  for (const c of COMMANDS) y = y.command(lazy(c));
  await y
    .env('INDEXER_API')
    .demandCommand(1, 'Name a command: serve, import, follow, publish or generate (see --help).')
    .strict()
    .version(`${info.version} (commit ${info.commit})`)
    .help()
    .epilog('Every option can also be set with an environment variable INDEXER_API_<OPTION>, e.g. INDEXER_API_DB=chain.sqlite, INDEXER_API_PORT=9000, INDEXER_API_CORS_ORIGIN=https://scan.example. Command-line flags win over the environment.')
    .wrap(Math.min(110, process.stdout.columns || 110))
    .fail((msg, err, yy) => {
      if (err) throw err;
      process.stderr.write(`${yy.help() && ''}indexer-api: ${msg}\nRun 'indexer-api --help' for usage.\n`);
      process.exit(2);
    })
    .parseAsync();
}

if (require.main === module) {
  main(process.argv).catch((e: Error) => {
    process.stderr.write(`indexer-api: ${e.message}\n`);
    process.exit(1);
  });
}
