import type { ErrorRequestHandler, Response } from 'express';

/**
 * One error shape for every error (API-CONTRACT §4), the key-value indexer's gRPC-gateway body:
 * {"code": <gRPC code>, "message": "...", "details": []}.
 */

export const GRPC = { INVALID_ARGUMENT: 3, NOT_FOUND: 5, UNIMPLEMENTED: 12, INTERNAL: 13, UNAVAILABLE: 14 } as const;

/** An error with an HTTP status whose message is safe to show the client. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly grpcCode: number, message: string) {
    super(message);
  }
}

/** 400: the request names a bad value. */
export class BadRequestError extends ApiError {
  constructor(message: string) { super(400, GRPC.INVALID_ARGUMENT, message); }
}

/** 404: unknown route or missing single object. */
export class NotFoundError extends ApiError {
  constructor(message: string) { super(404, GRPC.NOT_FOUND, message); }
}

/** 405: the route exists, the method does not (every route answers GET and HEAD only). */
export class MethodNotAllowedError extends ApiError {
  constructor(method: string, path: string) { super(405, GRPC.UNIMPLEMENTED, `method not allowed: ${method} ${shown(path)}`); }
}

/** 503: no snapshot is loaded. */
export class UnavailableError extends ApiError {
  constructor(message: string) { super(503, GRPC.UNAVAILABLE, message); }
}

/** A client's value is shown in an error message up to this many characters, then cut with "…". */
export const SHOWN_VALUE_CHARS = 100;

/** `value` as an error message shows it: a 100 KB bad value must not become a 100 KB error body. */
export function shown(value: string): string {
  return value.length <= SHOWN_VALUE_CHARS ? value : `${value.slice(0, SHOWN_VALUE_CHARS)}…`;
}

/** The one wording of a 400 about a request value: `invalid value for <name>: <value, cut> (<why>)`. */
export function invalidValue(name: string, value: string, why: string): BadRequestError {
  return new BadRequestError(`invalid value for ${name}: ${shown(value)} (${why})`);
}

export function errorJson(code: number, message: string): string {
  return JSON.stringify({ code, message, details: [] });
}

export function sendError(res: Response, status: number, code: number, message: string): void {
  res.status(status).type('application/json').send(errorJson(code, message));
}

interface ValidatorErrorItem { path?: string; message?: string; errorCode?: string }
interface ValidatorError { status?: number; errors?: ValidatorErrorItem[]; message?: string }

/** Which request value a validator error points at: `/query/pagination.limit` → its name and value. */
function describeValidatorError(item: ValidatorErrorItem | undefined, req: Parameters<ErrorRequestHandler>[1]): string | undefined {
  const m = item?.path?.match(/^[./]?(query|params|path)[./](.+)$/);
  if (!m || !item) return undefined;
  const name = m[2];
  const raw = m[1] === 'query' ? rawQueryValue(req.originalUrl, name) : rawPathValue(req, name);
  return invalidValue(name, raw ?? '', item.message ?? 'is invalid').message;
}

/**
 * The path segment as sent (decoded once): the validator's coerced copy would show
 * 99999999999999999999 as 100000000000000000000.
 */
function rawPathValue(req: Parameters<ErrorRequestHandler>[1], name: string): string | undefined {
  const route = (req as { openapi?: { expressRoute?: string } }).openapi?.expressRoute;
  const at = route?.split('/').indexOf(`:${name}`) ?? -1;
  const segment = at < 0 ? undefined : req.path.split('/')[at];
  if (segment === undefined) return undefined;
  try { return decodeURIComponent(segment); } catch { return segment; }
}

/** The values of a query parameter exactly as sent (the validator coerces req.query in place). */
export function rawQueryValues(url: string, name: string): string[] {
  const q = url.indexOf('?');
  return q < 0 ? [] : new URLSearchParams(url.slice(q + 1)).getAll(name);
}

function rawQueryValue(url: string, name: string): string | undefined {
  const values = rawQueryValues(url, name);
  return values.length ? values.join(',') : undefined;
}

/**
 * The single error middleware: our ApiErrors, express-openapi-validator errors (which carry
 * `status` and `errors`), malformed URLs, and anything else as an opaque 500 that never leaks a
 * stack, SQL or a path (the real error goes to the log).
 */
export function errorMiddleware(log: (err: unknown) => void): ErrorRequestHandler {
  return (err, req, res, next) => {
    if (res.headersSent) { next(err); return; }
    if (err instanceof ApiError && !(err instanceof MethodNotAllowedError)) { sendError(res, err.status, err.grpcCode, err.message); return; }
    const v = err as ValidatorError;
    if (v.status === 400 && Array.isArray(v.errors)) {
      const message = describeValidatorError(v.errors[0], req) ?? v.errors.map((e) => `${e.path ?? ''} ${e.message ?? ''}`.trim()).join('; ');
      sendError(res, 400, GRPC.INVALID_ARGUMENT, message);
      return;
    }
    if (v.status === 404) { sendError(res, 404, GRPC.NOT_FOUND, `not found: ${req.method} ${shown(req.path)}`); return; }
    if (err instanceof MethodNotAllowedError || v.status === 405) {
      res.setHeader('Allow', 'GET, HEAD');
      sendError(res, 405, GRPC.UNIMPLEMENTED, `method not allowed: ${req.method} ${shown(req.path)}`);
      return;
    }
    if (err instanceof URIError || (err as { status?: number }).status === 400) {
      sendError(res, 400, GRPC.INVALID_ARGUMENT, `malformed request: ${shown((err as Error).message)}`);
      return;
    }
    log(err);
    sendError(res, 500, GRPC.INTERNAL, 'internal error');
  };
}
