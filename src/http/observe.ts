import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../lib/log';
import type { Metrics } from './ops';
import type { ServeSettings } from '../settings/serve';

/**
 * Per-request observation, written once for both ways a request is answered (the Express app and
 * the response cache in front of it): when the response closes (its last byte handed to the OS,
 * or the client gone), one log line at info and the request counter + latency histogram.
 * HEAD is counted as GET (it is answered as GET); the log line keeps the method as sent.
 * `bodyBytes`: the body's length when the response's headers were written as a raw list
 * (the cache's hits), else its Content-Length header.
 */
export type ObserveRequest = ((req: IncomingMessage, res: ServerResponse, route: () => string, bodyBytes?: () => number, started?: bigint) => void) & {
  /** an answer that took this long (ns) or longer gets a 'slow request' line (--slow-request-ms) */
  readonly slowNs: number;
};

const contentLength = (res: ServerResponse): number => Number(res.getHeader('content-length') ?? 0);

/** Longest path (with its query) a slow-request line quotes. */
const SLOW_PATH_CHARS = 300;

/**
 * `chainOf`: a replica serving several chains (src/serve/chains.ts) names the request's chain —
 * a `chain` label on its metrics and a `chain` field on its log lines ('' at the root).
 */
export function requestObserver(
  logger: Logger,
  metrics: Metrics,
  settings: Pick<ServeSettings, 'slowRequestMs'>,
  chainOf?: (req: IncomingMessage) => string,
): ObserveRequest {
  const logRequests = logger.enabled('info');
  const slowSeconds = settings.slowRequestMs / 1000;
  const observe = (req: IncomingMessage, res: ServerResponse, route: () => string, bodyBytes?: () => number, started = process.hrtime.bigint()): void => {
    const method = req.method as string;
    // as sent: under --base-url, req.url has the prefix cut (src/serve/routing.ts cutBase)
    const path = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? (req.url as string);
    res.once('close', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const status = res.statusCode;
      const chain = chainOf?.(req);
      metrics.observeRoute(method === 'HEAD' ? 'GET' : method, route(), status, seconds, chain);
      if (seconds >= slowSeconds) {
        logger.warn('slow request', {
          ...(chain === undefined ? {} : { chain }),
          method,
          route: route(),
          path: path.length > SLOW_PATH_CHARS ? `${path.slice(0, SLOW_PATH_CHARS)}…` : path,
          status,
          ms: Math.round(seconds * 1e3),
        });
      }
      if (!logRequests) return;
      const sentBody = method !== 'HEAD' && status !== 304 && status !== 204;
      logger.info('request', {
        ...(chain === undefined ? {} : { chain }),
        method,
        path,
        status,
        ms: Math.round(seconds * 1e6) / 1e3,
        bytes: sentBody ? (bodyBytes ? bodyBytes() : contentLength(res)) : 0,
        ...(res.writableFinished ? {} : { aborted: true }),
      });
    });
  };
  return Object.assign(observe, { slowNs: settings.slowRequestMs * 1e6 });
}
