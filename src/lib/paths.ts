/**
 * The paths a user names on the command line, checked before any work starts (docs/reliability.md
 * "Errors a person can act on"): each check throws a PathError whose one line names the option,
 * the path, what is wrong in words and what to do — never the system's code (ENOENT, EISDIR…).
 * Commands run them first thing (src/commands/*); `describeError` words any system error that
 * still reaches the top (a file removed between the check and its use, a disk that fills).
 */
import { accessSync, constants, existsSync, statfsSync, statSync, type Stats } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** A path that cannot be used as given: the message is the one line the CLI prints (exit 1). */
class PathError extends Error {}

/** System error codes in words (what `describeError` and the checks say instead of the code). */
const REASONS: Record<string, string> = {
  ENOENT: 'does not exist',
  ENOTDIR: 'a part of its path is a file, not a directory',
  EISDIR: 'is a directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'is on a read-only file system',
  ENOSPC: 'no space left on its device',
  EDQUOT: 'disk quota exceeded',
  EEXIST: 'already exists',
  ENOTEMPTY: 'is a directory that is not empty',
  EMFILE: 'too many open files in this process (raise ulimit -n)',
  ENFILE: 'too many open files on this machine',
  ENAMETOOLONG: 'its name is too long',
  ELOOP: 'too many levels of symbolic links',
  EBUSY: 'is busy',
  EXDEV: 'is on another device',
  EIO: 'an input/output error of its device',
  // the network's (a source's URL, a port to listen on)
  ECONNREFUSED: 'connection refused (nothing listens there)',
  ECONNRESET: 'connection reset by the other side',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name lookup failed (temporarily)',
  EPIPE: 'connection closed by the other side',
  EADDRINUSE: 'address already in use',
  EADDRNOTAVAIL: 'not an address of this machine',
  UND_ERR_SOCKET: 'connection closed by the other side',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_HEADERS_TIMEOUT: 'no answer in time',
  UND_ERR_BODY_TIMEOUT: 'the answer stopped coming',
};

/** The reason of a system error in words (its code never shown). */
export function fsReason(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  const known = err?.code === undefined ? undefined : REASONS[err.code];
  if (known !== undefined) return known;
  // Node's text is "CODE: description, syscall 'path'": keep the description only
  const m = /^[A-Z][A-Z0-9_]+: ([^,]+)/.exec(String(err?.message ?? e));
  return m
    ? m[1]
    : String(err?.message ?? e)
        .replace(/\b(E[A-Z]{2,}|SQLITE_[A-Z_]+)\b:?\s*/g, '')
        .trim() || 'failed';
}

/** A system error still raw (with its code and the path it was about), in one line of words; other errors as they are. */
export function describeError(e: unknown): string {
  const err = e as NodeJS.ErrnoException & { dest?: string };
  if (err instanceof Error && typeof err.code === 'string' && /^E[A-Z]+$/.test(err.code) && typeof err.syscall === 'string') {
    const what = err.path === undefined ? err.syscall : err.dest === undefined ? err.path : `${err.path} → ${err.dest}`;
    return `${what}: ${fsReason(err)}${ADVICE[err.code] ?? ''}`;
  }
  return err instanceof Error ? err.message : String(e);
}

/** What to do, after the reason, where one thing fits every case of the code. */
const ADVICE: Record<string, string> = {
  EACCES: ' (run as a user who may, or change the permissions)',
  EPERM: ' (run as a user who may, or change the permissions)',
  EROFS: ' (name a path on a writable file system)',
  ENOSPC: ' (free some space or name a path on another device)',
  EDQUOT: ' (free some space or name a path on another device)',
};

