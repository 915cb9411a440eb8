import { basename, dirname, resolve } from 'node:path';
import type { RecordSource } from './from-dump';
import { DumpError } from './dump-error';
import { NdjsonLine, readNdjson } from './ndjson';

/**
 * A RecordSource that holds resources (a database connection, an HTTP agent) and may know how
 * many records of a kind to expect (for the progress ETA).
 */
export interface ImportSource extends RecordSource {
  /** `false` for sources whose records are not file lines: errors then read `SOURCE: RECORD: FIELD: reason` */
  lineBased: boolean;
  /** expected number of records of `kind`, when cheaply known */
  total?(kind: string): number | undefined;
  /** counters for the --json summary (e.g. HTTP requests of a crawl) */
  stats?(): Record<string, number>;
  /**
   * current-state kinds this source delivered as CHANGED ROWS ONLY (not the whole set); asked
   * after the records were read. Such rows are upserted on the base, the base's other rows kept.
   */
  partialKinds?(): ReadonlySet<string>;
  /**
   * with 'tokens' partial: collections (lower-case hex, no 0x) whose tokens were delivered
   * WHOLE all the same (a burn in them: what is not delivered is gone); asked after the records
   */
  completeCollections?(): ReadonlySet<string>;
  /** a source able to deliver changed rows only that delivered the whole state: why (for the log) */
  fullStateReason?(): string | undefined;
  /** synchronous cleanup on SIGINT / SIGTERM (temporary files) */
  dispose?(): void;
  close(): Promise<void>;
  /** a crawl staged for a resumable load (an import's, issue #43): the load's side of it */
  resumableLoad?: ResumableLoad;
}

/**
 * What a source staged for a resumable load (src/sources/api/staging.ts) does for it: its txs
 * start after the load's checkpoint, and go from the staging once the load committed them.
 */
export interface ResumableLoad {
  /** the staged crawl's id: a load file of another crawl is not gone on from */
  readonly id: string;
  /** records('txs') yields the txs after this sequence only (a resumed load) */
  startAfter(sequence: number): void;
  /** the staged txs of each height, up to sequence `through` */
  seen(through: number): Map<number, number>;
  /** the txs up to sequence `through` are committed in the load: the staging lets them go (and shrinks) */
  loaded(through: number): void;
  /** the highest sequence a load said it committed (loaded), if any: the staging no longer holds what is below */
  committed(): number | undefined;
}

/**
 * A record of a non-file source. `file` names the record (`table tx, sequence 42`); line 0
 * marks it as not line-based, so the import command prints `SOURCE: RECORD: FIELD: reason`.
 */
export function record(label: string, text: string): NdjsonLine {
  return { file: label, line: 0, text };
}

/** A record-level error raised by a source itself (not by validation). */
export function recordError(label: string, field: string, reason: string): DumpError {
  return new DumpError(label, 0, field, reason);
}

/** The reason part of a DumpError (its message is `FILE:LINE: FIELD: reason`). */
export function dumpErrorText(e: DumpError, lineBased: boolean): string {
  if (lineBased && e.line > 0) return e.message;
  const prefix = `${e.file}:${e.line}: `;
  const rest = e.message.startsWith(prefix) ? e.message.slice(prefix.length) : e.message;
  return `${e.file}: ${rest}`;
}

/** An NDJSON side file (`--validators`, `--denom-contracts`) as the records of one kind. */
export function ndjsonFile(file: string): AsyncIterable<NdjsonLine> {
  const dir = dirname(resolve(file));
  const name = basename(file);
  return readNdjson(dir, name);
}

/** Concatenates record streams (used to emit a base snapshot's records, then new ones). */
export async function* concat(...parts: (AsyncIterable<NdjsonLine> | Iterable<NdjsonLine> | undefined)[]): AsyncGenerator<NdjsonLine> {
  for (const p of parts) if (p) yield* p;
}

// What a snapshot holds of the NFT state: declared beside its SQL.
export type { NftStateProbe } from '../snapshot/queries/nft-state';

/**
 * follow: deliver only the NFT state changed since `height` (the batch's first height) when
 * `ours` proves that enough — the collections that can have changed and their changed tokens
 * (docs/follow.md "Cost"); `recheck`: collections (lower-case hex) to read as well, whatever the
 * batch's txs name (the collections audit found them different from ours).
 */
export interface NftChangesSince {
  height: number;
  ours: import('../snapshot/queries/nft-state').NftStateProbe;
  recheck?: ReadonlySet<string>;
}
