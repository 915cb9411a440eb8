import { existsSync } from 'node:fs';
import type { Server } from 'node:http';
import type { CommandModule } from 'yargs';
import { resolveHttp, sourceOptionsOf } from '../sources/options';
import { createLogger } from '../lib/log';
import { openSnapshotFile } from '../snapshot/open';
import { acquireWriterLock, cleanStaleTemps, StoreError, type WriterLock } from '../snapshot/store';
import { Follower, SourceWentBackwards, StopFlag } from '../follow/follower';
import { useWal } from '../snapshot/writer';
import { createFollowMetrics, followReadiness, listenMetrics } from '../follow/metrics';
import { openFollowSource, pickSource, sourceChainId, sourceOptionNames, sourceOptionsFor } from '../sources/registry';
import { pinnedChainError } from '../snapshot/file-check';
import { RichListRefresher, WriteLock } from '../follow/richlist-refresh';
import { CollectionsAudit } from '../follow/collections-audit';
import { runImport } from '../import/run';
import { followOptions, FollowArgs, FollowOptions, resolveFollow } from '../settings/follow';
import { checkInputFile, checkOutputFile, checkWritableFile, describeError } from '../lib/paths';
import { type Alternatives, nameEnvOrigin } from '../settings/command-line';

/** How often follow tries again to switch --db to WAL mode while another process reads it, ms. */
const WAL_RETRY_MS = 1_000;
/**
 * How long each try waits for the lock, ms: a reader's momentary lock passes within it, and new
 * readers (serve's requests) are held back no longer than this while a try waits.
 */
const WAL_TRY_MS = 200;
/** A "still waiting" line this often, ms. */
const WAL_REMIND_MS = 60_000;

/**
 * Switches --db to WAL mode (and builds the indexes follow needs), waiting for as long as it
 * takes: the switch needs the file to itself, and a `serve` started beside it on a
 * rollback-journal file (an import's) reads all of it for its start-up check — about 7 s per GB
 * (docs/reliability.md), 40 minutes at 100 GB. SQLite alone would give up after 5 s with
 * "database is locked". Resolves false when stopped (SIGINT / SIGTERM) while waiting.
 */
async function switchToWal(file: string, stop: StopFlag, log: (line: string) => void): Promise<boolean> {
  const started = Date.now();
  let said: number | undefined;
  for (;;) {
    try {
      useWal(file, log, WAL_TRY_MS);
      if (said !== undefined)
        log(`follow: ${file} is in WAL mode now (waited ${((Date.now() - started) / 1000).toFixed(1)} s for the other process's read to end)`);
      return true;
    } catch (e) {
      if (!(e instanceof StoreError && e.code?.startsWith('SQLITE_BUSY'))) throw e;
    }
    const now = Date.now();
    if (said === undefined) {
      said = now;
      log(
        `follow: waiting for ${file}: another process is reading it (a serve's start-up check reads the whole file, about 7 s per GB), ` +
          `and switching it to WAL mode, so that serve reads on while follow writes, needs it alone for a moment; trying again every ${WAL_RETRY_MS / 1000} s`,
      );
    } else if (now - said >= WAL_REMIND_MS) {
      said = now;
      log(
        `follow: still waiting for ${file} (${Math.round((now - started) / 1000)} s): another process is reading it; switching it to WAL mode needs it alone`,
      );
    }
    await stop.sleep(WAL_RETRY_MS);
    if (stop.stopped) return false;
  }
}

/**
 * The paths, before any work (src/lib/paths.ts): --db a snapshot file this process may read and
 * write in a folder it may write (the -wal, -shm and lock files go beside it), or — missing —
 * one it may create; the files read (--validators, --denom-contracts) files that can be read.
 */
export function checkFollowPaths(o: Pick<FollowOptions, 'db' | 'validators' | 'denomContracts'>): void {
  if (existsSync(o.db)) checkWritableFile('--db', o.db, 'snapshot file');
  else checkOutputFile('--db', o.db, true);
  if (o.validators !== undefined) checkInputFile('--validators', o.validators);
  if (o.denomContracts !== undefined) checkInputFile('--denom-contracts', o.denomContracts);
}

/**
 * Follows the source into --db until SIGINT/SIGTERM (exit 0) or a source that went backwards
 * (exit 1). A missing --db is first built by an ordinary import.
 */
