import type { RequestHandler } from 'express';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Limits } from '../settings/serve';
import { errorJson, GRPC, sendError, shown } from './errors';

/**
 * Request limits. Node enforces the socket-level ones (src/serve/server.ts): `maxHeaderSize` (431;
 * see nodeHeaderLimit for how the target is kept out of it),
 * `headersTimeout` (a client that trickles its headers is cut off), `requestTimeout`,
 * `keepAliveTimeout`. The URL length limit is ours, so the client gets a JSON 414.
 */

export type { Limits };

/** The one URL length rule (the listener's base cut and the response cache in front of Express ask it too). */
export function urlTooLong(url: string, limits: Limits): boolean {
  return url.length > limits.maxUrlLength;
}

/**
 * Node counts the request line, target included, into its maxHeaderSize: a 20 KiB query string
 * would be a 431 from Node before our 414 could answer it. So Node is given room for the target
 * too (this sum), and `maxHeaderSize` is applied here to the rest — method, version and headers
 * (withHeaderLimit). Only a request past both together is refused by Node (clientErrorHandler).
 */
export function nodeHeaderLimit(l: Limits): { maxHeaderSize: number } {
  return { maxHeaderSize: l.maxHeaderSize + l.maxUrlLength };
}

/** The bytes of a request's head but its target: `GET  HTTP/1.1\r\n`, each `Name: value\r\n`, the blank line. */
function headBytesWithoutTarget(req: IncomingMessage): number {
  let n = req.method === undefined ? 0 : req.method.length + 12;
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) n += raw[i].length + raw[i + 1].length + 4;
  return n + 2;
}

/** The listener behind `maxHeaderSize` (see nodeHeaderLimit): a head past it gets the 431 Node would give. */
export function withHeaderLimit(limits: Limits, inner: RequestListener): RequestListener {
  const { maxHeaderSize } = limits;
  return (req: IncomingMessage, res: ServerResponse) => {
    if (headBytesWithoutTarget(req) <= maxHeaderSize) {
      inner(req, res);
      return;
    }
    const body = errorJson(GRPC.INVALID_ARGUMENT, 'request headers are too large');
    res.shouldKeepAlive = false;
    res.writeHead(431, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
      'Cache-Control': 'no-store',
      Connection: 'close',
    });
    res.end(body);
  };
}

export function urlLengthLimit(limits: Limits): RequestHandler {
  return (req, res, next) => {
    if (urlTooLong(req.url, limits)) {
      res.setHeader('Cache-Control', 'no-store');
      sendError(res, 414, GRPC.INVALID_ARGUMENT, `request URL is ${req.url.length} bytes, the limit is ${limits.maxUrlLength}`);
      return;
    }
    next();
  };
}

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  414: 'URI Too Long',
  417: 'Expectation Failed',
  431: 'Request Header Fields Too Large',
};

/**
 * The request target's length as far as `raw` (the bytes Node's parser stopped in) shows it:
 * `exact` when the whole request line is there; a lower bound when the line runs past the end
 * of what arrived; undefined when `raw` does not begin with a request line (the line came in an
 * earlier packet).
 */
function targetLength(raw: Buffer | undefined): { length: number; exact: boolean } | undefined {
  if (raw === undefined) return undefined;
  const m = /^[A-Z]{1,20} /.exec(raw.subarray(0, 21).toString('latin1'));
  if (!m) return undefined;
  const start = m[0].length;
  const eol = raw.indexOf(10, start);
  if (eol < 0) return { length: raw.length - start, exact: false };
  // `GET /path HTTP/1.1\r\n`: the target ends at the last space of the line
  const line = raw.subarray(start, raw[eol - 1] === 13 ? eol - 1 : eol);
  const sp = line.lastIndexOf(32);
  return { length: sp < 0 ? line.length : sp, exact: true };
}

