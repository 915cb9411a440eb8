import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
  createReadStream,
  createWriteStream,
} from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { openSnapshotFile } from '../snapshot/open';
import { compactCopy } from '../snapshot/store';
import { fsyncPath, hashFile } from './files';
import { DATA_FILE_RE, Manifest, MANIFEST_NAME, parseManifest } from './manifest';

/**
 * `publish`: a consistent copy of a snapshot into a directory any static host can serve, under
 * a content-addressed name, then DIR/manifest.json replaced atomically (docs/scaling.md).
 * Replicas (`serve --pull`) only ever read a data file the manifest names, and a data file is
 * complete before the manifest names it, so a replica never sees a half-written file.
 *
 * A directory is one chain's: publishing a snapshot of another chain over a manifest that names
 * one is refused (its replicas would switch chains — they refuse it too), unless `newChain`
 * says to start the directory over. And it only moves forward: a snapshot of the same chain at a
 * lower height than the manifest's is refused (replicas already at the manifest's height would
 * skip it with a warning, while a new replica would start at the older one), unless `allowOlder`
 * says to roll the directory back.
 */

export type Compression = 'auto' | 'gzip' | 'none';

export interface PublishOptions {
  db: string;
  to: string;
  /** data files kept in DIR, the current one included (≥ 1: checked by the command's option table) */
  keep: number;
  /** auto: gzip when it saves at least AUTO_GZIP_MIN_SAVING of the bytes */
  compress: Compression;
  /** one line per phase (copy, hash, compress, manifest) */
  onPhase?: (phase: string) => void;
  /** publish --new-chain: start DIR over with the chain of `db`, whatever its manifest names */
  newChain?: boolean;
  /** publish --allow-older: publish `db` even when the manifest names a greater height of its chain (a rollback) */
  allowOlder?: boolean;
}

/**
 * Refuses to publish `db` (chain `chainId` at `height`) into `dir` when its manifest names another
 * chain (or is no manifest), or a greater height of the same chain (unless `allowOlder`); with
 * `newChain` the directory starts over, whatever its manifest names.
 */
function checkManifestBefore(dir: string, db: string, chainId: string, height: number, o: Pick<PublishOptions, 'newChain' | 'allowOlder'>): void {
  // --new-chain starts the directory over, whatever it held
  if (o.newChain) return;
  const path = join(dir, MANIFEST_NAME);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return;
  } // a new directory
  const restart =
    `; to start ${dir} over with chain ${JSON.stringify(chainId)}, pass --new-chain (its replicas then ` +
    `refuse it until restarted with --expect-chain-id ${chainId})`;
  let m: Manifest;
  try {
    m = parseManifest(text, path);
  } catch (e) {
    throw new Error(`${(e as Error).message}: not publishing over it${restart}`);
  }
  if (m.chain_id !== chainId) {
    throw new Error(
      `${path} names chain ${JSON.stringify(m.chain_id)} (height ${m.height}), ${db} is chain ${JSON.stringify(chainId)}: ` +
        `not publishing another chain into a directory whose replicas serve ${JSON.stringify(m.chain_id)}${restart}`,
    );
  }
  if (m.height > height && !o.allowOlder) {
    throw new Error(
      `${path} names height ${m.height} of chain ${JSON.stringify(chainId)}, ${db} is at height ${height}: not moving the manifest back ` +
        `(replicas at ${m.height} would skip it, a new replica would start at ${height}); to roll ${dir} back to height ${height}, pass --allow-older`,
    );
  }
}

export interface PublishResult {
  manifest: Manifest;
  /** the data file was already in DIR (same content published before) */
  reused: boolean;
  /** data files deleted by --keep */
  removed: string[];
}

/** gzip must save a tenth of the bytes to pay for the decompression on every replica. */
const AUTO_GZIP_MIN_SAVING = 0.1;

export async function publishSnapshot(o: PublishOptions): Promise<PublishResult> {
  // Refuses (with the open check's one line) anything `serve` would refuse.
  const snapshot = openSnapshotFile(o.db);
  const meta = snapshot.meta;
  // one openSnapshotFile reads (a version-2 file is published as it is: replicas read it too)
  const schemaVersion = meta.schemaVersion;
  snapshot.close();
  checkManifestBefore(o.to, o.db, meta.chainId, meta.height, o);
  mkdirSync(o.to, { recursive: true });
  const tmp = join(o.to, `.publish-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    o.onPhase?.(`copying ${o.db} (VACUUM INTO)`);
    try {
      compactCopy(o.db, `${tmp}.sqlite`);
    } catch (e) {
      throw new Error(`cannot copy ${o.db} (nothing published): ${(e as Error).message}`);
    }
    o.onPhase?.('hashing the copy');
    const plain = await hashFile(`${tmp}.sqlite`);
    const base = `${meta.height}-${plain.sha256.slice(0, 16)}.sqlite`;
    let file = base;
    let encoding: Manifest['encoding'] = 'identity';
    let stored = plain;
    const existing = [`${base}.gz`, base].find((n) => existsSync(join(o.to, n)));
    let reused = false;
    if (existing !== undefined) {
      // Same content already published: keep that file (its URL may be cached downstream).
      reused = true;
      file = existing;
      encoding = existing.endsWith('.gz') ? 'gzip' : 'identity';
      stored = encoding === 'gzip' ? await hashFile(join(o.to, file)) : plain;
      utimesSync(join(o.to, file), new Date(), new Date());
    } else {
      let source = `${tmp}.sqlite`;
      if (o.compress !== 'none') {
        o.onPhase?.('compressing (gzip)');
        await pipeline(createReadStream(source), createGzip({ level: 6 }), createWriteStream(`${tmp}.gz`));
        const gz = await hashFile(`${tmp}.gz`);
        if (o.compress === 'gzip' || gz.size <= plain.size * (1 - AUTO_GZIP_MIN_SAVING)) {
          file = `${base}.gz`;
          encoding = 'gzip';
          stored = gz;
          source = `${tmp}.gz`;
        }
      }
      fsyncPath(source);
      renameSync(source, join(o.to, file));
    }
    const manifest: Manifest = {
      format: 1,
      height: meta.height,
      sha256: plain.sha256,
      size: plain.size,
      schema_version: schemaVersion,
      chain_id: meta.chainId,
      snapshot_id: meta.snapshotId,
      created_at: new Date().toISOString(),
      file,
      encoding,
      file_sha256: stored.sha256,
      file_size: stored.size,
    };
    o.onPhase?.(`writing ${MANIFEST_NAME}`);
    writeFileSync(`${tmp}.json`, `${JSON.stringify(manifest, null, 2)}\n`);
    fsyncPath(`${tmp}.json`);
    renameSync(`${tmp}.json`, join(o.to, MANIFEST_NAME));
    fsyncPath(o.to);
    return { manifest, reused, removed: prune(o.to, o.keep, file) };
  } finally {
    for (const ext of ['.sqlite', '.gz', '.json']) rmSync(`${tmp}${ext}`, { force: true });
  }
}

/** Deletes all but the `keep` newest data files; never the current one. */
function prune(dir: string, keep: number, current: string): string[] {
  const files = readdirSync(dir)
    .filter((n) => DATA_FILE_RE.test(n) && n !== current)
    .map((n) => ({ n, t: statSync(join(dir, n)).mtimeMs }))
    .sort((a, b) => b.t - a.t);
  const removed = files.slice(keep - 1).map((f) => f.n);
  for (const n of removed) rmSync(join(dir, n), { force: true });
  return removed;
}
