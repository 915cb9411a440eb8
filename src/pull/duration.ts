/** "30s", "500ms", "2m", "1h" or a bare number of seconds → milliseconds; the error names the value. */
export function parseDuration(value: string | number, option: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(String(value));
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;
  const ms = m ? Math.round(Number(m[1]) * unit[(m[2] ?? 's') as keyof typeof unit]) : NaN;
  if (!Number.isFinite(ms) || ms <= 0) throw new Error(`${option} must be a duration like 30s, 500ms or 2m, got ${JSON.stringify(value)}`);
  return ms;
}
