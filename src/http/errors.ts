import type { ErrorRequestHandler, Response } from 'express';
import { ApiError, errorJson, GRPC, invalidValue, MethodNotAllowedError, shown } from '../lib/api-errors';
import { rawQueryValues } from './url';

/**
 * One error shape for every error (docs/api-contract.md#errors), the key-value indexer's gRPC-gateway body:
 * {"code": <gRPC code>, "message": "...", "details": []}.
 */

// the error classes live below every layer that throws them; re-exported for the HTTP layer
export {
  ApiError,
  BadRequestError,
  errorJson,
  GRPC,
  invalidValue,
  MethodNotAllowedError,
  NotFoundError,
  shown,
  SHOWN_VALUE_CHARS,
  UnavailableError,
} from '../lib/api-errors';

export function sendError(res: Response, status: number, code: number, message: string): void {
  res.status(status).type('application/json').send(errorJson(code, message));
}

interface ValidatorErrorItem {
  path?: string;
  message?: string;
  errorCode?: string;
}
interface ValidatorError {
  status?: number;
  errors?: ValidatorErrorItem[];
  message?: string;
}

/** Which request value a validator error points at: `/query/pagination.limit` → its name and value. */
function describeValidatorError(item: ValidatorErrorItem | undefined, req: Parameters<ErrorRequestHandler>[1]): string | undefined {
  const m = item?.path?.match(/^[./]?(query|params|path)[./](.+)$/);
  if (!m || !item) return undefined;
  const name = m[2];
  const raw = m[1] === 'query' ? rawQueryValue(req.originalUrl, name) : rawPathValue(req, name);
  return invalidValue(name, raw ?? '', exactBounds(item.message ?? 'is invalid')).message;
}

/** 2^63 − 1, the int64 bound of openapi.yaml (a height), which JSON and YAML read as the double 2^63. */
const INT64_MAX_TEXT = '9223372036854775807';

/**
 * A bound in an Ajv message as a whole number: Ajv prints the schema's double, so the int64
 * maximum 9223372036854775807 reads `must be <= 9223372036854776000` (a float's digits).
 */
function exactBounds(message: string): string {
  return message.replace(/(must be [<>]=? )(\d+(?:\.\d+)?(?:e\+?\d+)?)$/, (all, lead: string, num: string) => {
    const n = Number(num);
    if (Number.isSafeInteger(n) || !Number.isInteger(n)) return all;
    return lead + (n === 2 ** 63 ? INT64_MAX_TEXT : BigInt(n).toString());
  });
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
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function rawQueryValue(url: string, name: string): string | undefined {
  const values = rawQueryValues(url, name);
  return values.length ? values.join(',') : undefined;
}

/**
 * SQLite's "the file is damaged or unreadable" errors (extended codes too, e.g.
 * SQLITE_IOERR_SHORT_READ): the snapshot, not the request, is at fault.
 */
function isStorageError(err: unknown): err is Error & { code: string } {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^SQLITE_(CORRUPT|IOERR|NOTADB)(_|$)/.test(code);
}

/**
 * The single error middleware: our ApiErrors, express-openapi-validator errors (which carry
 * `status` and `errors`), malformed URLs, and anything else as an opaque 500 that never leaks a
 * stack, SQL or a path (the real error goes to the log).
 */
export function errorMiddleware(log: (err: unknown) => void, onStorageError?: (err: Error & { code: string }, res: Response) => void): ErrorRequestHandler {
  return (err, req, res, next) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    if (isStorageError(err)) {
      // a broken replica: 503 (the client may retry elsewhere), and the replica leaves rotation
      onStorageError?.(err, res);
      res.setHeader('Retry-After', '1');
      sendError(res, 503, GRPC.UNAVAILABLE, 'snapshot unavailable: the file is damaged; try another replica');
      return;
    }
    if (err instanceof ApiError && !(err instanceof MethodNotAllowedError)) {
      sendError(res, err.status, err.grpcCode, err.message);
      return;
    }
    const v = err as ValidatorError;
    if (v.status === 400 && Array.isArray(v.errors)) {
      const message = describeValidatorError(v.errors[0], req) ?? v.errors.map((e) => `${shown(e.path ?? '')} ${e.message ?? ''}`.trim()).join('; ');
      sendError(res, 400, GRPC.INVALID_ARGUMENT, message);
      return;
    }
    if (v.status === 404) {
      sendError(res, 404, GRPC.NOT_FOUND, `not found: ${req.method} ${shown(req.path)}`);
      return;
    }
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
