import { createHash } from 'node:crypto';

/**
 * sfc32 seeded from SHA-256 of a label: small, fast and identical on every platform, so a dump
 * is a pure function of its options. Each concern (accounts, blocks, txs, rich list) takes its
 * own stream so that changing one part of the generator does not reshuffle the others.
 */
export class Prng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(label: string) {
    const h = createHash('sha256').update(label).digest();
    this.a = h.readUInt32LE(0);
    this.b = h.readUInt32LE(4);
    this.c = h.readUInt32LE(8);
    this.d = h.readUInt32LE(12) | 1;
    for (let i = 0; i < 16; i++) this.next();
  }

  /** Uniform uint32. */
  next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1). */
  float(): number {
    return this.next() / 4294967296;
  }

  /** Uniform integer in [lo, hi] (inclusive). */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.float() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.float() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.float() * items.length)];
  }

  /** Picks an index with probability proportional to its weight. */
  weighted(weights: readonly number[]): number {
    let total = 0;
    for (const w of weights) total += w;
    let r = this.float() * total;
    for (let i = 0; i < weights.length; i++) {
      r -= weights[i];
      if (r < 0) return i;
    }
    return weights.length - 1;
  }

  /** Fresh random bytes from Node's shared pool: for values that are written out and dropped. */
  bytes(n: number): Buffer {
    return this.fill(Buffer.allocUnsafe(n));
  }

  /**
   * 32 random bytes whose top byte is non-zero, so canonicalization never shortens them to 20.
   * Unpooled: these addresses live as long as the chain, and a pooled slice would pin 8 KiB.
   */
  objectAddress(): Buffer {
    const b = this.fill(Buffer.alloc(32));
    if (b[0] === 0) b[0] = 0x5a;
    return b;
  }

  private fill(out: Buffer): Buffer {
    const n = out.length;
    for (let i = 0; i < n; i += 4) {
      const v = this.next();
      for (let j = 0; j < 4 && i + j < n; j++) out[i + j] = (v >>> (8 * j)) & 0xff;
    }
    return out;
  }

  /** Random decimal digits string of the given length, no leading zero. */
  digits(len: number): string {
    let s = String(this.int(1, 9));
    while (s.length < len) s += String(this.next() % 10);
    return s;
  }
}
