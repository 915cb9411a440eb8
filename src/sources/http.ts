/**
 * A small HTTP GET client for crawling: bounded concurrency, an optional request-rate limit,
 * per-request timeouts and retries with exponential backoff (and jitter) on 5xx, 429, timeouts
 * and network errors. Any other non-200 answer fails at once, naming the URL.
 */
import { fsReason } from '../lib/paths';

/**
 * The client's settings, every one decided: resolved once from the command's options
 * (resolveHttp in src/sources/options.ts, over HTTP_CLIENT_DEFAULTS), checked there or by yargs.
 */
export interface HttpOptions {
  /** requests in flight, ≥ 1 */
  concurrency: number;
  /** requests started per second at most; undefined: no limit */
  rate: number | undefined;
  /** retries after the first attempt */
  retries: number;
  /** per attempt, including reading the body */
  timeoutMs: number;
  /** first backoff step (doubled per retry, capped at 10 s) */
  backoffMs: number;
}

export class HttpError extends Error {
  constructor(
    readonly url: string,
    readonly status: number | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export interface HttpStats {
  requests: number;
  retries: number;
  /** requests sent again at once after a closed keep-alive connection (HttpClient.fetchOnce) */
  resent: number;
  bytes: number;
}

/** The errors of a request written to a connection the server had already closed. */
const STALE_CONNECTION_CODES = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE', 'UND_ERR_CLOSED']);

/**
 * Network failures as a person reads them: undici says only "fetch failed" and keeps the system's
 * code (ECONNREFUSED, …) in its cause.
 */
const NETWORK_FAILURES: Record<string, string> = {
  ECONNREFUSED: 'connection refused (nothing listens at that address and port)',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name lookup failed (DNS did not answer)',
  ECONNRESET: 'connection reset by the server',
  EPIPE: 'connection closed by the server',
  UND_ERR_SOCKET: 'connection closed by the server',
  UND_ERR_CLOSED: 'connection closed by the server',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};

function networkFailure(err: Error & { cause?: { code?: string; message?: string } }): string {
  const words = err.cause?.code === undefined ? undefined : NETWORK_FAILURES[err.cause.code];
  return words ?? `${err.message}${err.cause ? ` (${fsReason(err.cause)})` : ''}`;
}

function staleConnection(e: unknown): boolean {
  const err = e as { name?: string; cause?: { code?: unknown } } | undefined;
  return err?.name === 'TypeError' && typeof err.cause?.code === 'string' && STALE_CONNECTION_CODES.has(err.cause.code);
}

export class HttpClient {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  private nextStart = 0;
  readonly stats: HttpStats = { requests: 0, retries: 0, resent: 0, bytes: 0 };
  private readonly concurrency: number;
  private readonly interval: number;
  private readonly retries: number;
  private readonly timeoutMs: number;
  private readonly backoffMs: number;

  constructor(
    readonly base: string,
    o: HttpOptions,
  ) {
    this.concurrency = o.concurrency;
    this.interval = o.rate === undefined ? 0 : 1000 / o.rate;
    this.retries = o.retries;
    this.timeoutMs = o.timeoutMs;
    this.backoffMs = o.backoffMs;
  }

  private async slot(): Promise<void> {
    if (this.active >= this.concurrency) await new Promise<void>((r) => this.waiting.push(r));
    this.active++;
  }

  private release(): void {
    this.active--;
    this.waiting.shift()?.();
  }

  private async paced(): Promise<void> {
    if (!this.interval) return;
    const now = Date.now();
    const at = Math.max(now, this.nextStart);
    this.nextStart = at + this.interval;
    if (at > now) await sleep(at - now);
  }

  /**
   * One GET, sent again at once (not counted as a retry) when the connection failed before any
   * answer with an error that a pooled keep-alive connection the server has closed gives: the
   * server closes an idle connection after its keep-alive timeout, and when this process's
   * event loop was busy meanwhile (follow writing a batch or a rich list synchronously for
   * longer than that timeout) the pool has not yet seen the close and hands the dead connection
   * to the next request (docs/follow.md "A failing source"). A GET is idempotent; the second
   * send opens a new connection, and its failure is an ordinary one.
   */
  private async fetchOnce(url: string): Promise<Response> {
    const send = (): Promise<Response> => fetch(url, { signal: AbortSignal.timeout(this.timeoutMs), headers: { accept: 'application/json' } });
    try {
      return await send();
    } catch (e) {
      if (!staleConnection(e)) throw e;
      this.stats.resent++;
      return send();
    }
  }

  /** GET base+path; resolves with the body of a 200 answer. */
  async get(path: string): Promise<string> {
    const url = this.base.replace(/\/+$/, '') + path;
    let last = '';
    for (let attempt = 0; attempt <= this.retries; attempt++) {
      if (attempt > 0) this.stats.retries++;
      let retryAfterMs: number | undefined;
      await this.slot();
      try {
        await this.paced();
        this.stats.requests++;
        const res = await this.fetchOnce(url);
        const body = await res.text();
        this.stats.bytes += Buffer.byteLength(body);
        if (res.status === 200) return body;
        const detail = `HTTP ${res.status}: ${body.slice(0, 200).replace(/\s+/g, ' ')}`;
        if (res.status < 500 && res.status !== 429) throw new HttpError(url, res.status, `GET ${url}: ${detail}`);
        last = detail;
        const ra = Number(res.headers.get('retry-after'));
        if (Number.isFinite(ra) && ra > 0) retryAfterMs = Math.min(ra * 1000, 60_000);
      } catch (e) {
        if (e instanceof HttpError) throw e;
        const err = e as Error & { cause?: { code?: string; message?: string } };
        last = err.name === 'TimeoutError' || err.name === 'AbortError' ? `timed out after ${this.timeoutMs} ms` : networkFailure(err);
      } finally {
        this.release();
      }
      if (attempt < this.retries) {
        const step = Math.min(10_000, this.backoffMs * 2 ** attempt);
        await sleep(retryAfterMs ?? step * (0.5 + Math.random() / 2));
      }
    }
    // one attempt (follow retries whole steps itself): what failed, without a count
    throw new HttpError(url, undefined, `GET ${url}: ${this.retries === 0 ? '' : `failed after ${this.retries + 1} attempts: `}${last}`);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Runs fn over items with at most n calls in flight; the first failure stops new calls and is thrown. */
export async function forEachConcurrent<T>(items: Iterable<T>, n: number, fn: (item: T) => Promise<void>): Promise<void> {
  const it = items[Symbol.iterator]();
  let failed: unknown;
  let hasFailed = false;
  const worker = async (): Promise<void> => {
    for (;;) {
      if (hasFailed) return;
      const next = it.next();
      if (next.done) return;
      try {
        await fn(next.value);
      } catch (e) {
        if (!hasFailed) {
          hasFailed = true;
          failed = e;
        }
        return;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, n) }, worker));
  if (hasFailed) throw failed;
}
