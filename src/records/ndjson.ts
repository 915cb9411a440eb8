import { isAscii } from 'node:buffer';
import { createReadStream, existsSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline, Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { DumpError } from './dump-error';

export interface NdjsonLine {
  /** file name as shown in errors, e.g. `txs.ndjson.gz` */
  file: string;
  line: number;
  text: string;
}

/**
 * Consecutive whole lines of one dump file as raw bytes, so they can be handed to a parser
 * thread without decoding them first. Each line ends in `\n` except possibly the file's last.
 */
export interface LineBatch {
  file: string;
  /** 1-based number of the first line in `bytes` */
  firstLine: number;
  bytes: Uint8Array;
}

/** docs/dump-format.md: a longer line is refused, so a corrupt file cannot exhaust memory. */
const MAX_LINE_BYTES = 64 * 1024 * 1024;
const READ_CHUNK = 1024 * 1024;
/** Batches stop at whichever limit comes first (≈500 4-KB txs, so the buffers in flight stay ≈25 MB). */
const BATCH_LINES = 1000;
export const BATCH_BYTES = 2 * 1024 * 1024;

/** Finds `NAME.ndjson` or `NAME.ndjson.gz` in `dir`; both present is ambiguous and refused. */
export function findDumpFile(dir: string, name: string): string | undefined {
  const plain = `${name}.ndjson`;
  const gz = `${name}.ndjson.gz`;
  const hasPlain = existsSync(join(dir, plain));
  const hasGz = existsSync(join(dir, gz));
  if (hasPlain && hasGz) throw new DumpError(plain, 0, '(file)', `both ${plain} and ${gz} exist; keep one`);
  return hasPlain ? plain : hasGz ? gz : undefined;
}

/**
 * Reads one dump file (gunzipping `.gz`) as batches of whole lines, split on `\n` only. Each
 * batch is copied into a buffer from `alloc` (by default a fresh one), which the consumer may
 * keep or transfer to another thread.
 */
export async function* readLineBatches(dir: string, file: string, alloc: (n: number) => Buffer = Buffer.allocUnsafeSlow): AsyncGenerator<LineBatch> {
  const raw = createReadStream(join(dir, file), { highWaterMark: READ_CHUNK });
  // pipeline: a read error reaches the loop below through gunzip, and an early stop closes the file.
  const input: Readable = file.endsWith('.gz') ? pipeline(raw, createGunzip({ chunkSize: READ_CHUNK }), () => undefined) : raw;
  // Bytes read but not yet emitted, from earlier chunks: whole lines, then maybe a partial one.
  let pieces: Uint8Array[] = [];
  let piecesBytes = 0;
  let lines = 0; // line breaks since the last batch
  let partial = 0; // bytes since the last line break
  let nextLine = 1; // number of the first line of the next batch
  const take = (tail?: Uint8Array): LineBatch => {
    const out = alloc(piecesBytes + (tail?.length ?? 0));
    let at = 0;
    for (const p of tail ? [...pieces, tail] : pieces) {
      out.set(p, at);
      at += p.length;
    }
    const batch = { file, firstLine: nextLine, bytes: out };
    nextLine += lines;
    pieces = [];
    piecesBytes = 0;
    lines = 0;
    return batch;
  };
  try {
    for await (const chunk of input as AsyncIterable<Buffer>) {
      let from = 0;
      for (let nl = chunk.indexOf(0x0a); nl >= 0; nl = chunk.indexOf(0x0a, nl + 1)) {
        lines++;
        if (lines >= BATCH_LINES || piecesBytes + nl + 1 - from >= BATCH_BYTES) {
          yield take(chunk.subarray(from, nl + 1));
          from = nl + 1;
        }
      }
      const last = chunk.lastIndexOf(0x0a);
      partial = last < 0 ? partial + chunk.length : chunk.length - last - 1;
      if (partial > MAX_LINE_BYTES) throw new DumpError(file, nextLine + lines, '(line)', `longer than ${MAX_LINE_BYTES / 1024 / 1024} MiB`);
      if (from < chunk.length) {
        pieces.push(chunk.subarray(from));
        piecesBytes += chunk.length - from;
      }
    }
  } catch (e) {
    if (e instanceof DumpError) throw e;
    throw new DumpError(file, nextLine + lines, '(file)', `cannot read: ${(e as Error).message}`);
  }
  if (partial > 0) lines++; // a last line without a line break
  if (piecesBytes > 0) yield take();
}

/**
 * Calls `fn` with the 1-based number and byte range (without the line break) of every
 * non-blank line of `batch`. Stops early when `fn` returns false.
 */
export function eachLine(batch: LineBatch, fn: (line: number, start: number, end: number) => boolean | void): void {
  const b = asBuffer(batch.bytes); // Buffer's indexOf is memchr
  let line = batch.firstLine;
  for (let start = 0; start < b.length; line++) {
    let next = b.indexOf(0x0a, start);
    if (next < 0) next = b.length;
    let end = next;
    if (end > start && b[end - 1] === 0x0d) end--;
    // A record starts with '{'; anything else may be a blank line (trim() decides, as for text).
    if (end > start && (b[start] === 0x7b || lineText(b, start, end).trim() !== '')) {
      if (fn(line, start, end) === false) return;
    }
    start = next + 1;
  }
}

/** `bytes` as a Buffer (a line batch arrives from another thread as a plain Uint8Array). */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}

/** The text of bytes [start, end): ASCII (the common case) decodes faster as Latin-1. */
export function lineText(b: Buffer, start: number, end: number): string {
  return b.toString(isAscii(b.subarray(start, end)) ? 'latin1' : 'utf8', start, end);
}

/** Streams the non-blank lines of one dump file with their 1-based line numbers. */
export async function* readNdjson(dir: string, file: string): AsyncGenerator<NdjsonLine> {
  for await (const batch of readLineBatches(dir, file)) {
    const lines: NdjsonLine[] = [];
    const b = asBuffer(batch.bytes);
    eachLine(batch, (line, start, end) => {
      lines.push({ file, line, text: lineText(b, start, end) });
    });
    yield* lines;
  }
}
