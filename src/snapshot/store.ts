/**
 * The snapshot store: the one module that opens a SQLite file (docs/architecture.md "The
 * snapshot store"). Every connection is opened in one of a few named modes, each with its
 * pragmas declared once, here; the store also owns the temporary files beside a target (their
 * name, the crash clean-up that reads the name back, fsync + rename) and the write lock that
 * keeps a second writer (a second `follow`) off a file.
 */
import type Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { openDatabase } from '../sqlite';
import { fsReason } from '../lib/paths';
import { checkSnapshotHeader } from './file-check';

/**
 * - `read`: read-only, the file must exist (serve, checks, copies, probes);
 * - `liveRead`: read-only on a file another process may be writing (the commit watch);
 * - `inPlace`: the live file written in place in WAL mode, readers reading on (follow);
 *   waits up to 5 s for another connection's write (this process's rich-list refresh). Only an
 *   indexer-api snapshot of this schema is opened so: anything else (a plain SQLite file, an
 *   empty or truncated one) is refused with serve's words before a byte of it is written;
 * - `bulk`: a new or copied temporary file beside the target, loaded without a journal and
 *   renamed over the target at the end (import, cut, import --base);
 * - `scratch`: a throw-away file (a follow batch's or a rich-list refresh's staging), never renamed;
 * - `resumable`: an import's crawl staging, kept across runs (a run killed, or stopped by its
 *   source or a full disk, is continued by the next): every commit survives a process crash
 *   (WAL, synchronous NORMAL; a power cut may lose the last commits, never consistency), one
 *   process at a time (exclusive lock, so no -shm file either);
 * - `resumableBulk`: an import's load from its crawl staging (`.NAME.load`, issue #43): `bulk`'s
 *   cache and temp store, but a rollback journal (truncated at each commit; appended pages are
 *   not journaled, so it stays small), so a process killed amid it finds the file as the last
 *   commit left it (no sync: a commit survives kill -9, not a power cut).
 */
export type OpenMode = 'read' | 'liveRead' | 'inPlace' | 'bulk' | 'scratch' | 'resumable' | 'resumableBulk';

/** How long a connection waits for another's write lock before SQLITE_BUSY. */
const BUSY_TIMEOUT_MS = 5000;

/**
 * Each mode's pragmas, run in this order right after the open. `bulk` turns the rollback
 * journal off (better-sqlite3's defensive mode keeps it on unless unsafe mode is allowed).
 */
const PRAGMAS: Record<OpenMode, readonly string[]> = {
  // serve's snapshot keeps one read transaction open: query_only guards it, and 1 GiB of map
  // + 64 MiB of cache keep a served file's hot pages in memory
  read: ['query_only = ON', 'mmap_size = 1073741824', 'cache_size = -65536'],
  liveRead: [],
  // busy_timeout first: the switch to WAL waits for it too (it needs the file to itself)
  inPlace: [`busy_timeout = ${BUSY_TIMEOUT_MS}`, 'journal_mode = WAL', 'synchronous = NORMAL', 'temp_store = MEMORY', 'cache_size = -65536'],
  // 96 MiB: holds the pages the load keeps revisiting (the tx_accounts b-tree of a 1M-tx chain
  // is ≈46 MB; txs are appended), and keeps the import under 500 MB with parser threads.
  bulk: ['journal_mode = OFF', 'synchronous = OFF', 'locking_mode = EXCLUSIVE', 'temp_store = MEMORY', 'cache_size = -98304'],
  scratch: ['journal_mode = OFF', 'synchronous = OFF', 'locking_mode = EXCLUSIVE'],
  // locking_mode first: WAL then keeps its index in this process's memory (no -shm beside);
  // the -wal cut back to 8 MiB after a checkpoint (one big transaction, an index build, grew it)
  resumable: ['locking_mode = EXCLUSIVE', 'journal_mode = WAL', 'synchronous = NORMAL', 'cache_size = -32768', 'journal_size_limit = 8388608'],
  resumableBulk: ['locking_mode = EXCLUSIVE', 'journal_mode = TRUNCATE', 'synchronous = OFF', 'temp_store = MEMORY', 'cache_size = -98304'],
};

/** A scratch file another connection attaches (a rich-list refresh's staging): no exclusive lock. */
const SHARED_SCRATCH: readonly string[] = ['journal_mode = OFF', 'synchronous = OFF', 'cache_size = -65536'];

