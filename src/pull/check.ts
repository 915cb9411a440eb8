import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { isSingleExecutable, ROOT } from '../assets';

/**
 * PRAGMA quick_check of a downloaded file, in a child process so the serving process's event
 * loop is not blocked while it reads the whole file: the child is this same program,
 * `serve --db FILE --verify --get /status` (opens the file exactly as serve will, runs
 * quick_check, answers /status). Resolves with the file's /status height.
 */
export function quickCheckFile(file: string, signal?: AbortSignal): Promise<number> {
  const self = isSingleExecutable() ? [] : [join(ROOT, 'bin', 'indexer-api')];
  // The child must not inherit INDEXER_API_PULL & co. and start pulling itself.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('INDEXER_API_')));
  const args = [...self, 'serve', '--db', file, '--verify', '--get', '/status', '--workers', '1', '--no-watch', '--log-level', 'error'];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'], signal });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { err += d.toString(); });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) { reject(new Error(`quick check failed: ${(err.trim() || out.trim()).split('\n').pop() ?? `exit ${code}`}`)); return; }
      try {
        const height = (JSON.parse(out) as { height?: unknown }).height;
        if (typeof height !== 'number') throw new Error('no height');
        resolve(height);
      } catch (e) {
        reject(new Error(`quick check: unexpected /status from the checked file: ${out.slice(0, 200)}`));
      }
    });
  });
}