function statOf(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

function can(path: string, mode: number): boolean {
  try {
    accessSync(path, mode);
    return true;
  } catch {
    return false;
  }
}

/** The nearest existing ancestor of `path` (the folder a new file or folder goes into, once made). */
function existingAncestor(path: string): string {
  let p = dirname(resolve(path));
  while (!existsSync(p)) {
    const up = dirname(p);
    if (up === p) break;
    p = up;
  }
  return p;
}

/** `option path` as the message begins. */
const named = (option: string, path: string): string => `${option} ${path}`;

/**
 * What is wrong with a file to read (a snapshot, a validators list), in words, or undefined when
 * it exists, is a file and can be read: the one wording of every command (`serve --db`, `check
 * FILE`, `publish --db`…), each putting its own name for the file before it.
 */
export function inputFileProblem(path: string, what = 'file'): string | undefined {
  const st = statOf(path);
  if (st === undefined) {
    const up = existingAncestor(path);
    const parent = dirname(resolve(path));
    if (up !== parent && statOf(up)?.isDirectory() === false) return `${up} is a file, not a directory`;
    return `no such ${what}`;
  }
  if (st.isDirectory()) return `is a directory, not a ${what}`;
  if (!st.isFile()) return 'is not a regular file';
  if (!can(path, constants.R_OK)) return 'cannot be read (permission denied): run as a user who may read it, or change its permissions';
  return undefined;
}

/** A file to read (a snapshot, a validators list): it exists, is a file, and can be read. */
export function checkInputFile(option: string, path: string, what = 'file'): void {
  const problem = inputFileProblem(path, what);
  if (problem !== undefined) throw new PathError(`${named(option, path)}: ${problem}`);
}

/** A directory to read (a dump, --db-dir): it exists, is a directory, and can be listed. */
export function checkInputDir(option: string, path: string, what = 'directory'): void {
  const st = statOf(path);
  if (st === undefined) throw new PathError(`${named(option, path)}: no such ${what}`);
  if (!st.isDirectory()) throw new PathError(`${named(option, path)}: is a file, not a ${what}`);
  if (!can(path, constants.R_OK | constants.X_OK))
    throw new PathError(`${named(option, path)}: cannot be read (permission denied): run as a user who may read it, or change its permissions`);
}

/**
 * A directory to write into (publish --to, generate --out, the folder of a new file): when it
 * exists, a directory this process may create files in; when not, one that can be made — the
 * nearest existing folder above it is a directory this process may write.
 */
export function checkOutputDir(option: string, dir: string, hint = 'name a directory (it is created if missing)'): void {
  const st = statOf(dir);
  if (st !== undefined) {
    if (!st.isDirectory()) throw new PathError(`${named(option, dir)}: is a file, not a directory: ${hint}`);
    if (!can(dir, constants.W_OK | constants.X_OK))
      throw new PathError(`${named(option, dir)}: cannot be written (permission denied): run as a user who may write it, or name another directory`);
    return;
  }
  const up = existingAncestor(resolve(dir, 'x'));
  if (statOf(up)?.isDirectory() !== true) throw new PathError(`${named(option, dir)}: cannot be created: ${up} is a file, not a directory`);
  if (!can(up, constants.W_OK | constants.X_OK))
    throw new PathError(`${named(option, dir)}: cannot be created in ${up} (permission denied): run as a user who may write there, or name another directory`);
}

/**
 * A file to write (import --out, follow --db when missing, serve --pull --db): not a directory;
 * not there unless it may be replaced (`replace`: the option that allows it, or true); its folder
 * exists or can be made, and can be written (a temporary file goes beside it, then a rename).
 */
export function checkOutputFile(option: string, path: string, replace: boolean | string): void {
  const st = statOf(path);
  if (st?.isDirectory() === true) throw new PathError(`${named(option, path)}: is a directory: name the file to write, e.g. ${join(path, 'chain.sqlite')}`);
  if (st !== undefined && !st.isFile()) throw new PathError(`${named(option, path)}: is not a regular file`);
  if (st !== undefined && typeof replace === 'string') throw new PathError(`refusing to overwrite ${path} (pass ${replace} to replace it)`);
  const dir = dirname(resolve(path));
  const up = existingAncestor(path);
  if (statOf(up)?.isDirectory() !== true) throw new PathError(`${named(option, path)}: cannot be created: ${up} is a file, not a directory`);
  if (!can(up, constants.W_OK | constants.X_OK)) {
    throw new PathError(
      up === dir
        ? `${named(option, path)}: its directory ${dir} cannot be written (permission denied): run as a user who may write there, or name another path`
        : `${named(option, path)}: its directory ${dir} cannot be created in ${up} (permission denied): ` +
            `run as a user who may write there, or name another path`,
    );
  }
}

/**
 * A file to change in place (follow --db): a regular file this process may read and write, in a
 * folder it may write (SQLite puts the -wal and -shm files and follow its lock beside it).
 */
export function checkWritableFile(option: string, path: string, what = 'file'): void {
  checkInputFile(option, path, what);
  if (!can(path, constants.W_OK))
    throw new PathError(`${named(option, path)}: cannot be written (permission denied): run as a user who may write it, or change its permissions`);
  const dir = dirname(resolve(path));
  if (!can(dir, constants.W_OK | constants.X_OK)) {
    throw new PathError(
      `${named(option, path)}: its directory ${dir} cannot be written (permission denied), ` +
        `and the -wal, -shm and lock files go beside the file: run as a user who may write there`,
    );
  }
}

/** Free bytes for this process on the device of `path` (or its nearest existing folder); undefined where the system does not say. */
export function freeBytes(path: string): number | undefined {
  try {
    const st = statfsSync(existsSync(path) ? path : existingAncestor(resolve(path, 'x')));
    return Number(st.bavail) * Number(st.bsize);
  } catch {
    return undefined;
  }
}

const mb = (n: number): string => `${(n / 1e6).toFixed(n < 1e7 ? 1 : 0)} MB`;

/**
 * At least `need` bytes free where `path` (an option's value: a directory, or a file to write)
 * goes — on the device of its nearest existing folder, where the system says — or a PathError
 * saying how much is free and needed.
 */
export function checkFreeSpace(option: string, path: string, need: number, forWhat: string): void {
  const at = statOf(path)?.isDirectory() === true ? path : existingAncestor(path);
  const free = freeBytes(at);
  if (free === undefined || free >= need) return;
  throw new PathError(
    `${named(option, path)}: ${mb(free)} free on the device of ${at}, ${forWhat} needs about ${mb(need)}: free some space or name a path on another device`,
  );
}
