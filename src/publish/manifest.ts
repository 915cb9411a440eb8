/**
 * DIR/manifest.json, the one mutable file of a publish directory (docs/scaling.md): which
 * snapshot is current. Everything else in DIR is immutable and content-addressed, so any static
 * file host (nginx, an S3-compatible bucket, `python3 -m http.server`) can serve it and caches
 * may keep data files forever.
 */
export interface Manifest {
  /** manifest format; bumped if a field changes meaning */
  format: 1;
  /** chain height of the snapshot (meta `height`) */
  height: number;
  /** sha256 (hex) and byte size of the SQLite file itself, as it will sit on a replica */
  sha256: string;
  size: number;
  /** PRAGMA user_version of the file (docs/snapshot-schema) */
  schema_version: number;
  chain_id: string;
  snapshot_id: string;
  created_at: string;
  /** the data file, relative to the manifest's URL: `<height>-<sha256 prefix>.sqlite[.gz]` */
  file: string;
  /** how `file` is stored: `gzip` = gzip of the SQLite file, `identity` = the file as is */
  encoding: 'gzip' | 'identity';
  /** sha256 and size of `file` as transferred (equal to sha256/size for `identity`) */
  file_sha256: string;
  file_size: number;
}

export const MANIFEST_NAME = 'manifest.json';
/** Content-addressed data file names; `publish --keep` deletes only names of this shape. */
export const DATA_FILE_RE = /^(\d+)-([0-9a-f]{16})\.sqlite(\.gz)?$/;

const HEX64 = /^[0-9a-f]{64}$/;

/** Parses and checks a manifest; the error names the field and the source (URL or path). */
export function parseManifest(text: string, source: string): Manifest {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(`manifest ${source} is not JSON: ${(e as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`manifest ${source} is not a JSON object`);
  const o = v as Record<string, unknown>;
  const bad = (field: string, want: string): Error => new Error(`manifest ${source}: ${field} must be ${want}, got ${JSON.stringify(o[field])}`);
  if (o.format !== 1) throw bad('format', '1');
  for (const f of ['height', 'size', 'schema_version', 'file_size'] as const) {
    if (!Number.isSafeInteger(o[f]) || (o[f] as number) < 0) throw bad(f, 'a whole number ≥ 0');
  }
  for (const f of ['sha256', 'file_sha256'] as const) if (typeof o[f] !== 'string' || !HEX64.test(o[f] as string)) throw bad(f, '64 lowercase hex digits');
  for (const f of ['chain_id', 'snapshot_id', 'created_at'] as const) if (typeof o[f] !== 'string') throw bad(f, 'a string');
  if (typeof o.file !== 'string' || !DATA_FILE_RE.test(o.file)) throw bad('file', 'a name like <height>-<sha256 prefix>.sqlite[.gz]');
  if (o.encoding !== 'gzip' && o.encoding !== 'identity') throw bad('encoding', '"gzip" or "identity"');
  if ((o.encoding === 'gzip') !== o.file.endsWith('.gz')) throw bad('file', `a name ending in .gz exactly when encoding is gzip`);
  return o as unknown as Manifest;
}
