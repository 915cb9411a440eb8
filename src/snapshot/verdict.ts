/**
 * Recorded checks (docs/reliability.md#a-check-once-per-file): the quick check of every page
 * reads the whole file (≈ 7 s per GB in the page cache, several times that from disk), and a file
 * that passed it and has not changed since passes it again. So a passing check is recorded, with
 * what identifies the file's bytes, and a later check of the same unchanged file — a restart of
 * serve, another worker, `serve` after `indexer-api check` in a deploy script, a `--pull`
 * download renamed over --db after its check — takes the record instead of reading the file.
 *
 * **Not changed** is decided by the file's identity and content markers, all read in O(1):
 * device and inode (a copy or a download renamed over the path is another inode: checked in
 * full), size, modification time to the nanosecond, SQLite's file change counter (header bytes
 * 24–27), and — when a write-ahead log with frames sits beside it — the log's size and
 * modification time. Any write to the file or its log moves the modification time; a file
 * replaced in place keeps its inode but not its modification time (and rarely its size and
 * change counter). What it does not catch is what no check at start catches either: a page that
 * rots later on the disk without a write — a damaged page met while serving is still never
 * served (docs/reliability.md: SQLITE_CORRUPT answers 503 and the file is checked again).
 *
 * Where: `.indexer-api-checked/<dev>-<ino>.json` in the file's own directory (a `--pull`
 * download is checked beside --db and renamed over it: the same directory, the same inode), or,
 * when that directory is read-only, `~/.cache/indexer-api/checked/`. One small file per checked
 * inode, written to a temporary name and renamed (a check killed while recording leaves at most
 * a temporary file, never a half-written record), holding its own SHA-256: a record that does
 * not parse, does not hash, or names other markers is ignored — the file is checked in full.
 */
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

/** What identifies a file's bytes without reading them (see the module's comment). */
export interface FileMarkers {
  dev: string;
  ino: string;
  size: string;
  mtime_ns: string;
  change_counter: number;
  /** the write-ahead log's size and modification time, when it has frames; '' otherwise */
  wal: string;
}

/** A recorded passing check. */
export interface Verdict {
  markers: FileMarkers;
  /** when the check that passed ended (ISO 8601) */
  checked_at: string;
  /** how long it took, ms */
  ms: number;
  /** what ran: SQLite's quick_check of every page */
  check: 'quick_check';
  /** the path it was checked under (information: the record is found by device and inode) */
  file: string;
}

const DIR = '.indexer-api-checked';
const FORMAT = 1;

/** The markers of `file` now; undefined when it cannot be read. */
export function fileMarkers(file: string): FileMarkers | undefined {
  try {
    const st = statSync(file, { bigint: true });
    const header = Buffer.alloc(28);
    const fd = openSync(file, 'r');
    try {
      readSync(fd, header, 0, 28, 0);
    } finally {
      closeSync(fd);
    }
    let wal = '';
    try {
      const w = statSync(`${file}-wal`, { bigint: true });
      if (w.size > 0n) wal = `${w.size}:${w.mtimeNs}`;
    } catch {
      /* no log */
    }
    return { dev: String(st.dev), ino: String(st.ino), size: String(st.size), mtime_ns: String(st.mtimeNs), change_counter: header.readUInt32BE(24), wal };
  } catch {
    return undefined;
  }
}

const sameMarkers = (a: FileMarkers, b: FileMarkers): boolean =>
  a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtime_ns === b.mtime_ns && a.change_counter === b.change_counter && a.wal === b.wal;

/** The places a record of `file` may be, in the order they are tried. */
function recordPaths(file: string, m: FileMarkers): string[] {
  const name = `${m.dev}-${m.ino}.json`;
  return [join(dirname(file), DIR, name), join(homedir(), '.cache', 'indexer-api', 'checked', name)];
}

function digest(body: string): string {
  return createHash('sha256').update(body).digest('hex');
}

/**
 * The recorded passing check of `file` as it is now, if there is one: undefined when none was
 * recorded, the file changed since (other markers), or the record is damaged.
 */
export function findVerdict(file: string, now: FileMarkers | undefined = fileMarkers(file)): Verdict | undefined {
  if (now === undefined) return undefined;
  for (const path of recordPaths(file, now)) {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      continue;
    }
    try {
      const { format, verdict, sha256 } = JSON.parse(text) as { format?: number; verdict?: Verdict; sha256?: string };
      if (format !== FORMAT || verdict === undefined || sha256 !== digest(JSON.stringify(verdict))) continue;
      if (verdict.check === 'quick_check' && sameMarkers(verdict.markers, now)) return verdict;
    } catch {
      /* damaged: ignored */
    }
  }
  return undefined;
}

/**
 * Records that `file`, with the markers `before` it was read, passed its check in `ms` — if it
 * still has them (a file written while it was checked is not recorded). Best effort: a record
 * that cannot be written anywhere only means the next start checks again. Returns where it was
 * written, or undefined.
 */
export function recordVerdict(file: string, before: FileMarkers | undefined, ms: number): string | undefined {
  if (before === undefined) return undefined;
  const after = fileMarkers(file);
  if (after === undefined || !sameMarkers(before, after)) return undefined;
  const verdict: Verdict = { markers: after, checked_at: new Date().toISOString(), ms: Math.round(ms), check: 'quick_check', file };
  const text = `${JSON.stringify({ format: FORMAT, verdict, sha256: digest(JSON.stringify(verdict)) })}\n`;
  for (const path of recordPaths(file, after)) {
    const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    try {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(tmp, text, { mode: 0o644 });
      renameSync(tmp, path);
      pruneRecords(dirname(path));
      return path;
    } catch {
      rmSync(tmp, { force: true });
    }
  }
  return undefined;
}

/** Records beyond this many in one directory: the oldest go (inodes of files long gone). */
const KEEP_RECORDS = 256;

/** Keeps a record directory small: temporary files of killed writers and the oldest records beyond KEEP_RECORDS. */
function pruneRecords(dir: string): void {
  try {
    const entries = readdirSync(dir)
      .map((name) => {
        const path = join(dir, name);
        try {
          return { name, path, mtime: statSync(path).mtimeMs };
        } catch {
          return undefined;
        }
      })
      .filter((e): e is { name: string; path: string; mtime: number } => e !== undefined);
    const now = Date.now();
    for (const e of entries) if (e.name.endsWith('.tmp') && now - e.mtime > 60_000) rmSync(e.path, { force: true });
    const records = entries.filter((e) => e.name.endsWith('.json')).sort((a, b) => b.mtime - a.mtime);
    for (const e of records.slice(KEEP_RECORDS)) rmSync(e.path, { force: true });
  } catch {
    /* best effort */
  }
}
