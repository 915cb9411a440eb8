/**
 * Numeric command-line options, checked while yargs parses: a bad value is a usage error (the
 * CLI prints one line and exits 2, src/cli.ts) that quotes the text the user typed.
 *
 * yargs' `type: 'number'` turns `abc` into NaN, so these options are read as strings and
 * converted here; and yargs gives an option typed with no value its default (`--port` alone
 * served on 8080), so each requires its argument (`requiresArg`; enums do too, see `choice()`).
 * Each table declares its options with `int()` / `decimal()` and passes through `named()`, which
 * puts the option's name into the message: the rule is declared once, next to the option's
 * default and description.
 *
 * A table is also the type of what its handler gets (ArgsOf): each option's value type comes from
 * its declaration — the helper that declared it, else its coerce, choices or yargs type — and it
 * is always there when the option has a default or must be given, so no command restates its
 * options as an interface.
 */
import type { Options } from 'yargs';
import { formatByteSize, parseByteSize } from '../lib/bytes';
import { parseDuration } from '../lib/duration';

/**
 * The type of the value a handler gets for an option, where its declaration's yargs fields do not
 * say it: int(), decimal(), duration() and byteSize() give a number (named() adds the coerce that
 * makes it one), repeatable() a string or several. For the type checker only: never set.
 */
declare const VALUE: unique symbol;
export interface Valued<V> {
  readonly [VALUE]?: V;
}

