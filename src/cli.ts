import type { Argv, CommandModule } from 'yargs';
import { describeError } from './lib/paths';
import { type Alternatives, closest, CommandLineError, type CommandOptions, nameEnvOrigin, prepareArgs, rememberEnvOrigins } from './settings/command-line';
import { buildInfo } from './version';

export { closest, envNameOf } from './settings/command-line';

/**
 * The commands, loaded lazily: yargs calls a command's builder (its options) and handler only
 * when that command runs, so `serve` never loads the importer, the generator or pg, and
 * `--help` loads none of them. `describe` is what the top-level help lists; test/cli.test.ts
 * checks it against each command module's own.
 */
export const COMMANDS: readonly {
  name: string;
  /** the command with its positional arguments, as yargs takes it (default: the name alone) */
  signature?: string;
  describe: string;
  load(): CommandModule<object, never> & Alternatives;
}[] = [
  /* eslint-disable @typescript-eslint/no-require-imports -- each loaded only when its command runs (see above) */
  {
    name: 'serve',
    describe: 'Serve the read API from a snapshot file',
    load: lazyRequire(() => require('./commands/serve'), 'serveCommand'),
  },
  {
    name: 'publish',
    describe: 'Copy a snapshot into a directory for replicas to pull (content-addressed file + manifest.json)',
    load: lazyRequire(() => require('./commands/publish'), 'publishCommand'),
  },
  {
    name: 'import',
    describe:
      'Build a snapshot file from a dump directory (NDJSON, see docs/dump-format.md), a rollytics PostgreSQL database or a running rollytics-compatible API',
    load: lazyRequire(() => require('./commands/import'), 'importCommand'),
  },
  {
    name: 'follow',
    describe: 'Keep a snapshot current: import it if missing, then poll a PostgreSQL database or an API and append new heights in place',
    load: lazyRequire(() => require('./commands/follow'), 'followCommand'),
  },
  {
    name: 'check',
    signature: 'check [file..]',
    describe: 'Check snapshot files as serve does before serving one (open + quick check of every page), offline: exit 0 if all pass, 1 if one does not',
    load: lazyRequire(() => require('./commands/check'), 'checkCommand'),
  },
  {
    name: 'generate',
    describe: 'Write a synthetic, deterministic Initia rollup chain as an NDJSON dump (for demos and benchmarks)',
    load: lazyRequire(() => require('./commands/generate'), 'generateCommand'),
  },
  /* eslint-enable @typescript-eslint/no-require-imports */
];

/**
 * The command module a thunk requires, when the command runs (not with this module: cold start),
 * and the command it exports under `exportName`. Each command's require stays a literal string, so
 * the bundle (scripts/build-bundle.js, esbuild) sees and includes its module.
 */
function lazyRequire(load: () => unknown, exportName: string): () => CommandModule<object, never> & Alternatives {
  return () => {
    const command = (load() as Record<string, (CommandModule<object, never> & Alternatives) | undefined>)[exportName];
    if (command === undefined) throw new Error(`the command module exports no ${exportName}`);
    return command;
  };
}

function lazy(c: (typeof COMMANDS)[number]): CommandModule<object, never> {
  return {
    command: c.signature ?? c.name,
    describe: c.describe,
    builder: (y: Argv) =>
      ((c.load().builder as (y: Argv) => Argv)(y) as Argv<never>).epilog(
        `Every option above can also be set as INDEXER_API_<OPTION> (--log-format: INDEXER_API_LOG_FORMAT; ` +
          `a yes/no one also as INDEXER_API_NO_<OPTION>); ${c.name} ignores the variables of options it does not take. ` +
          `A flag wins over its variable. A yes/no option takes true or false (or 1, t, T, TRUE, True / 0, f, F, FALSE, False), nothing else.`,
      ),
    handler: (argv) => c.load().handler(argv),
  };
}

/** Words a newcomer types for something another command does. */
const COMMAND_HINTS: Record<string, string> = {
  pull: "a replica pulls with 'indexer-api serve --pull URL/manifest.json --db FILE'",
  push: "'indexer-api publish --db FILE --to DIR' writes a directory replicas pull from",
  export: "'indexer-api publish --db FILE --to DIR' copies a snapshot out",
  cut: "a fixture is cut with 'indexer-api import --from-snapshot FILE --accounts ADDR,... --out FILE' (docs/ci.md)",
  explorer: "'indexer-api serve' serves the explorer at / (open http://127.0.0.1:8080/ in a browser)",
  verify: "'indexer-api check FILE' checks a snapshot file as serve does before serving it",
};

