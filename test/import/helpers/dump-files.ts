import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The non-empty lines of DIR/NAME.ndjson ([] when the file is absent). */
export function lines(dir: string, name: string): string[] {
  const f = join(dir, `${name}.ndjson`);
  return existsSync(f) ? readFileSync(f, 'utf8').split('\n').filter((l) => l.trim() !== '') : [];
}

/** Writes DIR/NAME.ndjson, one row per line. */
export function write(dir: string, name: string, rows: string[]): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${name}.ndjson`), rows.map((r) => r + '\n').join(''));
}
