import type { RequestHandler } from 'express';
import type { Socket } from 'node:net';
import { SERVE_DEFAULTS } from '../lib/defaults';
import { errorJson, GRPC, sendError } from './errors';

/**
 * Request limits. Node enforces the socket-level ones (src/serve/server.ts): `maxHeaderSize` (431),
 * `headersTimeout` (a client that trickles its headers is cut off), `requestTimeout`,
 * `keepAliveTimeout`. The URL length limit is ours, so the client gets a JSON 414.
 */

export interface Limits {
  /** whole request (headers + body) must arrive within this, ms */
  requestTimeoutMs: number;
  /** headers must arrive within this, ms (slow-client protection; ≤ requestTimeoutMs) */
  headersTimeoutMs: number;
  /** idle keep-alive connections are closed after this, ms */
  keepAliveTimeoutMs: number;
  /** request line + headers, bytes (Node's maxHeaderSize; beyond it: 431) */
  maxHeaderSize: number;
  /** request target, bytes (beyond it: 414) */
  maxUrlLength: number;
}

export const DEFAULT_LIMITS: Limits = {
  requestTimeoutMs: SERVE_DEFAULTS.requestTimeoutMs,
  headersTimeoutMs: SERVE_DEFAULTS.headersTimeoutMs,
  keepAliveTimeoutMs: SERVE_DEFAULTS.keepAliveTimeoutMs,
  maxHeaderSize: SERVE_DEFAULTS.maxHeaderSize,
  maxUrlLength: SERVE_DEFAULTS.maxUrlLength,
};

/** The one URL length rule (the response cache in front of Express asks it too). */
export function urlTooLong(url: string, max: number): boolean {
  return url.length > max;
}

export function urlLengthLimit(max: number): RequestHandler {
  return (req, res, next) => {
    if (urlTooLong(req.url, max)) {
      res.setHeader('Cache-Control', 'no-store');
      sendError(res, 414, GRPC.INVALID_ARGUMENT, `request URL is ${req.url.length} bytes, the limit is ${max}`);
      return;
    }
    next();
  };
}

const REASONS: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };

/**
 * Node's answer to a request it could not parse or that came too slowly, with our JSON error
 * body instead of an empty one; the connection is closed either way.
 */
export function onClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (!socket.writable || err.code === 'ECONNRESET') { socket.destroy(); return; }
  let status = 400;
  let message = `malformed request: ${err.code ?? err.message}`;
  if (err.code === 'HPE_HEADER_OVERFLOW') { status = 431; message = 'request headers are too large'; }
  else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') { status = 408; message = 'request not received in time'; }
  endWith(socket, status, message);
}

/** A connection that sent no request within the header timeout (src/serve/server.ts): 408, closed. */
export function requestTimedOut(socket: Socket): void {
  if (!socket.writable) { socket.destroy(); return; }
  endWith(socket, 408, 'request not received in time');
  // a client that does not read its answer does not hold the socket
  setTimeout(() => socket.destroy(), 1_000).unref();
}

function endWith(socket: Socket, status: number, message: string): void {
  // 408 is gRPC CANCELLED (1) in grpc-gateway's mapping; the others are bad input.
  const body = errorJson(status === 408 ? 1 : GRPC.INVALID_ARGUMENT, message);
  socket.end(`HTTP/1.1 ${status} ${REASONS[status]}\r\nContent-Type: application/json; charset=utf-8\r\n`
    + `Content-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}`);
}
