/**
 * `import`'s orchestration: the options resolved once (resolveImport), the paths checked, the
 * named source opened (a dump, a rollytics PostgreSQL, a crawled API, optionally on a base
 * snapshot), its records loaded into a new snapshot beside --out and renamed over it. The
 * command (src/commands/import.ts) only parses the command line and calls runImport; `follow`'s
 * first import and the fixture cut (./cut/run.ts) call it too. src/follow/ never imports this
 * folder (.dependency-cruiser.js): a follow batch goes source → records → writer on its own.
 */
import { existsSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, resolve } from 'node:path';
import { DumpError } from '../records/dump-error';
import { loadRecords } from '../records/from-dump';
import { stopTxParsing } from '../records/parse/pool';
import { incrementalSource } from '../records/incremental';
import { crawlLoadPath, removeStagingFile } from '../sources/api/staging';
import { observeTotals } from '../sources/observe';
import { resolveHttp } from '../sources/options';
import type { SourceOptions } from '../settings/source';
import type { HttpOptions } from '../sources/http';
import { givenSources, oneSourceMessage, pickSource } from '../sources/registry';
import { StageProgress } from '../records/progress';
import { dumpErrorText, ImportSource } from '../records/source';
import { BaseInfo, completeFinishedLoad, FileCheck, SnapshotWriter } from '../snapshot/writer';
import { createLogger, defaultLogFormat, type LogFormat } from '../lib/log';
import { ProgressLines } from './progress';
import { IMPORT_DEFAULTS } from '../settings/import';
import { SOURCE_DEFAULTS } from '../settings/source';
import { parseDuration } from '../lib/duration';
import { openSnapshotFile } from '../snapshot/open';
import { cleanStaleTemps, ensureParentDir } from '../snapshot/store';
import { checkFreeSpace, checkInputFile, checkOutputFile } from '../lib/paths';

/**
 * `import`'s options as the command line gives them (every default and check applied by yargs,
 * src/settings/import.ts), or as a programmatic caller does (`follow`'s first import, the
 * fixture cut, tests): resolveImport fills what is unset, once.
 */
export interface ImportOptions extends SourceOptions {
  /** --from-dump DIR: one of the sources (src/sources/registry.ts), of import only */
  fromDump?: string;
  /** build on this snapshot: a copy of it plus the source's new heights (src/records/incremental.ts) */
  base?: string;
  out: string;
  force: boolean;
  quiet: boolean;
  json: boolean;
  /** threads parsing txs besides the one inserting (0: parse on that one); default: one per CPU */
  parseThreads?: number;
  /** the check of the finished file (default: integrity; none with --base) */
  check?: FileCheck;
  /** --from-api */
  fromHeight?: number;
  toHeight?: number;
  retries?: number;
  /** --from-api: first retry delay in ms (tests use less than HTTP_CLIENT_DEFAULTS') */
  backoffMs?: number;
  /** --accounts (a fixture cut, src/import/cut/run.ts): its source and what it keeps */
  fromSnapshot?: string;
  accounts?: string[];
  collections?: string[];
  /** wraps the opened source (the fixture cut, src/import/cut/) */
  transform?: (source: ImportSource) => ImportSource;
  /** the progress lines off a terminal (src/lib/log.ts); default: JSON off a terminal */
  logFormat?: LogFormat;
  /** off a terminal, a progress line this often, ms (default IMPORT_DEFAULTS') */
  progressInterval?: number;
  /** exit status after SIGINT / SIGTERM (default 130 / 143; `follow`'s first import: 0) */
  signalExitCode?: number;
  /** --from-api: heights per block page and txs per tx page (default 1000; tests crawl small pages) */
  crawlPage?: number;
  /**
   * --from-api: keep the crawl's staging when the import fails or is killed, for the same command
   * to go on from it (default true; the fixture cut, crawling a server of its own, does not)
   */
  resumeCrawl?: boolean;
  /** --from-api: txs per commit of the crawl's load (default LOAD_CHECKPOINT_TXS; tests commit more often) */
  loadCheckpointTxs?: number;
}

