import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/**
 * Files that ship with the program (sql/, openapi.yaml, demo snapshots, Swagger UI). Run from
 * the repository they are read from disk; inside the single executable (`make binary`) they are
 * SEA assets under the same relative names.
 */

interface SeaModule { isSea(): boolean; getAsset(key: string, encoding?: string): string | ArrayBuffer }

function sea(): SeaModule | undefined {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
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
