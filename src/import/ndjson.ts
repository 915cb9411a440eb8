import { createReadStream, existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createGunzip } from 'node:zlib';
import { DumpError } from './dump-error';

export interface NdjsonLine {
  /** file name as shown in errors, e.g. `txs.ndjson.gz` */
  file: string;
  line: number;
  text: string;
}

/** Finds `NAME.ndjson` or `NAME.ndjson.gz` in `dir`; both present is ambiguous and refused. */
export function findDumpFile(dir: string, name: string): string | undefined {
  const plain = `${name}.ndjson`;
  const gz = `${name}.ndjson.gz`;
  const hasPlain = existsSync(join(dir, plain));
  const hasGz = existsSync(join(dir, gz));
  if (hasPlain && hasGz) throw new DumpError(plain, 0, '(file)', `both ${plain} and ${gz} exist; keep one`);
  return hasPlain ? plain : hasGz ? gz : undefined;
}

/** Streams the non-blank lines of one dump file with their 1-based line numbers. */
export async function* readNdjson(dir: string, file: string): AsyncGenerator<NdjsonLine> {
  const raw = createReadStream(join(dir, file));
  const input = file.endsWith('.gz') ? raw.pipe(createGunzip()) : raw;
  const failed: { error?: Error } = {};
  raw.on('error', (e) => { failed.error = e; });
  input.on('error', (e: Error) => { failed.error = e; });
  const rl = createInterface({ input, crlfDelay: Infinity });
  let line = 0;
  try {
    for await (const text of rl) {
      line++;
      if (text.trim() === '') continue;
      yield { file, line, text };
    }
  } catch (e) {
    throw new DumpError(file, line + 1, '(file)', `cannot read: ${(e as Error).message}`);
  }
  if (failed.error) throw new DumpError(file, line + 1, '(file)', `cannot read: ${failed.error.message}`);
}
