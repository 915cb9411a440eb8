/**
 * What yargs is given to parse (src/cli.ts): the command line as typed, with its yes/no values
 * checked, and the INDEXER_API_* variables of the command that runs turned into options.
 *
 * Two things yargs does not do as a user needs them:
 *
 * - A yes/no option (`--verify`, `--watch`, `--json`, …) reads `--verify=yes`, `--verify=1` or
 *   INDEXER_API_VERIFY=maybe as *false*, silently (yargs-parser compares with 'true'): a safety
 *   check turned off by a value meant to turn it on. Here a yes/no value is one of Go's
 *   strconv.ParseBool spellings (src/lib/bool.ts, as the API's booleans), or it is refused with
 *   one line naming the value — and the variable when it came from the environment.
 * - yargs' `.env('INDEXER_API')` gives every INDEXER_API_* variable to every command, and strict
 *   mode then refuses a variable meant for another one (INDEXER_API_PORT set for `serve` stopped
 *   `check` with "unknown option --port", a flag nobody typed). Here a command reads only the
 *   variables of its own options; the others are ignored, and one that is a near miss of one of
 *   its options (INDEXER_API_PROT) gets a warning naming it.
 */
import { GO_BOOL_SPELLINGS, parseGoBool } from '../lib/bool';

/** The prefix of every option's environment variable. */
export const ENV_PREFIX = 'INDEXER_API_';

/** INDEXER_API_<OPTION>: the environment variable of an option (`max-lag-s` → INDEXER_API_MAX_LAG_S). */
export function envNameOf(option: string): string {
  return `${ENV_PREFIX}${option.replace(/-/g, '_').toUpperCase()}`;
}

/** What a command takes, as prepareArgs needs it. */
export interface CommandOptions {
  /** its long options, kebab-case (not help and version) */
  names: readonly string[];
  /** those that are yes/no */
  booleans: ReadonlySet<string>;
  /** it takes positional arguments (`check FILE…`): a word after a yes/no flag may be one */
  positionals: boolean;
  /** options that say one thing in different ways (the command's Alternatives): one typed, the variables of the others are not read */
  alternatives?: Alternatives['alternatives'];
}

/**
 * What a command module declares beside yargs' fields: the options that name one thing in
 * different ways — what to serve, where to import from (the sources' options, src/sources/registry.ts):
 * a flag typed for one of them wins over the variables of all of them, as over its own
 * (`serve --demo evm` with INDEXER_API_DB set serves the demo, not the file).
 */
export interface Alternatives {
  alternatives?: readonly (readonly string[])[];
}

export interface PreparedArgs {
  /** what yargs parses: the command, the options from the environment, then what was typed */
  args: string[];
  /** option → the variable its value came from */
  fromEnv: Map<string, string>;
  /** one line each: variables this command ignores that look like a typo of one of its own */
  warnings: string[];
}

/** A usage error found before yargs parses: the CLI prints its message and exits 2. */
export class CommandLineError extends Error {}

const camel = (kebab: string): string => kebab.replace(/-([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
const kebab = (name: string): string => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

function wrongBool(name: string, value: string): CommandLineError {
  return new CommandLineError(`${name} must be ${GO_BOOL_SPELLINGS}, got ${JSON.stringify(value)}`);
}

/** The options typed on the command line (before `--`), by their long name: `--x`, `--x=v`, `--no-x`, `--no-x=v`, `--camelCase`. */
export function typedOptions(args: readonly string[]): Set<string> {
  const typed = new Set<string>();
  for (const a of args) {
    if (a === '--') break;
    const m = /^--(?:no-)?([^=]+)/.exec(a);
    if (m) {
      typed.add(kebab(m[1]));
      typed.add(m[1]);
    }
  }
  return typed;
}

/**
 * The typed yes/no values checked and written as yargs reads them (`--verify=1` →
 * `--verify=true`; `--watch t` → `--watch=true`, but for a command with positional arguments
 * only `true` / `false` as a separate word, as yargs reads it); anything else is refused. A yes/no flag
 * followed by another word, where the command takes no positional argument, is refused too
 * (`--verify maybe` would otherwise be "unknown option --maybe").
 */
function checkTypedBooleans(args: readonly string[], o: CommandOptions): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--') {
      out.push(...args.slice(i));
      break;
    }
    const m = /^--(no-)?([^=]+)(?:=(.*))?$/s.exec(a);
    const name = m ? kebab(m[2]) : undefined;
    if (!m || name === undefined || !o.booleans.has(name)) {
      out.push(a);
      continue;
    }
    const negated = m[1] !== undefined;
    const typedName = `--${negated ? 'no-' : ''}${m[2]}`;
    if (m[3] !== undefined) {
      const b = parseGoBool(m[3]);
      if (b === undefined) throw wrongBool(typedName, m[3]);
      out.push(`--${name}=${String(negated ? !b : b)}`);
      continue;
    }
    const next = args[i + 1];
    if (!negated && next !== undefined && !next.startsWith('-')) {
      // a command with positionals (`check --json FILE`) gives a word its value only as yargs does:
      // true or false; a file named `1` stays a file
      const b = o.positionals && next !== 'true' && next !== 'false' ? undefined : parseGoBool(next);
      if (b !== undefined) {
        out.push(`--${name}=${String(b)}`);
        i++;
        continue;
      }
      if (!o.positionals) {
        throw new CommandLineError(
          `${typedName} takes no separate value, got ${JSON.stringify(next)}: ` +
            `write --${name} (yes), --no-${name} (no) or --${name}=VALUE with VALUE ${GO_BOOL_SPELLINGS}`,
        );
      }
    }
    out.push(`--${negated ? 'no-' : ''}${name}`);
  }
  return out;
}

