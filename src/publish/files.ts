import { createHash } from 'node:crypto';
import { closeSync, createReadStream, fsyncSync, openSync } from 'node:fs';

/** sha256 (hex) and byte count of a file, streamed. */
export async function hashFile(file: string): Promise<{ sha256: string; size: number }> {
  const h = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) {
    h.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { sha256: h.digest('hex'), size };
}

/** Flushes a file (or a directory entry list) to disk, so a rename after it is durable. */
export function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } catch {
    /* some filesystems refuse fsync on a directory */
  } finally {
    closeSync(fd);
  }
}
