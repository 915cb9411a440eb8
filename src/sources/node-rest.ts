/**
 * `--rest-url`: proposer monikers from a chain node's REST API, for sources that only store the
 * proposer's valoper address (a rollytics database). Rollytics itself asks the node on every
 * /blocks request (docs/api-contract.md#live-node-calls: `GET /opinit/opchild/v1/validator/{proposer}`, using
 * `validator.moniker` and `validator.operator_address`); we ask once per distinct proposer at
 * import time and store the answers in the snapshot, as validators.ndjson records.
 *
 * A proposer the node does not know (404) is left out, so its blocks render the documented
 * fallback (docs/dump-format.md, validators.ndjson); any other failure — after the client's
 * retries on 5xx / 429 / timeouts — or an answer without the two fields stops the import,
 * naming the URL.
 */
import { NdjsonLine } from '../records/ndjson';
import { forEachConcurrent, HttpClient, HttpError, HttpOptions } from './http';
import { record } from '../records/source';

export interface RestLookupResult {
  /** validators.ndjson records, in the order of `proposers` */
  records: NdjsonLine[];
  /** proposers the node answered 404 for */
  unknown: string[];
}

export async function validatorsFromRest(restUrl: string, proposers: string[], o: HttpOptions): Promise<RestLookupResult> {
  const http = new HttpClient(restUrl, o);
  const found = new Map<string, NdjsonLine>();
  const unknown: string[] = [];
  await forEachConcurrent(proposers, o.concurrency, async (proposer) => {
    const path = `/opinit/opchild/v1/validator/${encodeURIComponent(proposer)}`;
    let body: string;
    try {
      body = await http.get(path);
    } catch (e) {
      if (e instanceof HttpError && e.status === 404) {
        unknown.push(proposer);
        return;
      }
      throw new Error(`--rest-url: ${(e as Error).message}`);
    }
    const url = http.base.replace(/\/+$/, '') + path;
    let v: { moniker?: unknown; operator_address?: unknown } | undefined;
    try {
      v = (JSON.parse(body) as { validator?: typeof v }).validator;
    } catch {
      throw new Error(`--rest-url: GET ${url}: the answer is not JSON: ${JSON.stringify(body.slice(0, 80))}`);
    }
    if (typeof v?.moniker !== 'string' || typeof v.operator_address !== 'string') {
      throw new Error(
        `--rest-url: GET ${url}: expected {"validator":{"moniker":string,"operator_address":string,...}}, got ${JSON.stringify(body.slice(0, 120))}`,
      );
    }
    found.set(proposer, record(`GET ${url}`, JSON.stringify({ proposer, moniker: v.moniker, operator_address: v.operator_address })));
  });
  return { records: proposers.filter((p) => found.has(p)).map((p) => found.get(p) as NdjsonLine), unknown };
}
