import { constants, crc32, deflateRawSync, inflateRawSync } from 'node:zlib';

/**
 * Packed rows (docs/api-contract.md#stored-wire-format, wire format 2): every stored JSON object
 * is kept as an independent raw-deflate stream, so that a gzip answer is assembled from the
 * stored bytes and a few bytes of glue — no byte is compressed at request time.
 *
 * A packed row is `crc32 (u32 LE) · length (u32 LE) · shift (u32 LE) · deflate`, where crc32
 * and length are those of the JSON text (UTF-8), shift is x^(8·length) modulo the CRC-32
 * polynomial (what combining the row's CRC into a body's costs most: stored, a combination is
 * one multiplication, ≈0.25 µs, instead of ≈1 µs), and `deflate` is that text compressed on its own (no preset
 * dictionary, no reference outside itself) at PACK_LEVEL and ended by a sync flush: it ends on
 * a byte boundary with an empty stored block (`00 00 FF FF`) and has no final block, so rows and
 * stored blocks of glue concatenate into one valid deflate stream. The gzip member around it
 * needs the CRC-32 of the whole body, which is combined from the rows' CRCs arithmetically
 * (crc32Combine) — the rows are never inflated for a gzip client.
 */

/**
 * zlib level of stored rows, chosen by measurement (bench/README.md "Compressed rows"): on the
 * 200k-tx Wasm chain level 2 packs tx rows 3.40× (level 6: 3.59×, 9: 3.59×, 1: 3.39×) in about
 * half level 6's time per row — the import compresses every row, and the size goal holds either way.
 */
const PACK_LEVEL = 2;

const HEADER = 12;
/** deflate's empty final stored block: ends the stream of rows and glue */
const FINAL_BLOCK = Buffer.from([0x01, 0x00, 0x00, 0xff, 0xff]);
/** gzip member header (RFC 1952): deflate, no flags, mtime 0, no extra flags, OS unknown */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff]);
const SYNC_FLUSH = { level: PACK_LEVEL, finishFlush: constants.Z_SYNC_FLUSH };
const INFLATE = { finishFlush: constants.Z_SYNC_FLUSH };

/** The packed row of a JSON text. Deterministic for one zlib build (the one Node ships). */
export function packRow(json: string | Uint8Array): Buffer {
  const bytes = typeof json === 'string' ? Buffer.from(json, 'utf8') : json;
  const deflated = deflateRawSync(bytes, SYNC_FLUSH);
  const row = Buffer.allocUnsafe(HEADER + deflated.length);
  row.writeUInt32LE(crc32(bytes), 0);
  row.writeUInt32LE(bytes.length, 4);
  row.writeUInt32LE(lengthShift(bytes.length), 8);
  deflated.copy(row, HEADER);
  return row;
}

/**
 * Whether a stored row is packed (wire format 2) rather than the JSON text itself (1): a packed
 * row ends with the sync flush's `FF`, a byte that UTF-8 text never holds.
 */
export function isPackedRow(row: Uint8Array): boolean {
  return row.length > HEADER && row[row.length - 1] === 0xff;
}

/** The JSON bytes of a packed row (one inflate). */
export function unpackRow(row: Uint8Array): Buffer {
  const b = Buffer.isBuffer(row) ? row : Buffer.from(row.buffer, row.byteOffset, row.length);
  const json = inflateRawSync(b.subarray(HEADER), { ...INFLATE, chunkSize: Math.max(64, b.readUInt32LE(4) + 8) });
  if (json.length !== b.readUInt32LE(4)) throw new Error(`packed row: inflated to ${json.length} bytes, its header says ${b.readUInt32LE(4)}`);
  return json;
}

/** The JSON text of a packed row. */
function unpackText(row: Uint8Array): string {
  return unpackRow(row).toString('utf8');
}

/** The JSON text of a stored column of either wire format: packed (2) or the text itself (1). */
export function readPackedRow(stored: Uint8Array | string): string {
  if (typeof stored === 'string') return stored;
  return isPackedRow(stored) ? unpackText(stored) : Buffer.from(stored.buffer, stored.byteOffset, stored.length).toString('utf8');
}

// --- CRC-32 combination (the method of zlib 1.2.12+ crc32_combine: multiplication modulo the
// CRC polynomial, reflected; x^(8·len) from a table of x^(2^k)) ---

const POLY = 0xedb88320;

