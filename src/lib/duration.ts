/**
 * The one grammar of duration options (`follow --interval`, `--max-backoff`,
 * `serve --pull-interval`): a decimal number followed by `ms`, `s`, `m` or `h`, or a bare
 * number of seconds; blanks around the number and the unit are ignored. `2s`, `500ms`, `1.5`,
 * `2 m`, `1h`.
 */

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;
const GRAMMAR = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/;

export interface DurationOptions {
  /** accept 0 (follow's `--interval 0`: poll again at once); otherwise a duration is > 0 */
  allowZero?: boolean;
}

/** The duration in whole milliseconds; the error names the option and the bad value. */
export function parseDuration(value: string | number, option: string, opts: DurationOptions = {}): number {
  const m = GRAMMAR.exec(String(value));
  const ms = m ? Math.round(Number(m[1]) * UNIT_MS[(m[2] ?? 's') as keyof typeof UNIT_MS]) : NaN;
  if (!Number.isFinite(ms) || ms < 0 || (ms === 0 && !opts.allowZero)) {
    throw new Error(`${option} must be a duration like 2s, 500ms, 2m or 1h${opts.allowZero ? '' : ' (more than 0)'}, got ${JSON.stringify(value)}`);
  }
  return ms;
}
