import { createWriteStream, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';

/** Dump files in the order docs/dump-format.md lists them. */
const DUMP_FILES = [
  'meta',
  'validators',
  'blocks',
  'txs',
  'collections',
  'tokens',
  'token_txs',
  'richlist',
  'denom_contracts',
  'evm_txs',
  'evm_internal_txs',
] as const;
export type DumpFile = (typeof DUMP_FILES)[number];

class OutputDirError extends Error {}

/** Records are encoded straight into chunks of this size, handed to the stream when full. */
const CHUNK = 1 << 20;

export class NdjsonFile {
  records = 0;
  bytes = 0;
  private chunk = Buffer.allocUnsafe(CHUNK);
  private used = 0;
  private full: Buffer[] = [];
  private readonly done: Promise<void>;
  private readonly head: Writable;

  constructor(
    readonly path: string,
    gzip: boolean,
  ) {
    const file = createWriteStream(path);
    if (gzip) {
      const gz = createGzip();
      this.head = gz;
      this.done = pipeline(gz, file);
    } else {
      this.head = file;
      this.done = new Promise((resolve, reject) => {
        file.on('finish', () => resolve());
        file.on('error', reject);
      });
    }
    // Errors surface through `done` or `drain`; this keeps an early one from being unhandled.
    this.done.catch(() => undefined);
  }

  /** Appends one record; `line` is already-serialized JSON without the newline. */
  write(line: string): void {
    this.records++;
    // UTF-8 needs at most 3 bytes per UTF-16 unit; +1 for the newline.
    if (line.length * 3 + 1 > CHUNK - this.used) {
      this.retire();
      if (line.length * 3 + 1 > CHUNK) {
        this.full.push(Buffer.from(line + '\n', 'utf8'));
        return;
      }
    }
    this.used += this.chunk.write(line, this.used, 'utf8');
    this.chunk[this.used++] = 0x0a;
  }

  writeObject(record: object): void {
    this.write(JSON.stringify(record));
  }

  private retire(): void {
    if (this.used === 0) return;
    this.full.push(this.chunk.subarray(0, this.used));
    this.chunk = Buffer.allocUnsafe(CHUNK);
    this.used = 0;
  }

  /** Hands full chunks to the stream (and the partial one with `force`), honouring backpressure. */
  async flush(force = false): Promise<void> {
    if (force) this.retire();
    const ready = this.full;
    if (ready.length === 0) return;
    this.full = [];
    for (const b of ready) {
      this.bytes += b.length;
      if (!this.head.write(b)) await once(this.head, 'drain');
    }
  }

  async close(): Promise<void> {
    await this.flush(true);
    this.head.end();
    await this.done;
  }
}

/** Opens dump files lazily, so a chain without NFTs or a rich list gets no empty files. */
export class DumpWriter {
  private readonly files = new Map<DumpFile, NdjsonFile>();

  constructor(
    readonly dir: string,
    readonly gzip: boolean,
  ) {}

  file(name: DumpFile): NdjsonFile {
    let f = this.files.get(name);
    if (!f) {
      f = new NdjsonFile(join(this.dir, `${name}.ndjson${this.gzip ? '.gz' : ''}`), this.gzip);
      this.files.set(name, f);
    }
    return f;
  }

  async flush(): Promise<void> {
    for (const f of this.files.values()) await f.flush();
  }

  /** Closes every file; returns per-file record and (uncompressed) byte counts in dump order. */
  async close(): Promise<{ name: DumpFile; path: string; records: number; bytes: number }[]> {
    const stats = [];
    for (const name of DUMP_FILES) {
      const f = this.files.get(name);
      if (!f) continue;
      await f.close();
      stats.push({ name, path: f.path, records: f.records, bytes: f.bytes });
    }
    return stats;
  }
}

/**
 * Creates `dir`, refusing a non-empty one unless `force`; with `force` only the dump's own files
 * (plain and gzip, since the importer rejects having both) are removed, nothing else.
 */
export function prepareOutputDir(dir: string, force: boolean): void {
  let entries: string[] = [];
  try {
    entries = readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (entries.length > 0 && !force) {
    throw new OutputDirError(`output directory ${dir} is not empty (use --force to overwrite)`);
  }
  mkdirSync(dir, { recursive: true });
  for (const name of DUMP_FILES) {
    for (const suffix of ['.ndjson', '.ndjson.gz']) rmSync(join(dir, name + suffix), { force: true });
  }
}
