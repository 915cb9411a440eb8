import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { generateCommand } from './commands/generate';
import { importCommand } from './commands/import';
import { serveCommand } from './commands/serve';
import { buildInfo } from './version';

/** Registers the commands; every option can also come from INDEXER_API_<OPTION> (e.g. INDEXER_API_DB). */
export async function main(argv: string[]): Promise<void> {
  const info = buildInfo();
  await yargs(hideBin(argv))
    .scriptName('indexer-api')
    .usage('$0 <command> [options]\n\nA read-only replica of the rollytics / kvindexer HTTP API, served from one SQLite snapshot file.')
    .command(serveCommand)
    .command(importCommand)
    .command(generateCommand)
    .env('INDEXER_API')
    .demandCommand(1, 'Name a command: serve, import or generate (see --help).')
    .strict()
    .version(`${info.version} (commit ${info.commit})`)
    .help()
    .epilog('Every option can also be set with an environment variable INDEXER_API_<OPTION>, e.g. INDEXER_API_DB=chain.sqlite, INDEXER_API_PORT=9000, INDEXER_API_CORS_ORIGIN=https://scan.example. Command-line flags win over the environment.')
    .wrap(Math.min(110, process.stdout.columns || 110))
    .fail((msg, err, y) => {
      if (err) throw err;
      process.stderr.write(`${y.help() && ''}indexer-api: ${msg}\nRun 'indexer-api --help' for usage.\n`);
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
