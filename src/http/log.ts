/**
 * Structured logs: one JSON object per line on stdout. Lines are buffered and written together
 * once per event-loop turn, so a busy server makes one write(2) for many requests rather than
 * one each (stdout to a pipe or file is synchronous on Linux).
 */

export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = typeof LOG_LEVELS[number];

const RANK: Record<LogLevel, number> = { error: 0, warn: 1, info: 2, debug: 3 };
const FLUSH_BYTES = 64 * 1024;

export type LogFields = Record<string, unknown>;

export interface Logger {
  readonly level: LogLevel;
  enabled(level: LogLevel): boolean;
  error(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  debug(msg: string, fields?: LogFields): void;
  /** writes out buffered lines now (before exit) */
  flush(): void;
}

/** `base` fields go on every line (e.g. the pid, when several processes share stdout). */
export function createLogger(level: LogLevel, write: (text: string) => void = (t) => { process.stdout.write(t); },
  base: LogFields = {}): Logger {
  const max = RANK[level];
  let buffered = '';
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    if (buffered === '') return;
    const text = buffered;
    buffered = '';
    write(text);
  };
  const log = (l: LogLevel, msg: string, fields?: LogFields): void => {
    if (RANK[l] > max) return;
    buffered += JSON.stringify({ time: new Date().toISOString(), level: l, msg, ...base, ...fields }) + '\n';
    if (buffered.length >= FLUSH_BYTES) flush();
    else if (!scheduled) { scheduled = true; setImmediate(flush); }
  };
  return {
    level,
    enabled: (l) => RANK[l] <= max,
    error: (msg, f) => log('error', msg, f),
    warn: (msg, f) => log('warn', msg, f),
    info: (msg, f) => log('info', msg, f),
    debug: (msg, f) => log('debug', msg, f),
    flush,
  };
}

/** A logger that drops everything (createApp without one, e.g. in route tests). */
export const silentLogger: Logger = {
  level: 'error', enabled: () => false, error: () => {}, warn: () => {}, info: () => {}, debug: () => {}, flush: () => {},
};

/** `{message, stack}` of a thrown value, for an error line (never sent to a client). */
export function errorFields(err: unknown): LogFields {
  if (err instanceof Error) return { error: err.message, stack: err.stack };
  return { error: String(err) };
}
