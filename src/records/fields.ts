import { AddressError, canonicalAddress } from '../lib/address';
import { parseUtc, UtcTime } from '../lib/time';
import { DumpError } from './dump-error';
import { NdjsonLine } from './ndjson';

const UINT_TEXT = /^(0|[1-9][0-9]*)$/;
const INT_TEXT = /^(0|-?[1-9][0-9]*)$/;
const HEX32 = /^(0x)?[0-9a-fA-F]{64}$/;

/**
 * One parsed dump line with typed field readers. Every reader names the field in its error, and
 * unknown fields are refused (a misspelt optional field must not silently drop data).
 */
export class Fields {
  readonly obj: Record<string, unknown>;

  constructor(
    readonly at: NdjsonLine,
    allowed: readonly string[],
  ) {
    let value: unknown;
    try {
      value = JSON.parse(at.text);
    } catch (e) {
      throw this.error('(line)', `not valid JSON: ${(e as Error).message}`);
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw this.error('(line)', 'expected a JSON object');
    }
    this.obj = value as Record<string, unknown>;
    for (const key of Object.keys(this.obj)) {
      if (!allowed.includes(key)) throw this.error(key, `unknown field (expected one of: ${allowed.join(', ')})`);
    }
  }

  error(field: string, reason: string): DumpError {
    return new DumpError(this.at.file, this.at.line, field, reason);
  }

  has(field: string): boolean {
    return this.obj[field] !== undefined;
  }

  raw(field: string): unknown {
    return this.obj[field];
  }

  string(field: string, opts: { optional?: string; nonEmpty?: boolean } = {}): string {
    const v = this.obj[field];
    if (v === undefined && opts.optional !== undefined) return opts.optional;
    if (typeof v !== 'string') throw this.error(field, v === undefined ? 'missing' : `must be a string, got ${describe(v)}`);
    if (opts.nonEmpty && v === '') throw this.error(field, 'must not be empty');
    return v;
  }

  /** A JSON boolean. */
  bool(field: string): boolean {
    const v = this.obj[field];
    if (typeof v !== 'boolean') throw this.error(field, v === undefined ? 'missing' : `must be true or false, got ${describe(v)}`);
    return v;
  }

  /** A JSON integer ≥ 0 within 2^53, or a decimal string of one. */
  uint(field: string, opts: { optional?: number; min?: number } = {}): number {
    const v = this.obj[field];
    if (v === undefined && opts.optional !== undefined) return opts.optional;
    return checkUint(v, opts.min ?? 0, (reason) => this.error(field, reason));
  }

  /** A JSON integer ≥ min (which may be negative) within ±2^53, or a decimal string of one. */
  int(field: string, min: number): number {
    const v = this.obj[field];
    const n = typeof v === 'number' ? v : typeof v === 'string' && INT_TEXT.test(v) ? Number(v) : undefined;
    if (n === undefined) throw this.error(field, v === undefined ? 'missing' : `must be an integer, got ${describe(v)}`);
    if (!Number.isSafeInteger(n) || n < min) throw this.error(field, `must be an integer ≥ ${min} and < 2^53, got ${describe(v)}`);
    return n;
  }

  time(field: string): UtcTime {
    const v = this.string(field);
    const t = parseUtc(v);
    if (!t) throw this.error(field, `not an RFC 3339 UTC time ending in Z with 0-9 fractional digits: ${JSON.stringify(v)}`);
    return t;
  }

  hex32(field: string): string {
    const v = this.string(field);
    if (!HEX32.test(v)) throw this.error(field, `must be 64 hex digits (optional 0x): ${JSON.stringify(v)}`);
    return v.replace(/^0x/, '');
  }

  address(field: string, prefix: string): Buffer {
    return toAddress(this.string(field, { nonEmpty: true }), prefix, (reason) => this.error(field, reason));
  }
}

export function checkUint(v: unknown, min: number, fail: (reason: string) => Error): number {
  let n: number;
  if (typeof v === 'number') n = v;
  else if (typeof v === 'string' && UINT_TEXT.test(v)) n = Number(v);
  else throw fail(v === undefined ? 'missing' : `must be a non-negative integer, got ${describe(v)}`);
  if (!Number.isSafeInteger(n) || n < min) throw fail(`must be an integer ≥ ${min} and < 2^53, got ${describe(v)}`);
  return n;
}

export function toAddress(text: string, prefix: string, fail: (reason: string) => Error): Buffer {
  try {
    return canonicalAddress(text, prefix);
  } catch (e) {
    if (e instanceof AddressError) throw fail(`${e.message}: ${JSON.stringify(text)}`);
    throw e;
  }
}

export function describe(v: unknown): string {
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 60 ? `${s.slice(0, 57)}...` : s;
}
