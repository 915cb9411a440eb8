/**
 * Structured logs: one JSON object per line (or, with `--log-format text`, one readable line:
 * time, level, message, key=value fields), on stdout for `serve`, on stderr for the others. Lines are buffered and written together,
 * so a busy server makes one write(2) for many requests rather than one each (stdout to a pipe
 * or file is synchronous on Linux): warn and error lines on the next event-loop turn, info and
 * debug lines (the per-request ones) within FLUSH_MS, or as soon as FLUSH_BYTES are waiting.
 */

export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const RANK: Record<LogLevel, number> = { error: 0, warn: 1, info: 2, debug: 3 };
const FLUSH_BYTES = 64 * 1024;
const FLUSH_MS = 10;

export type LogFields = Record<string, unknown>;

export const LOG_FORMATS = ['json', 'text'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** `--log-format`'s default: text for a person at a terminal, JSON for whatever collects the lines. */
export function defaultLogFormat(stream: { isTTY?: boolean }): LogFormat {
  return stream.isTTY === true ? 'text' : 'json';
}

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
export function createLogger(
  level: LogLevel,
  write: (text: string) => void = (t) => {
    process.stdout.write(t);
  },
  base: LogFields = {},
  format: LogFormat = 'json',
): Logger {
  const max = RANK[level];
  let buffered = '';
  let soon = false;
  let timer: NodeJS.Timeout | undefined;
  const flush = (): void => {
    soon = false;
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (buffered === '') return;
    const text = buffered;
    buffered = '';
    write(text);
  };
  // Keys written before the fields: a field of the same name takes its place (slow path below).
  const fixedKeys = new Set(['time', 'level', 'msg', ...Object.keys(base)]);
  const baseJson = Object.keys(base).length ? ',' + JSON.stringify(base).slice(1, -1) : '';
  const clock = isoClock();
  const log = (l: LogLevel, msg: string, fields?: LogFields): void => {
    if (RANK[l] > max) return;
    let line: string | undefined;
    if (format === 'text') {
      line = textLine(clock(), l, msg, { ...base, ...fields });
    } else if (fields === undefined || !overlaps(fields, fixedKeys)) {
      // the same text as the object below, without building and spreading it
      const rest = fields === undefined ? '{}' : JSON.stringify(fields);
      line = '{"time":"' + clock() + '","level":"' + l + '","msg":' + JSON.stringify(msg) + baseJson + (rest.length > 2 ? ',' + rest.slice(1) : '}');
    } else {
      line = JSON.stringify({ time: clock(), level: l, msg, ...base, ...fields });
    }
    buffered += line + '\n';
    if (buffered.length >= FLUSH_BYTES) flush();
    else if (RANK[l] <= RANK.warn) {
      if (!soon) {
        soon = true;
        setImmediate(flush);
      }
    } else if (timer === undefined) timer = setTimeout(flush, FLUSH_MS);
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

/** `2026-01-02T03:04:05.678Z info msg key=value key="two words"`: one line, whatever the fields hold. */
function textLine(time: string, level: LogLevel, msg: string, fields: LogFields): string {
  let line = `${time} ${level.padEnd(5)} ${msg.replace(/\n/g, ' ')}`;
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) continue;
    const text = typeof v === 'string' ? v : JSON.stringify(v);
    line += ` ${k}=${/^[^\s"=]+$/.test(text) ? text : JSON.stringify(text)}`;
  }
  return line;
}

function overlaps(fields: LogFields, keys: Set<string>): boolean {
  for (const k in fields) if (keys.has(k)) return true;
  return false;
}

/** `new Date().toISOString()`, formatted at most once per millisecond (a busy server logs many lines per ms). */
function isoClock(): () => string {
  let last = -1;
  let text = '';
  return () => {
    const now = Date.now();
    if (now !== last) {
      last = now;
      text = new Date(now).toISOString();
    }
    return text;
  };
}

/** A logger that drops everything (an app built without one, e.g. in route tests). */
export const silentLogger: Logger = {
  level: 'error',
  enabled: () => false,
  error: () => {},
  warn: () => {},
  info: () => {},
  debug: () => {},
  flush: () => {},
};

/** `{message, stack}` of a thrown value, for an error line (never sent to a client). */
export function errorFields(err: unknown): LogFields {
  if (err instanceof Error) return { error: err.message, stack: err.stack };
  return { error: String(err) };
}