/** a·b modulo the CRC-32 polynomial (both reflected; a ≠ 0). int32 arithmetic throughout. */
function multModP(a: number, b: number): number {
  let p = 0;
  for (let i = 0; i < 32; i++) {
    if (((a << i) & 0x80000000) !== 0) {
      p ^= b;
      if (a << (i + 1) === 0) break;
    }
    b = (b & 1) !== 0 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

/** SHIFT[j][v] = x^(8·v·256^j) modulo the polynomial: x^(8·n) in at most four multiplications */
const SHIFT: Uint32Array[] = (() => {
  const x2n = new Uint32Array(40); // x2n[k] = x^(2^k)
  x2n[0] = 0x40000000; // x^1
  for (let k = 1; k < 40; k++) x2n[k] = multModP(x2n[k - 1], x2n[k - 1]);
  return [0, 1, 2, 3].map((j) => {
    const t = new Uint32Array(256);
    for (let v = 0; v < 256; v++) {
      let p = 0x80000000; // x^0
      for (let bit = 0; bit < 8; bit++) if ((v & (1 << bit)) !== 0) p = multModP(x2n[3 + 8 * j + bit], p);
      t[v] = p;
    }
    return t;
  });
})();

/** x^(8·n) modulo the polynomial: what a CRC is multiplied by when n bytes follow it. */
export function lengthShift(n: number): number {
  let p = SHIFT[0][n & 255];
  if (n >>> 8 !== 0) p = multModP(SHIFT[1][(n >>> 8) & 255], p);
  if (n >>> 16 !== 0) p = multModP(SHIFT[2][(n >>> 16) & 255], p);
  if (n >>> 24 !== 0) p = multModP(SHIFT[3][n >>> 24], p);
  return p;
}

/** CRC-32 of A·B from crc(A), crc(B) and lengthShift(B's length) (zlib's crc32_combine). */
export function crc32Combine(crcA: number, crcB: number, shiftB: number): number {
  return (multModP(shiftB, crcA) ^ crcB) >>> 0;
}

// --- assembling a body ---

/**
 * A JSON answer as a deflate stream under construction: glue text (stored blocks) and packed
 * rows (their deflate bytes as stored), in order, with the CRC-32 and length of the JSON they
 * stand for. `gzip()` wraps it in a gzip member; `identity()` inflates it, once, for clients
 * that do not accept gzip.
 */
export class DeflateBody {
  private readonly parts: Buffer[] = [];
  private crc = 0;
  /** bytes of JSON the body stands for */
  length = 0;
  /** the JSON text itself, when the body holds no packed row (glue only): no inflate needed */
  private plain: string | undefined = '';

  /** Appends JSON text as it is (a stored block; glue between rows is a few bytes). */
  text(s: string): this {
    if (s === '') return this;
    this.stored(Buffer.from(s, 'utf8'));
    if (this.plain !== undefined) this.plain += s;
    return this;
  }

  /** Appends JSON text given as UTF-8 bytes (e.g. a row rendered from columns), as it is. */
  bytes(b: Buffer): this {
    if (b.length === 0) return this;
    this.stored(b);
    if (this.plain !== undefined) this.plain += b.toString('utf8');
    return this;
  }

  private stored(bytes: Buffer): void {
    for (let at = 0; at < bytes.length; at += 0xffff) {
      const chunk = bytes.subarray(at, at + 0xffff);
      const head = Buffer.allocUnsafe(5);
      head[0] = 0x00; // not final, stored; the stream is byte-aligned (rows end with a sync flush)
      head.writeUInt16LE(chunk.length, 1);
      head.writeUInt16LE(~chunk.length & 0xffff, 3);
      this.parts.push(head, chunk);
    }
    this.crc = crc32(bytes, this.crc);
    this.length += bytes.length;
  }

  /** Appends a packed row (its JSON, compressed as stored). */
  row(packed: Buffer): this {
    const len = packed.readUInt32LE(4);
    this.crc = crc32Combine(this.crc, packed.readUInt32LE(0), packed.readUInt32LE(8));
    this.length += len;
    this.parts.push(packed.subarray(HEADER));
    this.plain = undefined;
    return this;
  }

  /** The gzip member (RFC 1952) of the body. */
  gzip(): Buffer {
    const trailer = Buffer.allocUnsafe(8);
    trailer.writeUInt32LE(this.crc >>> 0, 0);
    trailer.writeUInt32LE(this.length >>> 0, 4);
    return Buffer.concat([GZIP_HEADER, ...this.parts, FINAL_BLOCK, trailer]);
  }

  /** The JSON bytes: the whole stream inflated in one call (or the glue itself when there is no row). */
  identity(): Buffer {
    if (this.plain !== undefined) return Buffer.from(this.plain, 'utf8');
    // one output buffer of the known size: inflating into zlib's default 16 KiB chunks and joining
    // them cost a third more on a 100-row tx page (bench/README.md "Compressed rows")
    return inflateRawSync(Buffer.concat([...this.parts, FINAL_BLOCK]), { chunkSize: Math.max(64, this.length + 8) });
  }
}

/**
 * The JSON bytes of a gzip member made by DeflateBody.gzip(): its deflate stream inflated in one
 * call (a client that does not accept gzip; the member was assembled for the ETag anyway).
 */
export function identityOfGzip(gz: Buffer): Buffer {
  const length = gz.readUInt32LE(gz.length - 4);
  return inflateRawSync(gz.subarray(GZIP_HEADER.length, gz.length - 8), { chunkSize: Math.max(64, length + 8) });
}

/** A JSON answer: its bytes (or text), or a DeflateBody of packed rows and glue. */
export type JsonBody = Buffer | string | DeflateBody;

/** `{"<key>":<stored row>}` (a tx, block, collection…) from a stored row of either wire format. */
export function objectBody(key: string, stored: Buffer | string): JsonBody {
  if (typeof stored === 'string' || !isPackedRow(stored)) return '{"' + key + '":' + stored.toString() + '}';
  return new DeflateBody()
    .text('{"' + key + '":')
    .row(stored)
    .text('}');
}
