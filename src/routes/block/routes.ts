import { NotFoundError } from '../../http/errors';
import { page, PAGE_QUERY, pathInt } from '../../http/params';
import type { ApiRoute } from '../../http/route';
import { sendJson, sendPage } from '../../http/send';
import { heightTag, TIP } from '../../snapshot/tags';
import { snapshotOf } from '../context';
import { blockResponse } from '../../wire/block';

/** rollytics api/handler/block */
export const blockRoutes: readonly ApiRoute[] = [
  {
    path: '/indexer/block/v1/avg_blocktime',
    query: [],
    reads: [TIP],
    handler: (_req, res) => sendJson(res, snapshotOf(res).q.block.avgBlockTime()),
  },
  {
    path: '/indexer/block/v1/blocks',
    query: PAGE_QUERY,
    reads: [TIP],
    handler: (req, res) => sendPage(res, 'blocks', snapshotOf(res).q.block.list(page(req))),
  },
  {
    path: '/indexer/block/v1/blocks/:height',
    query: [],
    reads: (p) => [heightTag(Number(p.path.height))],
    immutable: true,
    handler: (req, res) => {
      const height = pathInt(req, 'height');
      const json = snapshotOf(res).q.block.byHeight(height);
      if (json === undefined) throw new NotFoundError(`block not found: height ${BigInt(String(req.params.height))}`);
      sendJson(res, blockResponse(json));
    },
  },
];
