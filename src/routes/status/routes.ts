import type { ApiRoute } from '../../http/route';
import { JSON_TYPE, sendJson } from '../../http/send';
import type { Snapshot } from '../../snapshot/open';
import { TIP } from '../../snapshot/tags';
import { snapshotOf } from '../context';

/**
 * /status: the snapshot's, rendered once per state. `grown` (a growing demo chain, serve
 * --start-height: src/serve/growth.ts) gives the body while the chain grows; it changes every
 * block, so it is sent with `no-store` and no ETag — no client, and not the response cache,
 * keeps it.
 */
export function statusRoutes(grown?: (s: Snapshot) => string | undefined): readonly ApiRoute[] {
  return [
    {
      path: '/status',
      query: [],
      reads: [TIP],
      handler: (_req, res) => {
        const s = snapshotOf(res);
        const body = grown?.(s);
        if (body === undefined) {
          sendJson(res, s.status);
          return;
        }
        res.setHeader('Cache-Control', 'no-store');
        res.removeHeader('ETag');
        if (res.app.locals.validateResponses === true) {
          res.json(JSON.parse(body));
          return;
        }
        res.setHeader('Content-Type', JSON_TYPE);
        res.setHeader('Content-Length', Buffer.byteLength(body));
        res.end(body);
      },
    },
  ];
}