/**
 * Node's answer to a request it could not parse or that came too slowly, with our JSON error
 * body instead of an empty one; the connection is closed either way. Node counts the request
 * line into --max-header-size: a request whose target alone is past --max-url-length gets the
 * target's own answer, 414 (as it would below Node's limit, urlLengthLimit), not 431.
 */
function clientErrorHandler(limits: Limits): (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket) => void {
  return (err, socket) => {
    if (!socket.writable || err.code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    let status = 400;
    let message = `malformed request: ${err.code ?? err.message}`;
    if (err.code === 'HPE_HEADER_OVERFLOW') {
      const target = targetLength(err.rawPacket);
      if (target !== undefined && target.length > limits.maxUrlLength) {
        status = 414;
        message = `request URL is ${target.exact ? '' : 'more than '}${target.length} bytes, the limit is ${limits.maxUrlLength}`;
      } else {
        status = 431;
        message = 'request headers are too large';
      }
    } else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      status = 408;
      message = 'request not received in time';
    }
    endWith(socket, status, message);
  };
}

/** A connection that sent no request within the header timeout (src/serve/server.ts): 408, closed. */
export function requestTimedOut(socket: Socket): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  endWith(socket, 408, 'request not received in time');
  // a client that does not read its answer does not hold the socket
  setTimeout(() => socket.destroy(), 1_000).unref();
}

/** gRPC code of a status answered here: 408 is CANCELLED (1) in grpc-gateway's mapping, 405 UNIMPLEMENTED, the others bad input. */
function grpcOf(status: number): number {
  return status === 408 ? 1 : status === 405 ? GRPC.UNIMPLEMENTED : GRPC.INVALID_ARGUMENT;
}

function endWith(socket: Socket, status: number, message: string, headers = ''): void {
  const body = errorJson(grpcOf(status), message);
  socket.end(
    `HTTP/1.1 ${status} ${REASONS[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\n${headers}Connection: close\r\n\r\n${body}`,
  );
}

/** A JSON error written on a ServerResponse, the connection closed after it (the request's body is not read). */
function answerAndClose(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  const body = errorJson(grpcOf(status), message);
  res.shouldKeepAlive = false;
  res.writeHead(status, {
    ...headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
    Connection: 'close',
  });
  res.end(body);
}

/**
 * The options of createServer that leave to us an answer Node would write itself with an empty
 * body: an HTTP/1.1 request without Host (RFC 9112 section 3.2: a 400), answered by
 * withHostRequired in the JSON error shape.
 */
export const NODE_SERVER_OPTIONS = { requireHostHeader: false } as const;

/** The listener behind NODE_SERVER_OPTIONS: an HTTP/1.1 request without a Host header gets the JSON 400. */
export function withHostRequired(inner: RequestListener): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    if (req.headers.host !== undefined || req.httpVersionMajor !== 1 || req.httpVersionMinor < 1) {
      inner(req, res);
      return;
    }
    answerAndClose(res, 400, 'an HTTP/1.1 request needs a Host header');
  };
}

/**
 * Every answer Node's HTTP server would otherwise write itself, in the API's JSON error shape
 * with its Content-Type (docs/api-contract.md#errors), closing the connection: a request it could
 * not parse or that came too slowly (clientErrorHandler), an `Expect` it does not meet (Node: a
 * 417 with no body), and CONNECT (Node: the connection closed without an answer) — a 405, as
 * every method a route does not take. The Host check is withHostRequired's.
 */
export function answerWhatNodeWould(server: Server, limits: Limits): void {
  server.on('clientError', clientErrorHandler(limits));
  // Node answers `Expect: 100-continue` itself when no 'checkContinue' listener is there; any other expectation comes here
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    answerAndClose(res, 417, `unsupported expectation: Expect: ${shown(String(req.headers.expect))} (this server meets only 100-continue)`);
  });
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    socket.on('error', () => socket.destroy());
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    endWith(socket, 405, `method not allowed: CONNECT ${shown(req.url ?? '')}`, 'Allow: GET, HEAD\r\n');
    setTimeout(() => socket.destroy(), 1_000).unref();
  });
}