/** `import`'s settings, every one decided (resolveImport): below it no default is restated. */
export interface ImportConfig extends Omit<
  ImportOptions,
  | 'bech32Prefix'
  | 'statusVersion'
  | 'statusCommit'
  | 'concurrency'
  | 'rate'
  | 'timeout'
  | 'retries'
  | 'backoffMs'
  | 'parseThreads'
  | 'check'
  | 'logFormat'
  | 'progressInterval'
  | 'signalExitCode'
> {
  bech32Prefix: string;
  statusVersion: string;
  statusCommit: string;
  /** the crawl client of --from-api and --rest-url */
  http: HttpOptions;
  parseThreads: number;
  check: FileCheck;
  logFormat: LogFormat;
  /** ms */
  progressInterval: number;
  /** exit status after each signal */
  signalExitCode: { SIGINT: number; SIGTERM: number };
}

/**
 * The one resolve step of `import`: the options → the complete config. The checks a caller
 * without the command line could get wrong are made here, and only here (the CLI's yargs
 * tables check the numbers, the URL and the choices while parsing).
 */
export function resolveImport(o: ImportOptions): ImportConfig {
  if (importSourceCount(o) !== 1) throw new Error(oneSourceMessage('import'));
  const bech32Prefix = o.bech32Prefix ?? 'init';
  // a source may name its own prefix (a dump's chain.json)
  if (!givenSources(o, 'import').some((g) => g.kind.import.ownPrefix) && !/^[a-z0-9]+$/.test(bech32Prefix))
    throw new Error(`--bech32-prefix must be lower-case letters and digits, got ${JSON.stringify(bech32Prefix)}`);
  return {
    ...o,
    bech32Prefix,
    statusVersion: o.statusVersion ?? SOURCE_DEFAULTS.statusVersion,
    statusCommit: o.statusCommit ?? SOURCE_DEFAULTS.statusCommit,
    http: resolveHttp(o),
    parseThreads: o.parseThreads ?? availableParallelism(),
    // On a base, none: the base passed its check when it was built, the copy is byte-for-byte,
    // and a check reads every page of the file (55 s of an 86 s update on the 1M-tx chain).
    check: o.check ?? (o.base !== undefined ? 'none' : 'integrity'),
    logFormat: o.logFormat ?? defaultLogFormat(process.stderr),
    progressInterval: o.progressInterval ?? parseDuration(IMPORT_DEFAULTS.progressInterval, '--progress-interval'),
    signalExitCode: { SIGINT: o.signalExitCode ?? 130, SIGTERM: o.signalExitCode ?? 143 },
  };
}

export interface ImportResult {
  out: string;
  chainId: string;
  vmType: string;
  source: string;
  records: Record<string, number>;
  stages: { name: string; rows: number; seconds: number }[];
  /** source counters, e.g. HTTP requests / retries / bytes of a crawl */
  stats?: Record<string, number>;
  seconds: number;
}

/**
 * How many sources `o` names: its kinds' options (src/sources/registry.ts), and a fixture cut's
 * --from-snapshot (src/import/cut/run.ts, which reads it through an --from-api of its own).
 */
export function importSourceCount(o: object): number {
  return givenSources(o, 'import').length + ((o as ImportOptions).fromSnapshot !== undefined ? 1 : 0);
}

/** A rejected record: the message names the source, the record and the field. */
export class ImportRecordError extends Error {}

/**
 * Creates the directory --out goes into (`--out test/fixture.sqlite` in a project without
 * test/ yet): SQLite would refuse with "the directory does not exist", naming no path.
 */
export function ensureOutDir(out: string): void {
  ensureParentDir(out);
}

async function openSource(o: ImportConfig, progress: StageProgress, log: (line: string) => void): Promise<{ source: ImportSource; base?: BaseInfo }> {
  const { kind, value } = pickSource(o, 'import');
  let source = await kind.import.open(value, o, { progress, log });
  let base: BaseInfo | undefined;
  if (o.base !== undefined) {
    try {
      ({ source, base } = await incrementalSource(o.base, source));
    } catch (e) {
      await source.close();
      throw e;
    }
  }
  return { source: observeTotals(o.transform ? o.transform(source) : source), base };
}

/**
 * Builds a snapshot from a dump directory, a rollytics PostgreSQL database or a running
 * rollytics-compatible API (optionally on top of a base snapshot) into a temporary file beside
 * --out, renamed over --out only when every record validated and the file passed its checks.
 * On an error, SIGINT or SIGTERM the temporary file is removed and --out is untouched; a
 * temporary file left by a killed run is removed by the next run.
 */