/**
 * The command line yargs parses for command `command` (args[0]): typed yes/no values checked,
 * then each INDEXER_API_<OPTION> of an option this command takes and the command line does not
 * name added as `--option=value` (a flag wins over the environment). INDEXER_API_NO_<OPTION> of
 * a yes/no option is its negation (INDEXER_API_NO_VERIFY=1 is --no-verify). Any other
 * INDEXER_API_* variable is not this command's and is ignored; `otherCommandsTake(name)` says
 * whether another command takes the option, else a near miss of one of this command's own is
 * warned about. Throws CommandLineError (a usage error) for a value it refuses.
 */
export function prepareArgs(
  args: readonly string[],
  o: CommandOptions,
  env: NodeJS.ProcessEnv,
  otherCommandsTake: (option: string) => boolean = () => false,
): PreparedArgs {
  const [command, ...rest] = args;
  const typedRest = checkTypedBooleans(rest, o);
  const typed = typedOptions(rest);
  const names = new Set(o.names);
  const fromEnv = new Map<string, string>();
  const injected: string[] = [];
  const warnings: string[] = [];
  for (const variable of Object.keys(env)
    .filter((k) => k.startsWith(ENV_PREFIX))
    .sort()) {
    const value = env[variable] as string;
    const word = variable.slice(ENV_PREFIX.length).toLowerCase().replace(/_/g, '-');
    let option: string;
    let negated = false;
    if (names.has(word)) option = word;
    else if (word.startsWith('no-') && o.booleans.has(word.slice(3))) {
      option = word.slice(3);
      negated = true;
    } else {
      const base = word.startsWith('no-') ? word.slice(3) : word;
      const near = word === '' ? undefined : closest(word, o.names);
      if (near !== undefined && !otherCommandsTake(base)) {
        warnings.push(`${variable} is not read by ${command}: ignored (did you mean ${envNameOf(near)}?)`);
      }
      continue;
    }
    const typedOne = (name: string): boolean => typed.has(name) || typed.has(camel(name));
    if (typedOne(option)) continue;
    if ((o.alternatives ?? []).some((group) => group.includes(option) && group.some(typedOne))) continue;
    const earlier = fromEnv.get(option);
    if (earlier !== undefined) throw new CommandLineError(`${earlier} and ${variable} both set --${option}: keep one`);
    fromEnv.set(option, variable);
    if (o.booleans.has(option)) {
      const b = parseGoBool(value);
      if (b === undefined) throw wrongBool(`${variable} (--${negated ? 'no-' : ''}${option})`, value);
      injected.push(`--${option}=${String(negated ? !b : b)}`);
    } else {
      injected.push(`--${option}=${value}`);
    }
  }
  return { args: command === undefined ? [] : [command, ...injected, ...typedRest], fromEnv, warnings };
}

/** The known option nearest to `name` by edit distance, when near enough to be a typo of it. */
export function closest(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    const d = editDistance(name.toLowerCase(), k);
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  // a third of the word, at least 1 and at most 3 edits: `intervl` → interval, `xyz` → nothing
  return bestDistance <= Math.min(3, Math.max(1, Math.floor(name.length / 3))) ? best : undefined;
}

/** Edits from a to b, a swap of two neighbours counting as one (`prot` → `port`). */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/**
 * The variables the command line was given from (prepareArgs' fromEnv), for the messages of the
 * run: an error about `--db` whose value came from INDEXER_API_DB names the variable.
 */
let origins: ReadonlyMap<string, string> = new Map();

export function rememberEnvOrigins(fromEnv: ReadonlyMap<string, string>): void {
  origins = fromEnv;
}

/**
 * A message about an option (`--port must be …`, `--db x: no such snapshot file`) whose value
 * came from its environment variable names the variable: `INDEXER_API_PORT (--port) must be …` —
 * the user typed no --port to look for.
 */
export function nameEnvOrigin(msg: string, fromEnv: ReadonlyMap<string, string> = origins): string {
  const m = /^--([a-z][a-z0-9-]*)\b/.exec(msg);
  const variable = m ? fromEnv.get(m[1]) : undefined;
  if (!m || variable === undefined) return msg;
  return `${variable} (--${m[1]})${msg.slice(m[0].length)}`;
}
