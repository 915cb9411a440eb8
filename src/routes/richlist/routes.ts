import { invalidValue } from '../../http/errors';
import { page, PAGE_QUERY, pathParam } from '../../http/params';
import type { ApiRoute } from '../../http/route';
import { sendPage } from '../../http/send';
import { denomTag } from '../../snapshot/tags';
import { snapshotOf } from '../context';

/** rollytics api/handler/richlist */
export const richListRoutes: readonly ApiRoute[] = [
  {
    path: '/indexer/richlist/v1/:denom',
    query: PAGE_QUERY,
    reads: (p, s) => {
      const stored = s.q.richlist.storedDenom(String(p.path.denom));
      return [denomTag(stored ?? String(p.path.denom))];
    },
    handler: (req, res) => {
      const q = snapshotOf(res).q.richlist;
      const denom = pathParam(req, 'denom');
      const stored = q.storedDenom(denom);
      if (stored === undefined) throw invalidValue('denom', denom, 'no ERC-20 contract is known for this denom');
      sendPage(res, 'holders', q.holders(stored, page(req)));
    },
  },
];