export async function runImport(o: ImportOptions): Promise<ImportResult> {
  return importWith(resolveImport(o));
}

/**
 * The paths of an import, before any work (src/lib/paths.ts), in the option's words — the loader
 * would report a missing dump as a bad record of it, and a directory at --out only at the final
 * rename: the dump a directory that can be read, the files read (--base, --validators,
 * --denom-contracts) files that can be read, --out a file that may be written (not a directory,
 * not there without --force, its folder writable or creatable), and room beside it for a copy of
 * --base.
 */
export function checkImportPaths(o: Pick<ImportOptions, 'fromDump' | 'base' | 'validators' | 'denomContracts' | 'out' | 'force'>): void {
  for (const { kind, value } of givenSources(o, 'import')) kind.import.checkPaths?.(value);
  if (o.base !== undefined) checkInputFile('--base', o.base, 'snapshot file');
  if (o.validators !== undefined) checkInputFile('--validators', o.validators);
  if (o.denomContracts !== undefined) checkInputFile('--denom-contracts', o.denomContracts);
  checkOutputFile('--out', o.out, o.force ? true : '--force');
  if (o.base !== undefined) checkFreeSpace('--out', o.out, statSync(o.base).size, `the copy of --base ${o.base}`);
}

/**
 * An import's error as the operator reads it: a full disk named as such, and after a crawl's
 * failure where what it committed is kept (`kept`, '' when nothing is).
 */
function withKept(e: unknown, o: ImportConfig, outExisted: boolean, kept: string): unknown {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'SQLITE_FULL' || code === 'ENOSPC') {
    return new Error(
      `no space left on the device of ${dirname(resolve(o.out))} (${(e as Error).message}); ` +
        `${outExisted ? `${o.out} is unchanged` : `${o.out} was not written`} and the partial file was removed${kept}`,
    );
  }
  if (kept !== '' && e instanceof Error && !(e instanceof ImportRecordError)) e.message += kept;
  return e;
}

/**
 * A crawl's load commits every this many txs (and at their end), and its staging then lets them
 * go (issue #43): the staging's tx pages shrink as the snapshot grows, at most this many txs
 * behind (≈ 20 MB of the generated Wasm chain's); each commit journals the tx_accounts pages
 * the batch touched (bench/README.md "A crawl's footprint").
 */
const LOAD_CHECKPOINT_TXS = 50_000;