/**
 * yargs' wording, made to name what the user typed: an option given with no value is reported
 * by yargs without its dashes; an unknown option gets the closest option of its command.
 */
export function usageMessage(msg: string, known: readonly string[] = [], args: readonly string[] = [], fromEnv?: ReadonlyMap<string, string>): string {
  const missing = /^Not enough arguments following: (\S+)$/.exec(msg);
  if (missing) return nameEnvOrigin(`--${missing[1]} needs a value`, fromEnv);
  const choice = /^Invalid values:\s+Argument: (\S+), Given: (.*), Choices: (.*)$/s.exec(msg);
  if (choice) return nameEnvOrigin(`--${choice[1]} must be one of ${choice[3].trim()}, got ${choice[2]}`, fromEnv);
  const unknown = /^Unknown arguments?: (.*)$/s.exec(msg);
  if (unknown) {
    const names = unknown[1].split(', ');
    // yargs lists an unknown --two-words also as twoWords, and --no-flag as flag
    const kebab = (n: string): string => n.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    return names
      .filter((n) => !/[A-Z]/.test(n) || !names.includes(kebab(n)))
      .map((name) => {
        const given = (flag: string): boolean => args.some((a) => a === flag || a.startsWith(`${flag}=`));
        // a word that is no option's value: yargs calls it an unknown argument, but no `--maybe` was typed
        if (args.includes(name) && !given(`--${name}`) && !given(`-${name}`) && !given(`--no-${name}`)) return `unexpected argument ${JSON.stringify(name)}`;
        const negated = name.length > 1 && !given(`--${name}`) && given(`--no-${name}`);
        const typed = name.length === 1 ? `-${name}` : `--${negated ? 'no-' : ''}${name}`;
        const near = closest(name, known);
        return `unknown option ${typed}${near === undefined ? '' : ` (did you mean --${negated ? 'no-' : ''}${near}?)`}`;
      })
      .join('; ');
  }
  return nameEnvOrigin(msg, fromEnv);
}

/** What a command's builder declares (run on a bare parser): its options, which are yes/no. */
function declared(c: (typeof COMMANDS)[number]): { key: Record<string, boolean>; boolean: string[] } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded when main() runs, not with the module (cold start)
  const yargs = require('yargs/yargs') as typeof import('yargs/yargs');
  const y = yargs([]);
  (c.load().builder as (y: Argv) => Argv)(y);
  return (y as unknown as { getOptions(): { key: Record<string, boolean>; boolean: string[] } }).getOptions();
}

/** A command's options as prepareArgs takes them: long names (not help, version, its positionals), the yes/no ones. */
export function commandOptions(name: string): CommandOptions {
  const c = COMMANDS.find((x) => x.name === name);
  if (!c) return { names: [], booleans: new Set(), positionals: false };
  const positional = [...(c.signature ?? '').matchAll(/[[<]([\w-]+)(?:\.\.)?[\]>]/g)].map((m) => m[1]);
  const o = declared(c);
  const names = Object.keys(o.key).filter((k) => k.length > 1 && !/[A-Z]/.test(k) && k !== 'help' && k !== 'version' && !positional.includes(k));
  return { names, booleans: new Set(o.boolean.filter((b) => names.includes(b))), positionals: positional.length > 0, alternatives: c.load().alternatives };
}

/** The long options of a command (its builder run on a bare parser), for the "did you mean". */
function optionsOf(command: string | undefined): string[] {
  return [...(command === undefined ? [] : commandOptions(command).names), 'help', 'version'];
}

function usageError(msg: string, command?: string): never {
  process.stderr.write(`indexer-api: ${msg}\nRun 'indexer-api ${command === undefined ? '' : `${command} `}--help' for usage.\n`);
  process.exit(2);
}

