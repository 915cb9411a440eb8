/**
 * A small HTTP GET client for crawling: bounded concurrency, an optional request-rate limit,
 * per-request timeouts and retries with exponential backoff (and jitter) on 5xx, 429, timeouts
 * and network errors. Any other non-200 answer fails at once, naming the URL.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { brotliDecompressSync, gunzipSync, inflateRawSync, inflateSync } from 'node:zlib';
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
const STALE_CONNECTION_CODES = new Set(['ECONNRESET', 'EPIPE']);

/** Network failures as a person reads them (Node keeps the system's code, ECONNREFUSED, …, in `code`). */
const NETWORK_FAILURES: Record<string, string> = {
  ECONNREFUSED: 'connection refused (nothing listens at that address and port)',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name lookup failed (DNS did not answer)',
  ECONNRESET: 'connection reset by the server',
  EPIPE: 'connection closed by the server',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};

function networkFailure(err: Error & { code?: string }): string {
  const words = err.code === undefined ? undefined : NETWORK_FAILURES[err.code];
  return words ?? fsReason(err);
}

function staleConnection(e: unknown): boolean {
  const err = e as { code?: unknown; answered?: boolean } | undefined;
  return typeof err?.code === 'string' && STALE_CONNECTION_CODES.has(err.code) && err.answered !== true;
}

/** An attempt that outlived HttpOptions.timeoutMs (the request destroyed with it). */
class AttemptTimeout extends Error {
  override name = 'TimeoutError';
}

/** An answer: its status, headers and body (decoded from its content-encoding). */
interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

/** The body of an answer as its Content-Encoding says (gzip, deflate, br; anything else as it came). */
function decodeBody(raw: Buffer, encoding: string | undefined): Buffer {
  if (encoding === undefined || raw.length === 0) return raw;
  const codings = encoding
    .toLowerCase()
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '' && c !== 'identity');
  let body = raw;
  for (const c of codings.reverse()) {
    if (c === 'gzip' || c === 'x-gzip') body = gunzipSync(body);
    else if (c === 'br') body = brotliDecompressSync(body);
    else if (c === 'deflate') {
      // zlib-wrapped as the RFC says, or raw as some servers send it
      try {
        body = inflateSync(body);
      } catch {
        body = inflateRawSync(body);
      }
    } else return raw;
  }
  return body;
}

const REDIRECTS = 5;

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
  private readonly httpAgent: HttpAgent;
  private readonly httpsAgent: HttpsAgent;

  constructor(
    readonly base: string,
    o: HttpOptions,
  ) {
    this.concurrency = o.concurrency;
    this.interval = o.rate === undefined ? 0 : 1000 / o.rate;
    this.retries = o.retries;
    this.timeoutMs = o.timeoutMs;
    this.backoffMs = o.backoffMs;
    // kept-alive connections, at most one per request in flight (idle ones do not hold the process)
    this.httpAgent = new HttpAgent({ keepAlive: true, maxSockets: this.concurrency });
    this.httpsAgent = new HttpsAgent({ keepAlive: true, maxSockets: this.concurrency });
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
  private async fetchOnce(url: string): Promise<Answer> {
    try {
      return await this.send(url, REDIRECTS);
    } catch (e) {
      if (!staleConnection(e)) throw e;
      this.stats.resent++;
      return this.send(url, REDIRECTS);
    }
  }

  /**
   * One GET on a kept-alive connection (node:http: a fraction of fetch's CPU a request, which a
   * crawl of many small pages spends per token), its body read whole and decoded; redirects
   * followed. Times out after timeoutMs, the body included.
   */
  private send(url: string, redirects: number): Promise<Answer> {
    return new Promise<Answer>((resolve, reject) => {
      const u = new URL(url);
      const https = u.protocol === 'https:';
      const req = (https ? httpsRequest : httpRequest)(u, {
        method: 'GET',
        agent: https ? this.httpsAgent : this.httpAgent,
        headers: { accept: 'application/json', 'accept-encoding': 'gzip, deflate', 'user-agent': 'node' },
      });
      const timer = setTimeout(() => req.destroy(new AttemptTimeout(`timed out after ${this.timeoutMs} ms`)), this.timeoutMs);
      const fail = (e: Error): void => {
        clearTimeout(timer);
        reject(e);
      };
      req.on('error', fail);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        // a failure amid the body is an ordinary one (not a stale connection's, fetchOnce)
        const failBody = (e: Error): void => fail(Object.assign(e, { answered: true }));
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', failBody);
        // the connection closed before the whole body came
        res.on('close', () => {
          if (!res.complete) failBody(Object.assign(new Error('connection closed by the server'), { code: 'ECONNRESET' }));
        });
        res.on('end', () => {
          clearTimeout(timer);
          const status = res.statusCode ?? 0;
          const location = res.headers.location;
          if (status >= 300 && status < 400 && status !== 304 && location !== undefined && redirects > 0) {
            this.send(new URL(location, u).toString(), redirects - 1).then(resolve, reject);
            return;
          }
          try {
            resolve({ status, headers: res.headers, body: decodeBody(Buffer.concat(chunks), res.headers['content-encoding']) });
          } catch (e) {
            reject(e as Error);
          }
        });
      });
      req.end();
    });
  }

  /** GET base+path; resolves with the body of a 200 answer. */
  async get(path: string): Promise<string> {
    const body = await this.getBytes(path);
    // (as fetch's text(): a leading byte order mark is not part of the text)
    return body.toString('utf8', body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0);
  }

  /** GET base+path; resolves with the bytes of a 200 answer's body (decoded from its content-encoding). */
  async getBytes(path: string): Promise<Buffer> {
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
        const body = res.body;
        this.stats.bytes += body.length;
        if (res.status === 200) return body;
        const detail = `HTTP ${res.status}: ${body.toString('utf8', 0, 800).slice(0, 200).replace(/\s+/g, ' ')}`;
        if (res.status < 500 && res.status !== 429) throw new HttpError(url, res.status, `GET ${url}: ${detail}`);
        last = detail;
        const ra = Number(res.headers['retry-after']);
        if (Number.isFinite(ra) && ra > 0) retryAfterMs = Math.min(ra * 1000, 60_000);
      } catch (e) {
        if (e instanceof HttpError) throw e;
        const err = e as Error & { code?: string };
        last = err.name === 'TimeoutError' ? `timed out after ${this.timeoutMs} ms` : networkFailure(err);
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
