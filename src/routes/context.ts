import type { Response } from 'express';
import type { Snapshot } from '../snapshot/open';

/** The snapshot this request is answered from (set once per request, so a hot swap is atomic). */
export function snapshotOf(res: Response): Snapshot {
  return res.locals.snapshot as Snapshot;
}
