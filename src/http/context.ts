import type { Response } from 'express';
import type { Snapshot } from '../snapshot/open';
import type { ApiRoute } from './route';

/**
 * The one definition of what the request pipeline keeps on Express's `locals` (declaration
 * merging: `res.locals` and `app.locals` are both typed by this interface). src/serve/app.ts,
 * the route table and the response cache set the fields; the caching, sending and route modules read them through it, so a field
 * misspelled or of the wrong type is a compile error rather than an `undefined` at run time.
 */
declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      /**
       * res.locals: the snapshot this request is answered from, taken once per request (so a hot
       * swap is atomic for it) and held until its response closes
       */
      snapshot?: Snapshot;
      /**
       * res.locals: the declaration of the API route that matched (src/http/route.ts), set by
       * the router the route table builds (src/routes/table.ts) before its handler runs
       */
      route?: ApiRoute;
      /** app.locals: responses go through res.json so the OpenAPI validator checks them (tests) */
      validateResponses?: boolean;
      /**
       * res.locals: set by the response cache (src/cache/fill.ts httpCaching) when this answer may be
       * stored; sendJson hands it the 200's bytes, with the 200's headers set, also when it
       * answers the request 304
       */
      storeAnswer?: (body: Buffer) => void;
    }
  }
}

/** The snapshot this request is answered from; the app takes it before any route runs. */
export function snapshotOf(res: Response): Snapshot {
  const s = res.locals.snapshot;
  if (s === undefined) throw new Error(`no snapshot was taken for ${res.req.method} ${res.req.url}: the app takes one before any route runs`);
  return s;
}