export interface OpenOptions {
  /** the file must exist (default: true for read, liveRead and inPlace; false for bulk and scratch) */
  mustExist?: boolean;
  /** scratch files shared by two connections (the refresh's staging is attached by the live connection) */
  shared?: boolean;
  /**
   * inPlace: how long to wait for another connection's lock, ms (default 5 s); a wait that
   * runs out throws a StoreError with code SQLITE_BUSY (follow's switch to WAL waits its own way)
   */
  busyTimeoutMs?: number;
}

/** An open or pragma error, with the file it is about (SQLite's own text names none). */
export class StoreError extends Error {
  /** `reason`: SQLite's or the system's own text, without the file */
  constructor(
    readonly file: string,
    readonly reason: string,
    readonly code?: string,
    /** false: the file opened, its first read failed (not a database, malformed) */
    readonly atOpen = true,
  ) {
    super(reason.includes(file) ? reason : `${file}: ${reason}`);
  }
}

/**
 * Opens `file` in `mode`. A file opened for writing (bulk, scratch) gets its folder created.
 * Any error (missing file, not a database, a folder that cannot be created) names the file.
 */
export function openStore(file: string, mode: OpenMode, o: OpenOptions = {}): Database.Database {
  const readonly = mode === 'read' || mode === 'liveRead';
  const mustExist = o.mustExist ?? (readonly || mode === 'inPlace');
  // Written in place only if it is a snapshot: SQLite would otherwise switch a stranger's file
  // to WAL, or make an empty file a database, at the first pragma (throws SnapshotError).
  if (mode === 'inPlace') checkSnapshotHeader(file);
  if (!mustExist) ensureParentDir(file);
  let db: Database.Database;
  try {
    db = openDatabase(file, { readonly, fileMustExist: mustExist });
  } catch (e) {
    throw named(file, e);
  }
  try {
    let pragmas = mode === 'scratch' && o.shared ? SHARED_SCRATCH : PRAGMAS[mode];
    if (mode === 'inPlace' && o.busyTimeoutMs !== undefined)
      pragmas = pragmas.map((p) => (p.startsWith('busy_timeout') ? `busy_timeout = ${o.busyTimeoutMs}` : p));
    if (mode === 'bulk') db.unsafeMode(true);
    for (const p of pragmas) db.pragma(p);
    if (mode === 'bulk') db.unsafeMode(false);
    // SQLite reads the header only at the first statement: "file is not a database" is met here.
    if (pragmas.length === 0) db.pragma('schema_version', { simple: true });
  } catch (e) {
    try {
      db.close();
    } catch {
      /* failing anyway */
    }
    throw named(file, e, false);
  }
  return db;
}

function named(file: string, e: unknown, atOpen = true): StoreError {
  const err = e as NodeJS.ErrnoException;
  // SQLite's "unable to open database file" says neither which nor why
  const reason =
    err.code === 'SQLITE_CANTOPEN'
      ? 'cannot be opened: check that it exists and this user may read it (and, to write it or read a -wal beside it, write it and its directory)'
      : (err.message ?? String(e));
  return new StoreError(file, reason, err.code, atOpen);
}

/**
 * Creates the folder `file` goes into (`--out test/fixture.sqlite` in a project without test/
 * yet, `serve --pull URL --db pulled/local.sqlite`): SQLite and rename() say only ENOENT.
 */
export function ensureParentDir(file: string): void {
  const dir = dirname(resolve(file));
  try {
    mkdirSync(dir, { recursive: true });
  } catch (e) {
    throw new StoreError(file, `cannot create the directory of ${file} (${dir}): ${fsReason(e)}`, (e as NodeJS.ErrnoException).code);
  }
}

