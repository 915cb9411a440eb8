import { Router } from 'express';
import { NotFoundError } from '../../http/errors';
import { page, pathInt } from '../../http/params';
import { sendJson, sendPage } from '../../http/send';
import { snapshotOf } from '../context';
import { blockResponse } from '../../wire/block';

/** rollytics api/handler/block */
export function blockRouter(): Router {
  return Router()
    .get('/indexer/block/v1/avg_blocktime', (_req, res) => sendJson(res, snapshotOf(res).q.block.avgBlockTime()))
    .get('/indexer/block/v1/blocks', (req, res) => sendPage(res, 'blocks', snapshotOf(res).q.block.list(page(req))))
    .get('/indexer/block/v1/blocks/:height', (req, res) => {
      const height = pathInt(req, 'height');
      const json = snapshotOf(res).q.block.byHeight(height);
      if (json === undefined) throw new NotFoundError(`block not found: height ${BigInt(String(req.params.height))}`);
      sendJson(res, blockResponse(json));
    });
}
