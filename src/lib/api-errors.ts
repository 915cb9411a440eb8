/**
 * The errors a request can end in, as the API reports them (docs/api-contract.md#errors): an
 * HTTP status, a gRPC code and a message safe to show the client. Thrown by any layer that
 * judges request input (pagination keys in src/snapshot/, parameters in src/http/);
 * src/http/errors.ts turns them into the one error body.
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

/** 503: no snapshot is loaded, or the one loaded is damaged. */
export class UnavailableError extends ApiError {
  constructor(message: string) { super(503, GRPC.UNAVAILABLE, message); }
}

export function errorJson(code: number, message: string): string {
  return JSON.stringify({ code, message, details: [] });
}
