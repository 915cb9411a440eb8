import { fsReason } from './lib/paths';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/**
 * Files that ship with the program (sql/, openapi.yaml, demo snapshots, Swagger UI). Run from
 * the repository they are read from disk; inside the single executable (`make binary`) they are
 * SEA assets under the same relative names.
 */

interface SeaModule {
  isSea(): boolean;
  getAsset(key: string, encoding?: string): string | ArrayBuffer;
}

function sea(): SeaModule | undefined {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- node:sea exists only on Node ≥ 20.12 builds with SEA support
    const mod = require('node:sea') as SeaModule;
    return mod.isSea() ? mod : undefined;
  } catch {
    return undefined;
  }
}

/** Repository root when run from source (compiled files live in build/src/). */
export const ROOT = resolve(__dirname, '..', '..');

export function isSingleExecutable(): boolean {
  return sea() !== undefined;
}

export function readTextAsset(relPath: string): string {
  const s = sea();
  if (s) return s.getAsset(relPath, 'utf8') as string;
  return readFileSync(join(ROOT, relPath), 'utf8');
}

export function readBinaryAsset(relPath: string): Buffer {
  const s = sea();
  if (s) return Buffer.from(s.getAsset(relPath) as ArrayBuffer);
  return readFileSync(onDisk(relPath));
}

/**
 * `node_modules/PKG/FILE` is the dependency's file wherever Node resolves it: installed as a
 * package (docs/ci.md) our dependencies sit beside us, not under ROOT/node_modules.
 */
function onDisk(relPath: string): string {
  const m = /^node_modules\/((?:@[^/]+\/)?[^/]+)\/(.+)$/.exec(relPath);
  if (!m) return join(ROOT, relPath);
  try {
    return join(dirname(require.resolve(`${m[1]}/package.json`, { paths: [ROOT] })), m[2]);
  } catch {
    return join(ROOT, relPath);
  }
}

/** A private cache directory for files the single executable must put on disk. */
function cacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || (homedir() ? join(homedir(), '.cache') : tmpdir());
  return join(base, 'indexer-api');
}

/**
 * Writes `bytes` to `<cache>/<name-prefix>-<sha256>` unless already there: content-addressed,
 * written to a unique temp name and renamed, so concurrent starts never see a partial file.
 */
export function materialize(name: string, bytes: Buffer): string {
  const dir = cacheDir();
  const digest = createHash('sha256').update(bytes).digest('hex').slice(0, 32);
  const file = join(dir, `${digest}-${name}`);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!existsSync(file)) {
      const tmp = `${file}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
      writeFileSync(tmp, bytes, { mode: 0o600 });
      renameSync(tmp, file);
    }
  } catch (e) {
    // A read-only root (a container without its cache volume) makes Node's recursive mkdir say
    // only "ENOENT … mkdir": name the directory, why it is written and how to choose another.
    const err = e as NodeJS.ErrnoException;
    throw new Error(
      `cannot write ${name} into the cache directory ${dir} (${fsReason(err)}): ` +
        'the single executable unpacks it there before use; set XDG_CACHE_HOME to a writable directory (in the container image: a volume at /cache)',
    );
  }
  return file;
}