/** runImport on a resolved config (the command's handler resolves first: a bad option is named before any work). */
export async function importWith(o: ImportConfig): Promise<ImportResult> {
  checkImportPaths(o);
  const started = process.hrtime.bigint();
  ensureOutDir(o.out);
  cleanStaleTemps(o.out);
  let source: ImportSource | undefined;
  const totals = (s: string): number | undefined => source?.total?.(s);
  const logger = createLogger(
    'info',
    (t) => {
      process.stderr.write(t);
    },
    {},
    o.logFormat,
  );
  const progress =
    o.quiet || o.json
      ? new StageProgress(false)
      : process.stderr.isTTY === true
        ? new StageProgress(true, totals)
        : new ProgressLines(logger, o.progressInterval, totals);
  let writer: SnapshotWriter | undefined;
  const outExisted = existsSync(o.out);
  const abortWriter = (): void => {
    writer?.abort();
    // this run's temporary files, also one whose writer failed while being set up (disk full)
    cleanStaleTemps(o.out, true);
  };
  // a crawl (--from-api): what it committed is kept on any failure, and the same command goes on from it
  const staging = givenSources(o, 'import')[0]?.kind.import.keptStaging?.(o);
  const kept = (): string =>
    staging !== undefined && existsSync(staging)
      ? `; the crawl so far is kept in ${staging}${existsSync(crawlLoadPath(o.out)) ? ` (its load so far in ${crawlLoadPath(o.out)})` : ''}: ` +
        'the next run of this import goes on from it'
      : '';
  // Set by a signal: the exit, once the parser threads have finished what they hold (a thread
  // terminated mid-row can abort the process: src/records/parse/pool.ts). The loader, failing on
  // the aborted writer meanwhile, waits for it instead of reporting that failure.
  let exiting: Promise<never> | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    abortWriter();
    source?.dispose?.();
    process.stderr.write(
      `indexer-api import: interrupted by ${signal}; ${outExisted ? `${o.out} is unchanged` : `${o.out} was not written`}` +
        ` and the partial file was removed${kept()}\n`,
    );
    const code = signal === 'SIGINT' ? o.signalExitCode.SIGINT : o.signalExitCode.SIGTERM;
    exiting = stopTxParsing().then(() => process.exit(code));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let base: BaseInfo | undefined;
  try {
    ({ source, base } = await openSource(o, progress, (line) => {
      if (!o.quiet) logger.info(`import: ${line}`);
    }));
  } catch (e) {
    if (exiting) await exiting;
    progress.done();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    throw withKept(e, o, outExisted, kept());
  }
  try {
    if (base) progress.stage('copy base');
    const wo = { onStep: (s: string) => progress.stage(s), check: o.check };
    // a crawl's load (not on a base): into `.NAME.load`, committed as it goes, the staging let go behind it
    const rl = base === undefined && staging !== undefined ? source.resumableLoad : undefined;
    const loadPath = crawlLoadPath(o.out);
    if (rl !== undefined && completeFinishedLoad(loadPath, o.out, o.check)) {
      // a load killed after its last commit, before its rename: it is in place now
      if (staging !== undefined) removeStagingFile(staging);
      await source.close();
      progress.done();
      const placed = openSnapshotFile(o.out, {});
      const r = {
        out: o.out,
        chainId: placed.meta.chainId,
        vmType: placed.meta.vmType,
        source: source.describe,
        records: {},
        stages: progress.stages,
        seconds: Number(process.hrtime.bigint() - started) / 1e9,
      };
      placed.close();
      return r;
    }
    if (rl !== undefined) {
      writer = SnapshotWriter.resumable(o.out, loadPath, rl.id, wo);
      const from = writer.resumedFrom;
      if (from !== undefined) {
        rl.startAfter(from.lastSequence);
        if (!o.quiet)
          logger.info(`import: resuming the load kept in ${loadPath}: ${from.txs} txs (through sequence ${from.lastSequence}) are in, loading the rest`);
      } else if (rl.committed() !== undefined) {
        // the staging let go of txs a load committed, and that load is gone: nothing to go on from
        writer.discard();
        if (staging !== undefined) removeStagingFile(staging);
        throw new Error(
          `the load kept in ${loadPath} is missing or unusable, and the crawl kept in ${staging ?? '?'} no longer holds ` +
            `the txs it had committed: both are removed; run the import again to crawl anew`,
        );
      }
    } else {
      writer = base ? SnapshotWriter.extend(base, o.out, wo) : SnapshotWriter.create(o.out, wo);
    }
    const resumable =
      rl === undefined
        ? undefined
        : {
            every: o.loadCheckpointTxs ?? LOAD_CHECKPOINT_TXS,
            loaded: (t: number) => rl.loaded(t),
            seen: (t: number) => rl.seen(t),
            from: writer.resumedFrom,
          };
    const summary = await loadRecords(source, writer, progress, { parseThreads: o.parseThreads, resumable });
    await source.close();
    writer.finish({ prefix: summary.prefix });
    // the snapshot is in place: the crawl it was made from is done with
    if (staging !== undefined) removeStagingFile(staging);
    progress.done();
    return {
      out: o.out,
      chainId: summary.chainId,
      vmType: summary.vmType,
      source: source.describe,
      records: summary.counts,
      stages: progress.stages,
      ...(source.stats ? { stats: source.stats() } : {}),
      seconds: Number(process.hrtime.bigint() - started) / 1e9,
    };
  } catch (e) {
    if (exiting) await exiting;
    progress.done();
    abortWriter();
    await source.close().catch(() => undefined);
    // Dump lines keep their `FILE:LINE: FIELD: reason` error (printed as `bad dump record: ...`);
    // records of a database, an API or a base snapshot are named by the source and the record.
    if (e instanceof DumpError && (!source.lineBased || e.line === 0)) {
      // a bad record staged by a crawl would fail the next run the same way: it starts over
      if (staging !== undefined) removeStagingFile(staging);
      writer?.discard();
      throw new ImportRecordError(`bad record from ${source.describe}: ${dumpErrorText(e, false)}`);
    }
    throw withKept(e, o, outExisted, kept());
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
