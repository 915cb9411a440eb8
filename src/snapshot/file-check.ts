import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { READABLE_SCHEMA_VERSIONS, readableSchema, SCHEMA_VERSION } from './schema';
import { inputFileProblem } from '../lib/paths';

/**
 * The checks of a snapshot file that need no SQLite: its path, its 100-byte SQLite header, its
 * size. openSnapshot runs them before opening; a cluster primary runs them (with the header's
 * schema version) before forking, without loading better-sqlite3.
 */

/** A snapshot that cannot be served; the message is the one line `serve` prints. */
export class SnapshotError extends Error {}

const SQLITE_MAGIC = 'SQLite format 3\u0000';
/** SQLite file header: PRAGMA user_version, 4 bytes big-endian (sqlite.org/fileformat.html, section 1.3) */
const USER_VERSION_AT = 60;

function readHeader(file: string): Buffer {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(100);
    const n = readSync(fd, buf, 0, 100, 0);
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

/** Missing, not a regular file, not SQLite, truncated: throws SnapshotError; returns the header. */
export function checkSnapshotFile(file: string): Buffer {
  // the words serve's --db check and `check FILE` use (src/lib/paths.ts inputFileProblem): one wording
  const problem = inputFileProblem(file, 'snapshot file');
  if (problem !== undefined) throw new SnapshotError(`${file}: ${problem}`);
  const st = statSync(file);
  const header = readHeader(file);
  if (header.length < 100 || header.subarray(0, 16).toString('latin1') !== SQLITE_MAGIC) {
    throw new SnapshotError(`not a SQLite database: ${file}`);
  }
  const pageSize = header.readUInt16BE(16) === 1 ? 65536 : header.readUInt16BE(16);
  const pageCount = header.readUInt32BE(28);
  // A live WAL file (`follow` writing it, its -wal beside it): a checkpoint copies page 1 — with
  // the new page count — before the pages that extend the file, so for a moment the header is
  // ahead of the size. That is no truncation; SQLite reads the pages it lacks from the WAL.
  const liveWal = header[18] === 2 && existsSync(`${file}-wal`);
  if (pageCount > 0 && st.size < pageSize * pageCount && !liveWal) {
    throw new SnapshotError(`snapshot is truncated (${st.size} bytes, header says ${pageSize * pageCount}): ${file}`);
  }
  return header;
}

/** The refusal of a snapshot whose user_version is not a schema version this build reads. */
export function schemaVersionError(version: number, file: string): SnapshotError {
  const reads = `this indexer-api reads versions ${READABLE_SCHEMA_VERSIONS.join(' and ')}`;
  return new SnapshotError(
    version === 0
      ? `not an indexer-api snapshot (or its import did not finish): ${file}`
      : version > SCHEMA_VERSION
        ? `snapshot schema version ${version}, newer than ${reads}: use the indexer-api that built it: ${file}`
        : `snapshot schema version ${version}, ${reads} (re-import it): ${file}`,
  );
}

/** A file of another chain than the one a replica was told to serve (`by`: who said, e.g. `--expect-chain-id`). */
export function pinnedChainError(file: string, found: string, want: string, by: string): SnapshotError {
  return new SnapshotError(`snapshot is chain ${JSON.stringify(found)}, not ${JSON.stringify(want)} (${by}): ${file}`);
}

/** checkSnapshotFile plus the schema version as the header records it. */
export function checkSnapshotHeader(file: string): void {
  const version = checkSnapshotFile(file).readUInt32BE(USER_VERSION_AT);
  if (!readableSchema(version)) throw schemaVersionError(version, file);
}
