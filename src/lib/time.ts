/**
 * RFC 3339 UTC timestamps in the three renderings rollytics uses (docs/api-contract.md#timestamps):
 * blocks whole seconds; collections / NFTs microseconds with trailing zeros trimmed; txs up to
 * nanoseconds with trailing zeros trimmed. Always `Z`.
 */

const RFC3339_UTC = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z$/;

export interface UtcTime {
  /** whole seconds since the epoch */
  seconds: number;
  /** fractional part as 9 digits (nanoseconds) */
  nanos: string;
  /** `YYYY-MM-DDTHH:MM:SS` */
  base: string;
}

/** Parses `YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z`; returns undefined for anything else (incl. Feb 30). */
export function parseUtc(text: string): UtcTime | undefined {
  const m = RFC3339_UTC.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac] = m;
  const ms = Date.UTC(+y, +mo - 1, +d, +h, +mi, +s);
  const check = new Date(ms);
  if (check.getUTCFullYear() !== +y || check.getUTCMonth() !== +mo - 1 || check.getUTCDate() !== +d || +h > 23 || +mi > 59 || +s > 59) return undefined;
  return { seconds: ms / 1000, nanos: (frac ?? '').padEnd(9, '0'), base: `${y}-${mo}-${d}T${h}:${mi}:${s}` };
}

function trimmed(t: UtcTime, digits: number): string {
  const f = t.nanos.slice(0, digits).replace(/0+$/, '');
  return f ? `${t.base}.${f}Z` : `${t.base}Z`;
}

export const formatSeconds = (t: UtcTime): string => `${t.base}Z`;
export const formatMicros = (t: UtcTime): string => trimmed(t, 6);
export const formatNanos = (t: UtcTime): string => trimmed(t, 9);
export const toMicros = (t: UtcTime): number => t.seconds * 1e6 + Number(t.nanos.slice(0, 6));
