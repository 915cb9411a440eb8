/**
 * The kinds of source, listed once (SOURCES: one entry per folder of src/sources/), and the one
 * lookup every command goes through: which source the options name (exactly one, or the one
 * "name exactly one source" error), its option declarations for `--help`, the follow source it
 * opens and the chain it names. Adding a kind of source is its folder plus its entry here.
 */
import type { Options } from 'yargs';
import type { SourceOptions } from '../settings/source';
import type { FollowSource, FollowSourceOptions, SourceKind } from './contracts';
import type { HttpOptions } from './http';
// each folder's index by its full name: a build of before the folders holds a stale dump.js that `./dump` would find first
import { API_SOURCE } from './api/index';
import { DUMP_SOURCE } from './dump/index';
import { POSTGRES_SOURCE } from './postgres/index';

/** Every kind, in the order `--help` shows their options. */
export const SOURCES: readonly SourceKind[] = [DUMP_SOURCE, POSTGRES_SOURCE, API_SOURCE];

/** The commands that read a source. */
export type SourceCommand = 'import' | 'follow';

/** A kind's option as the options object holds it: `from-api` → `fromApi`. */
export function sourceKey(kind: SourceKind): string {
  return kind.option.replace(/-([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

/** The kinds a command reads, in the order its "name exactly one source" message names them. */
function kindsOf(command: SourceCommand): SourceKind[] {
  const listed = (k: SourceKind): number => (command === 'import' ? k.import.listed : (k.follow?.listed ?? 0));
  return SOURCES.filter((k) => command === 'import' || k.follow !== undefined).sort((a, b) => listed(a) - listed(b));
}

/** The options that name a source of `command`, declared by their kinds, in SOURCES' order (a command's table puts them first). */
export function sourceOptionsFor(command: SourceCommand): Record<string, Options> {
  const kinds = SOURCES.filter((k) => command === 'import' || k.follow !== undefined);
  return Object.fromEntries(kinds.map((k) => [k.option, k.declaration]));
}

/** The option names of `command`'s sources: they name one thing in different ways (src/settings/command-line.ts ALTERNATIVES). */
export function sourceOptionNames(command: SourceCommand): string[] {
  return Object.keys(sourceOptionsFor(command));
}

/** `name exactly one source: --from-api URL or --from-postgres DSN`. */
export function oneSourceMessage(command: SourceCommand): string {
  const named = kindsOf(command).map((k) => `--${k.option} ${k.arg}`);
  const list = named.length > 1 ? `${named.slice(0, -1).join(', ')} or ${named[named.length - 1]}` : named.join('');
  return `name exactly one source: ${list}`;
}

/** The sources `o` names for `command` (its kinds whose option is set), each with its value. */
export function givenSources(o: object, command: SourceCommand): { kind: SourceKind; value: string }[] {
  const values = o as Record<string, unknown>;
  return kindsOf(command)
    .filter((k) => values[sourceKey(k)] !== undefined)
    .map((kind) => ({ kind, value: String(values[sourceKey(kind)]) }));
}

/** The one source `o` names for `command`: exactly one, or the "name exactly one source" error. */
export function pickSource(o: object, command: SourceCommand): { kind: SourceKind; value: string } {
  const given = givenSources(o, command);
  if (given.length !== 1) throw new Error(oneSourceMessage(command));
  return given[0];
}

/** `follow`'s source, opened: the kind the options name. */
export function openFollowSource(o: FollowSourceOptions): FollowSource {
  const { kind, value } = pickSource(o, 'follow');
  return (kind.follow as NonNullable<SourceKind['follow']>).open(value, o);
}

/**
 * The source's chain id, asked once before anything is read from it (follow --expect-chain-id
 * before its first import): /status of an API, the `block` table of a database.
 */
export function sourceChainId(o: SourceOptions & { http: HttpOptions }): Promise<string | undefined> {
  const { kind, value } = pickSource(o, 'follow');
  return (kind.follow as NonNullable<SourceKind['follow']>).chainId(value, o);
}