export async function runFollow(o: FollowOptions): Promise<number> {
  checkFollowPaths(o);
  const logger = createLogger(
    'info',
    (t) => {
      process.stderr.write(t);
    },
    {},
    o.logFormat,
  );
  const log = (line: string): void => {
    if (!o.quiet || !line.startsWith('follow: heights')) logger.info(line);
  };
  // a failing source, rich list or audit: warnings, so that an operator filtering for them sees a follower that stopped advancing
  const warn = (line: string): void => logger.warn(line);
  const { interval: intervalMs, maxBackoff: maxBackoffMs, richlistInterval: richListIntervalMs, collectionsAuditInterval: auditIntervalMs } = o;
  const stop = new StopFlag();
  const onSignal = (): void => stop.stop();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  let metrics: Server | undefined;
  let follower: Follower | undefined;
  let writerLock: WriterLock | undefined;
  try {
    // one writer per file: a second `follow` on it stops here, naming the first one's pid
    writerLock = acquireWriterLock(o.db);
    cleanStaleTemps(o.db);
    if (!existsSync(o.db)) {
      if (o.expectChainId !== undefined) {
        // asked before anything is imported: a source of another chain never becomes --db
        const theirs = await sourceChainId({ ...sourceOptionsOf(o), http: resolveHttp(o) });
        if (theirs !== undefined && theirs !== o.expectChainId) {
          throw new Error(
            `the source is chain ${JSON.stringify(theirs)}, not ${JSON.stringify(o.expectChainId)} (--expect-chain-id): not importing it into ${o.db}`,
          );
        }
      }
      log(`follow: ${o.db} does not exist; importing from the source first`);
      const r = await runImport({ ...sourceOptionsOf(o), out: o.db, force: false, quiet: o.quiet, json: false, signalExitCode: 0 });
      log(`follow: imported ${r.out} in ${r.seconds.toFixed(1)} s`);
    }
    if (stop.stopped) return 0;
    // Read-only first: a file that is not a snapshot of this build is refused in serve's words
    // before anything is written to it (no switch to WAL, no index; docs/reliability.md).
    const snap = openSnapshotFile(o.db, { currentWireFormatOnly: true });
    const { vmType, prefix, chainId } = snap.meta;
    snap.close();
    if (o.expectChainId !== undefined && chainId !== o.expectChainId) throw pinnedChainError(o.db, chainId, o.expectChainId, '--expect-chain-id');
    if (o.vmType !== undefined && o.vmType !== vmType) throw new Error(`--vm-type ${o.vmType} but ${o.db} is a ${vmType} snapshot`);
    if (o.bech32Prefix !== undefined && o.bech32Prefix !== prefix) throw new Error(`--bech32-prefix ${o.bech32Prefix} but ${o.db} uses ${prefix}`);
    if (!(await switchToWal(o.db, stop, log))) return 0;
    const source = openFollowSource({
      ...sourceOptionsOf(o),
      vmType,
      bech32Prefix: prefix,
      db: o.db,
      http: resolveHttp(o),
      statusVersion: o.statusVersion,
      statusCommit: o.statusCommit,
    });
    const lock = new WriteLock();
    follower = new Follower({ db: o.db, source, intervalMs, batchBlocks: o.batchBlocks, maxBackoffMs, log, warn, lock });
    const f = follower;
    const refresher =
      source.richList && richListIntervalMs > 0
        ? new RichListRefresher({
            db: o.db,
            reader: source.richList,
            intervalMs: richListIntervalMs,
            vmType,
            prefix,
            lock,
            log,
            warn,
            maxBackoffMs,
            swapRows: o.richlistSwapRows,
            chunkRows: o.richlistChunkRows,
          })
        : undefined;
    const audit =
      auditIntervalMs > 0
        ? new CollectionsAudit({
            db: o.db,
            lister: source.collections,
            intervalMs: auditIntervalMs,
            maxBackoffMs,
            log,
            warn,
            caughtUp: () => f.state.height >= f.state.sourceHeight && f.state.sourceHeight > 0,
            recheck: (hexes) => {
              for (const h of hexes) f.recheck.add(h);
            },
          })
        : undefined;
    if (o.metricsPort !== undefined) {
      metrics = await listenMetrics(
        createFollowMetrics(f.state, Date.now, refresher?.state, audit?.state),
        o.metricsPort,
        o.metricsHost,
        followReadiness(f.state, o.maxStall),
      );
      const a = metrics.address();
      const at = `http://${o.metricsHost}:${typeof a === 'object' && a ? a.port : o.metricsPort}`;
      log(`follow: metrics on ${at}/metrics; ${at}/ready answers 503 once follow has not advanced for ${o.maxStall / 1000} s (--max-stall)`);
    }
    log(`follow: following ${source.describe} into ${o.db} from height ${f.state.height} every ${intervalMs} ms`);
    if (refresher) log(`follow: refreshing the rich list from ${source.richList?.describe} every ${richListIntervalMs} ms`);
    if (audit) log(`follow: comparing the NFT collections with the source every ${auditIntervalMs} ms`);
    try {
      // The rich list is refreshed beside the blocks; a source that went backwards stops both.
      const done = await Promise.allSettled([
        f.run(stop).finally(() => stop.stop()),
        refresher?.run(stop).finally(() => stop.stop()),
        audit?.run(stop).finally(() => stop.stop()),
      ]);
      for (const r of done) if (r.status === 'rejected') throw r.reason;
    } finally {
      await source.close();
    }
    log(`follow: stopped at height ${f.state.height}`);
    return 0;
  } catch (e) {
    if (e instanceof SourceWentBackwards) {
      logger.error(`follow: ${e.message}`);
      return 1;
    }
    throw e;
  } finally {
    logger.flush();
    follower?.close();
    writerLock?.release();
    metrics?.close();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

export const followCommand: CommandModule<object, FollowArgs> & Alternatives = {
  command: 'follow',
  describe: 'Keep a snapshot current: import it if missing, then poll a PostgreSQL database or an API and append new heights in place',
  builder: (y) =>
    y
      .options(followOptions(sourceOptionsFor('follow')))
      .check((a) => {
        pickSource(a, 'follow');
        return true;
      })
      .example('$0 follow --db chain.sqlite --from-api https://indexer.example/ --interval 2s', 'follow an API')
      .example('$0 follow --db chain.sqlite --from-postgres postgres://ro@db:5432/rollytics --vm-type wasm', 'follow a rollytics database') as never,
  // the sources name one thing in different ways (src/settings/command-line.ts)
  alternatives: [sourceOptionNames('follow')],
  handler: async (argv) => {
    try {
      process.exitCode = await runFollow(resolveFollow(argv));
    } catch (e) {
      process.stderr.write(`indexer-api follow: ${nameEnvOrigin(describeError(e))}\n`);
      process.exitCode = 1;
    }
  },
};