/** `.NAME.tmp-PID-HEX`: a temporary file beside `target`, named for the crash clean-up. */
export function tempPathBeside(target: string): string {
  return join(dirname(resolve(target)), `.${basename(target)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
}

/**
 * The pid that made the temporary file `name` (a base name in the target's folder) of `target`,
 * its -journal / -wal / -shm included; undefined when `name` is not one. The inverse of tempPathBeside.
 */
export function parseTempName(name: string, target: string): number | undefined {
  const prefix = `.${basename(target)}.tmp-`;
  if (!name.startsWith(prefix)) return undefined;
  const m = /^(\d+)-[0-9a-f]+(?:-journal|-wal|-shm)?$/.exec(name.slice(prefix.length));
  return m ? Number(m[1]) : undefined;
}

/**
 * Removes the temporary files beside `target` left by a killed process (their pid is gone);
 * a live process's (this one's too, unless `ownToo`) are left alone. Returns the removed names.
 */
export function cleanStaleTemps(target: string, ownToo = false): string[] {
  const dir = dirname(resolve(target));
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return removed;
  }
  for (const name of names) {
    const pid = parseTempName(name, target);
    if (pid === undefined) continue;
    if (!(ownToo && pid === process.pid) && pidAlive(pid)) continue;
    try {
      unlinkSync(join(dir, name));
      removed.push(name);
    } catch {
      /* raced with another cleaner */
    }
  }
  return removed;
}

/** Flushes a finished temporary file, renames it over `target` and flushes the folder entry. */
export function syncAndRename(temp: string, target: string): void {
  const fd = openSync(temp, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(temp, target);
  } catch (e) {
    throw new StoreError(target, `cannot put the finished file in place at ${target}: ${fsReason(e)}`, (e as NodeJS.ErrnoException).code);
  }
  const dirFd = openSync(dirname(resolve(target)), 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
}

/**
 * Copies `file` to `dest` by VACUUM INTO: it reads inside one transaction, so the copy is
 * consistent even while the file is being written (WAL), compacted, and the same bytes for the
 * same content (publish).
 */
export function compactCopy(file: string, dest: string): void {
  const db = openStore(file, 'liveRead');
  try {
    db.prepare('VACUUM INTO ?').run(dest);
  } finally {
    db.close();
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A second writer on a file that has one. */
export class WriterLockedError extends Error {
  constructor(
    readonly file: string,
    readonly pid: number,
  ) {
    super(`${file} is being written by process ${pid} (lock ${lockPathOf(file)}); one writer per file: stop that process first`);
  }
}

export interface WriterLock {
  readonly file: string;
  release(): void;
}

/** The lock file of `file`: `FILE.writer.lock`, holding the writer's pid. */
export function lockPathOf(file: string): string {
  return `${resolve(file)}.writer.lock`;
}

function lockHolder(lock: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(lock, 'utf8');
  } catch {
    return undefined;
  }
  const pid = Number(text.trim());
  return Number.isSafeInteger(pid) && pid > 0 ? pid : 0;
}

/**
 * Takes the write lock of `file` for this process, or throws WriterLockedError naming the pid
 * that holds it. The lock file appears whole or not at all (written aside, then hard-linked:
 * link() fails when the name exists). A lock whose pid is dead is taken over: it is first
 * renamed aside, so of two processes taking it over at once only one moves it, and a lock
 * moved by mistake (a live one, created in between) is linked back. Readers (serve) never look
 * at it: they go on reading while the writer writes (WAL).
 */
export function acquireWriterLock(file: string): WriterLock {
  const lock = lockPathOf(file);
  ensureParentDir(lock);
  const aside = `${lock}.${process.pid}-${randomBytes(4).toString('hex')}`;
  const fd = openSync(aside, 'wx');
  try {
    writeSync(fd, `${process.pid}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        linkSync(aside, lock);
        break;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST')
          throw new StoreError(file, `cannot take the write lock ${lock}: ${(e as Error).message}`, (e as NodeJS.ErrnoException).code);
        if (attempt >= 3) throw new StoreError(file, `cannot take the write lock ${lock}: it keeps changing hands`);
      }
      const pid = lockHolder(lock);
      if (pid === undefined) continue; // released meanwhile
      if (pid !== 0 && (pid === process.pid || pidAlive(pid))) throw new WriterLockedError(file, pid);
      const stale = `${lock}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
      try {
        renameSync(lock, stale);
      } catch {
        continue;
      } // another process took it over first
      const moved = lockHolder(stale);
      if (moved !== undefined && moved !== pid && moved !== 0 && pidAlive(moved)) {
        try {
          linkSync(stale, lock);
        } catch {
          /* a third holder: it is refused below anyway */
        }
        unlinkSync(stale);
        throw new WriterLockedError(file, moved);
      }
      unlinkSync(stale);
    }
  } finally {
    unlinkSync(aside);
  }
  let held = true;
  return {
    file,
    release(): void {
      if (!held) return;
      held = false;
      // only our own lock: never one a later process took over
      if (lockHolder(lock) === process.pid) {
        try {
          unlinkSync(lock);
        } catch {
          /* already gone */
        }
      }
    },
  };
}
