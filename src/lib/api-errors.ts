/**
 * The errors a request can end in, as the API reports them (docs/api-contract.md#errors): an
 * HTTP status, a gRPC code and a message safe to show the client. Thrown by any layer that
 * judges request input (pagination keys in src/snapshot/, parameters in src/http/);
 * src/http/errors.ts turns them into the one error body.
 */

export const GRPC = { INVALID_ARGUMENT: 3, NOT_FOUND: 5, UNIMPLEMENTED: 12, INTERNAL: 13, UNAVAILABLE: 14 } as const;

/** An error with an HTTP status whose message is safe to show the client. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly grpcCode: number,
    message: string,
  ) {
    super(message);
  }
}

/** 400: the request names a bad value. */
export class BadRequestError extends ApiError {
  constructor(message: string) {
    super(400, GRPC.INVALID_ARGUMENT, message);
  }
}

/** 404: unknown route or missing single object; a client's value in its message goes through shown(). */
export class NotFoundError extends ApiError {
  constructor(message: string) {
    super(404, GRPC.NOT_FOUND, message);
  }
}

/** 405: the route exists, the method does not (every route answers GET and HEAD only). */
export class MethodNotAllowedError extends ApiError {
  constructor(method: string, path: string) {
    super(405, GRPC.UNIMPLEMENTED, `method not allowed: ${method} ${shown(path)}`);
  }
}

/** 503: no snapshot is loaded, or the one loaded is damaged. */
export class UnavailableError extends ApiError {
  constructor(message: string) {
    super(503, GRPC.UNAVAILABLE, message);
  }
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