/** `db-dir` → `dbDir`: the name yargs gives a handler (its camel-case expansion). */
type Camel<S extends string> = S extends `${infer H}-${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S;

/** The value of an option as its handler gets it: what its helper says, else its coerce's result, its choices, its yargs type. */
type ValueOf<O> = O extends Valued<infer V> ? (unknown extends V ? Plain<O> : V) : Plain<O>;
type Plain<O> = O extends { coerce: (v: never) => infer R }
  ? R
  : O extends { choices: readonly (infer C)[] }
    ? C
    : O extends { type: 'boolean' }
      ? boolean
      : O extends { type: 'string'; array: true }
        ? string[]
        : O extends { type: 'string' }
          ? string
          : unknown;

/** The options a handler always gets: those with a default, and those that must be given. */
type Given<T> = { [K in keyof T & string]: T[K] extends { default: unknown } | { demandOption: true | string } ? K : never }[keyof T & string];
type Flat<T> = { [K in keyof T]: T[K] };

/**
 * What yargs gives the handler of a table of options (`serve`'s ServeArgs): each option under its
 * camel-case name, with its value's type; optional unless it has a default or must be given.
 */
export type ArgsOf<T> = Flat<
  { -readonly [K in Given<T> as Camel<K>]: ValueOf<T[K]> } & { -readonly [K in Exclude<keyof T & string, Given<T>> as Camel<K>]?: ValueOf<T[K]> }
>;

/** The options of a table that have a default, as defaultsOf() gives them. */
export type DefaultsOf<T> = Flat<{ -readonly [K in keyof T & string as T[K] extends { default: unknown } ? Camel<K> : never]: ValueOf<T[K]> }>;

interface Rule {
  /** whole numbers only (ports, counts, milliseconds) */
  integer: boolean;
  min: number;
  /** the smallest value is excluded (a rate or a lag of 0 means nothing) */
  minExclusive?: boolean;
  max?: number;
}

const RULE = Symbol('numeric rule');
const DURATION = Symbol('duration rule');
const URL_RULE = Symbol('url rule');
const BYTES_RULE = Symbol('byte size rule');

/**
 * yargs-parser keeps the value of an option flagged `string` as typed even when it is also
 * flagged `number`, and --help labels such an option [number]: the typed text reaches coerce,
 * and the help still says what to type (test/cli.test.ts checks both).
 */
const AS_TEXT = { string: true, number: true, requiresArg: true } as const;
type NumericOptions = Options & { [RULE]?: Rule };

function wanted(r: Rule): string {
  const kind = r.integer ? 'a whole number' : 'a number';
  if (r.max !== undefined) return `${kind} from ${r.min} to ${r.max}`;
  return `${kind} ${r.minExclusive ? '>' : '≥'} ${r.min}`;
}

/** The value yargs collected for the option → the number, or a message naming what was typed. */
function parseNumber(name: string, r: Rule, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  // Repeated on the command line: the last one wins, as with every other option.
  const v = Array.isArray(value) ? (value[value.length - 1] as unknown) : value;
  if (typeof v === 'number' && Number.isFinite(v) && fits(r, v)) return v;
  const text = String(v).trim();
  if (text === '' || typeof v === 'boolean') throw new Error(`${name} needs a value: ${wanted(r)}`);
  const n = r.integer ? (/^[+-]?\d+$/.test(text) ? Number(text) : NaN) : /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text) ? Number(text) : NaN;
  if (!Number.isFinite(n) || !fits(r, n) || (r.integer && !Number.isSafeInteger(n))) {
    throw new Error(`${name} must be ${wanted(r)}, got ${JSON.stringify(String(v))}`);
  }
  return n;
}

function fits(r: Rule, n: number): boolean {
  if (r.integer && !Number.isInteger(n)) return false;
  if (r.minExclusive ? n <= r.min : n < r.min) return false;
  return r.max === undefined || n <= r.max;
}

/** A whole-number option ≥ min (≤ max when given). */
export function int<O extends Options>(range: { min: number; max?: number }, o: O): O & Valued<number> {
  return { ...o, ...AS_TEXT, [RULE]: { integer: true, min: range.min, max: range.max } };
}

/** A number option > `above` (fractions allowed: a rate, a lag in seconds). */
export function decimal<O extends Options>(range: { above: number }, o: O): O & Valued<number> {
  return { ...o, ...AS_TEXT, [RULE]: { integer: false, min: range.above, minExclusive: true } };
}

/**
 * Binds each numeric option of a table to its name: yargs calls `coerce` with the value only.
 * Defaults pass through the same check (yargs coerces them too), so a default is a number.
 */
export function named<T extends Record<string, Options>>(table: T): T;
export function named(table: Record<string, Options>): Record<string, Options> {
  return Object.fromEntries(
    Object.entries(table).map(([key, o]) => {
      const rule = (o as NumericOptions)[RULE];
      const d = (o as { [DURATION]?: { zero?: string } })[DURATION];
      if (d) return [key, { ...o, coerce: (v: unknown) => parseDurationOption(`--${key}`, v, d.zero) }];
      if ((o as { [URL_RULE]?: true })[URL_RULE]) return [key, { ...o, coerce: (v: unknown) => parseHttpUrl(`--${key}`, v) }];
      const size = (o as { [BYTES_RULE]?: { min: number } })[BYTES_RULE];
      if (size) return [key, { ...o, coerce: (v: unknown) => parseByteSizeOption(`--${key}`, v, size.min) }];
      if (!rule) return [key, o];
      return [key, { ...o, coerce: (v: unknown) => parseNumber(`--${key}`, rule, v) }];
    }),
  );
}

/** An option taking one of a few words; like the numbers, it must be given one. */
export function choice<O extends Options & { choices: readonly string[] }>(o: O): O {
  return { ...o, requiresArg: true };
}

/**
 * The shortest wait a duration option takes: below it a poll loop spins (`follow --interval 0`
 * polled without pause, minutes of CPU for nothing new).
 */
const MIN_DURATION_MS = 50;

/**
 * A duration option (`2s`, `500ms`, `1m`; src/lib/duration.ts), read into milliseconds while
 * yargs parses: ≥ MIN_DURATION_MS, or 0 where `zero` says what 0 means (`never`). `--help`
 * shows the default as typed.
 */
export function duration<O extends Options & { zero?: string }>(o: O): Omit<O, 'zero'> & Valued<number> {
  const { zero, ...rest } = o;
  return { ...rest, type: 'string', requiresArg: true, [DURATION]: { zero } };
}

function parseDurationOption(name: string, value: unknown, zero: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const v = Array.isArray(value) ? (value[value.length - 1] as unknown) : value;
  const wanted = `a duration like 2s, 500ms, 2m or 1h, at least ${MIN_DURATION_MS}ms${zero === undefined ? '' : ` (or 0: ${zero})`}`;
  let ms: number;
  try {
    ms = parseDuration(String(v), name, { allowZero: true });
  } catch {
    throw new Error(`${name} must be ${wanted}, got ${JSON.stringify(String(v))}`);
  }
  if (ms === 0 && zero !== undefined) return 0;
  if (ms < MIN_DURATION_MS) throw new Error(`${name} must be ${wanted}, got ${JSON.stringify(String(v))}`);
  return ms;
}

/**
 * A size in bytes (`64m`, `1g`, `512KiB`, or a whole number of bytes; src/lib/bytes.ts), ≥ min,
 * read into bytes while yargs parses. `--help` shows the default with its unit.
 */
export function byteSize<O extends Options & { default?: number }>(range: { min: number }, o: O): O & Valued<number> {
  const shown = o.default === undefined ? {} : { defaultDescription: formatByteSize(o.default) };
  return { ...shown, ...o, type: 'string', requiresArg: true, [BYTES_RULE]: { min: range.min } };
}

export function parseByteSizeOption(name: string, value: unknown, min: number): number | undefined {
  if (value === undefined) return undefined;
  const v = Array.isArray(value) ? (value[value.length - 1] as unknown) : value;
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= min) return v;
  const n = parseByteSize(String(v));
  if (n === undefined || n < min) {
    throw new Error(
      `${name} must be a size of at least ${min} bytes: ` +
        `a whole number of bytes, or with a unit as in 64m, 1g, 512KiB (binary: 1k = 1024), got ${JSON.stringify(String(v))}`,
    );
  }
  return n;
}

/**
 * A string option that may be given more than once (`serve --db a.sqlite --db b.sqlite`): the
 * handler gets the string, or every one in order.
 */
export function repeatable<O extends Options & { type: 'string' }>(o: O): O & Valued<string | string[]> {
  return o;
}

/** An http(s) URL option (a source's base URL), checked while yargs parses. */
export function httpUrl<O extends Options>(o: O): O & Valued<string> {
  return { ...o, type: 'string', requiresArg: true, [URL_RULE]: true };
}

function parseHttpUrl(name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  const v = String(Array.isArray(value) ? (value[value.length - 1] as unknown) : value);
  let u: URL | undefined;
  try {
    u = new URL(v);
  } catch {
    u = undefined;
  }
  if (u === undefined || (u.protocol !== 'http:' && u.protocol !== 'https:')) {
    throw new Error(`${name} must be an http:// or https:// URL, got ${JSON.stringify(v)}`);
  }
  return v;
}

/**
 * The defaults of an option table, keyed as yargs gives them to a handler (camelCase), each
 * through its option's check as yargs would put it (a duration's '30s' is 30000): what a caller
 * of the code without the command line (the library's startServer) starts from, so that no
 * default is written twice.
 */
export function defaultsOf<T extends Record<string, Options>>(table: T): DefaultsOf<T>;
export function defaultsOf(table: Record<string, Options>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, o] of Object.entries(table)) {
    if (o.default === undefined) continue;
    const name = key.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());
    out[name] = o.coerce ? (o.coerce(o.default) as unknown) : o.default;
  }
  return out;
}
