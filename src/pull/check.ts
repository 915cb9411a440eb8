import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { isSingleExecutable, ROOT } from '../assets';

/** What the check of a downloaded file found in it. */
export interface CheckedFile {
  height: number;
  chainId: string;
}

/**
 * The check every file passes before `serve` serves it (src/snapshot/verify.ts checkSnapshot:
 * opened as serve opens it, then PRAGMA quick_check of every page), on a downloaded file, in a
 * child process so the serving process's event loop is not blocked while it reads the whole
 * file: the child is this same program, `indexer-api check --json FILE`. Resolves with the
 * file's height and chain id; rejects with the check's one line.
 */
export function quickCheckFile(file: string, signal?: AbortSignal): Promise<CheckedFile> {
  const self = isSingleExecutable() ? [] : [join(ROOT, 'bin', 'indexer-api')];
  // The child must not inherit INDEXER_API_* options meant for the serving process.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('INDEXER_API_')));
  const args = [...self, 'check', '--json', file];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'], signal });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      let r: { ok?: unknown; error?: unknown; height?: unknown; chain_id?: unknown } | undefined;
      try {
        r = JSON.parse(out.trim().split('\n').pop() ?? '') as typeof r;
      } catch {
        r = undefined;
      }
      if (r?.ok === false) {
        reject(new Error(`check failed: ${String(r.error)}`));
        return;
      }
      if (code !== 0 || r?.ok !== true || typeof r.height !== 'number' || typeof r.chain_id !== 'string') {
        reject(new Error(`check failed: ${(err.trim() || out.trim()).split('\n').pop() || `exit ${code}`}`));
        return;
      }
      resolve({ height: r.height, chainId: r.chain_id });
    });
  });
}
