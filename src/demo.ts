import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { isSingleExecutable, readBinaryAsset, ROOT } from './assets';
import type { VmType } from './snapshot/open';

export const DEMO_VMS: readonly VmType[] = ['move', 'wasm', 'evm'];

export function demoAsset(vm: VmType): string {
  return `fixtures/demo/${vm}.sqlite`;
}

/** A private cache directory for files the single executable must put on disk. */
export function cacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || (homedir() ? join(homedir(), '.cache') : tmpdir());
  return join(base, 'indexer-api');
}

/**
 * Writes `bytes` to `<cache>/<name-prefix>-<sha256>` unless already there: content-addressed,
 * written to a unique temp name and renamed, so concurrent starts never see a partial file.
 */
export function materialize(name: string, bytes: Buffer): string {
  const dir = cacheDir();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const digest = createHash('sha256').update(bytes).digest('hex').slice(0, 32);
  const file = join(dir, `${digest}-${name}`);
  if (!existsSync(file)) {
    const tmp = `${file}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
    writeFileSync(tmp, bytes, { mode: 0o600 });
    renameSync(tmp, file);
  }
  return file;
}

/** Path of the bundled demo snapshot for `vm`, or an error telling how to build it. */
export function demoSnapshotPath(vm: VmType): string {
  if (isSingleExecutable()) return materialize(`demo-${vm}.sqlite`, readBinaryAsset(demoAsset(vm)));
  const file = join(ROOT, demoAsset(vm));
  if (!existsSync(file)) throw new Error(`the demo snapshot ${demoAsset(vm)} is not built yet: run \`make fixtures\` (or pass --db FILE)`);
  return file;
}
