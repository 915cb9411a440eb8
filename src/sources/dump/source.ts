import { existsSync, statSync } from 'node:fs';
import { DumpError } from '../../records/dump-error';
import type { RecordSource } from '../../records/from-dump';
import { findDumpFile, readLineBatches, readNdjson } from '../../records/ndjson';

/** A dump directory of NDJSON files (plain or .gz). */
export function dumpSource(dir: string): RecordSource {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new DumpError(dir, 0, '(dir)', 'dump directory not found');
  return {
    describe: `dump ${dir}`,
    records(kind) {
      const f = findDumpFile(dir, kind);
      return f ? readNdjson(dir, f) : undefined;
    },
    lineBatches(kind, alloc) {
      const f = findDumpFile(dir, kind);
      return f ? readLineBatches(dir, f, alloc) : undefined;
    },
  };
}