/** Registers the commands; every option of the command that runs can also come from INDEXER_API_<OPTION> (e.g. INDEXER_API_DB). */
export async function main(argv: string[]): Promise<void> {
  let args = argv.slice(2);
  // `indexer-api help` and `indexer-api help COMMAND`, as git and npm have them
  if (args[0] === 'help') args = args.length > 1 ? [args[1], '--help'] : ['--help'];
  const first = args[0];
  if (first !== undefined && !first.startsWith('-') && !COMMANDS.some((c) => c.name === first)) {
    const hint = COMMAND_HINTS[first.toLowerCase()];
    usageError(`unknown command ${JSON.stringify(first)}${hint ? `: ${hint}` : ''} (commands: ${COMMANDS.map((c) => c.name).join(', ')})`);
  }
  const command = COMMANDS.some((c) => c.name === first) ? first : undefined;
  // Yes/no values checked, and the INDEXER_API_* variables of this command's own options added
  // (src/settings/command-line.ts); --help and --version read none.
  if (command !== undefined && !args.some((a) => a === '--help' || a === '-h' || a === '--version' || a === '-v')) {
    try {
      const prepared = prepareArgs(args, commandOptions(command), process.env, (option) =>
        COMMANDS.some((c) => c.name !== command && commandOptions(c.name).names.includes(option)),
      );
      args = prepared.args;
      rememberEnvOrigins(prepared.fromEnv);
      // a cluster worker parses the same command line: the primary has said it
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded when main() runs, not with the module (cold start)
      if (!(require('node:cluster') as typeof import('node:cluster').default).isWorker) {
        for (const w of prepared.warnings) process.stderr.write(`indexer-api: warning: ${w}\n`);
      }
    } catch (e) {
      if (e instanceof CommandLineError) usageError(e.message, command);
      throw e;
    }
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded when main() runs, not with the module (cold start)
  const yargs = require('yargs/yargs') as typeof import('yargs/yargs');
  const info = buildInfo();
  let y = yargs(args)
    .scriptName('indexer-api')
    .usage('$0 <command> [options]\n\nA read-only replica of the rollytics / kvindexer HTTP API, served from one SQLite snapshot file.');
  for (const c of COMMANDS) y = y.command(lazy(c));
  await y
    .demandCommand(1, 'Name a command: serve, import, follow, publish, check or generate (see --help).')
    .strict()
    .version(`${info.version} (commit ${info.commit})`)
    .alias('version', 'v')
    .help()
    .alias('help', 'h')
    .epilog(
      'Every option can also be set with an environment variable INDEXER_API_<OPTION>, e.g. ' +
        'INDEXER_API_DB=chain.sqlite, INDEXER_API_PORT=9000, INDEXER_API_CORS_ORIGIN=https://scan.example; ' +
        'INDEXER_API_NO_<OPTION>=true is --no-<option>. Each command reads ' +
        'the variables of its own options and ignores the others. Command-line flags win over the environment. ' +
        'A yes/no option takes true or false (or 1, t, T, TRUE, True / 0, f, F, FALSE, False), nothing else.',
    )
    .wrap(Math.min(110, process.stdout.columns || 110))
    // English messages whatever LANG says: usageMessage() reads one of them.
    .locale('en')
    .fail((msg: string | null, err: Error | undefined) => {
      // yargs gives a message for every usage error, a failed check() or coerce included; an
      // error thrown by a command's handler comes without one and is not a usage error (exit 1).
      if (msg === null || msg === undefined || msg === '') throw err ?? new Error('indexer-api: failed');
      usageError(usageMessage(msg, /^Unknown arguments?:/.test(msg) ? optionsOf(command) : [], args), command);
    })
    .parseAsync()
    .catch((e: unknown) => {
      // a failure of the run about an option set by its variable (`--db x: no such snapshot
      // file` from INDEXER_API_DB) names the variable: no --db was typed
      const text = describeError(e);
      const named = nameEnvOrigin(text);
      throw named === text ? e : new Error(named, { cause: e });
    });
}

if (require.main === module) {
  main(process.argv).catch((e: Error) => {
    // a system error that got this far is worded (src/lib/paths.ts): never ENOENT, EISDIR… to a person
    process.stderr.write(`indexer-api: ${describeError(e)}\n`);
    process.exit(1);
  });
}
