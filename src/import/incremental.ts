/**
 * `import --base old.sqlite --from-dump NEW_DIR --out new.sqlite`: the next snapshot from the
 * previous one plus new heights.
 *
 * The base snapshot is turned back into dump-format records (blocks, txs with their stored
 * accounts and signer, NFTs, rich list, ...) and streamed ahead of the new source's records
 * through the same validating loader into a fresh temporary file, renamed over --out at the
 * end. Nothing is re-derived from events for the base part and nothing is held in memory per
 * row, but the whole snapshot is rewritten (O(total rows), see bench/import/README.md).
 *
 * What the new source's kinds mean:
 * - `blocks`, `txs`, `token_txs` (history) are appended: new blocks must come after the base's
 *   highest height and new sequences after its highest sequence (the loader checks both).
 * - `collections`, `tokens`, `richlist`, `denom_contracts` (current state) REPLACE the base's
 *   when the new source has them (a dump file present, even empty), else the base's are kept.
 * - `validators` are merged, the new source winning for a proposer listed in both.
 * - `meta`: optional; if present it must name the same chain id, VM type and prefix and it
 *   supplies version, commit, height and rich-list height. If absent the base's meta is kept,
 *   except that /status height becomes the new highest block.
 */
import type Database from 'better-sqlite3';
import { amountFromKey } from '../lib/amount';
import { toHex0x } from '../lib/address';
import { DumpError } from './dump-error';
import { evmBaseRecords } from './evm';
import { NdjsonLine } from './ndjson';
import { openSnapshot, Snapshot, SnapshotError } from '../snapshot/open';
import { concat, ImportSource, record } from './sources/source';

const STATE_KINDS = new Set(['collections', 'tokens', 'richlist', 'denom_contracts']);

function* iterate<T>(db: Database.Database, sql: string, ...params: unknown[]): Generator<T> {
  yield* db.prepare(sql).iterate(...params) as IterableIterator<T>;
}

function micros(us: number): string {
  const ms = Math.floor(us / 1000);
  const iso = new Date(ms).toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ
  return `${iso.slice(0, 19)}.${String(us - Math.floor(us / 1e6) * 1e6).padStart(6, '0')}Z`;
}

/** The records of a base snapshot, kind by kind, as the loader expects them. */
function baseRecords(s: Snapshot, kind: string, newValidators: Set<string>): Iterable<NdjsonLine> | undefined {
  const db = s.db;
  const at = (what: string): string => `base ${s.file} ${what}`;
  switch (kind) {
    case 'meta': {
      const kv = new Map((db.prepare('SELECT key, value FROM meta').all() as { key: string; value: string }[]).map((r) => [r.key, r.value]));
      return [record(at('meta'), JSON.stringify({
        chain_id: kv.get('chain_id'), vm_type: kv.get('vm_type'), bech32_prefix: kv.get('bech32_prefix'),
        version: kv.get('version'), commit_hash: kv.get('commit_hash'), source: kv.get('source'),
        internal_tx_height: kv.has('internal_tx_height_derived') ? undefined : Number(kv.get('internal_tx_height') ?? 0), rich_list_height: Number(kv.get('rich_list_height') ?? 0),
      }))];
    }
    case 'validators':
      return (function* () {
        for (const v of iterate<{ proposer: string; moniker: string; operator_address: string }>(db,
          'SELECT proposer, moniker, operator_address FROM validators ORDER BY proposer')) {
          if (newValidators.has(v.proposer)) continue;
          yield record(at(`validator ${v.proposer}`), JSON.stringify(v));
        }
      })();
    case 'blocks': {
      // The stored proposer string is not kept, only what it rendered as: map back through the
      // validators (listed: moniker + operator address; unlisted: moniker "" and the proposer).
      const byRender = new Map<string, string>();
      for (const v of iterate<{ proposer: string; moniker: string; operator_address: string }>(db,
        'SELECT proposer, moniker, operator_address FROM validators ORDER BY proposer DESC')) {
        byRender.set(`${v.moniker}\u0000${v.operator_address}`, v.proposer);
      }
      return (function* () {
        for (const b of iterate<{ height: number; time_us: number; json: string }>(db, 'SELECT height, time_us, json FROM blocks ORDER BY height')) {
          const j = JSON.parse(b.json) as {
            chain_id: string; hash: string; block_time: string; gas_used: string; gas_wanted: string; tx_count: string;
            total_fee: unknown; proposer: { moniker: string; operator_address: string };
          };
          const proposer = byRender.get(`${j.proposer.moniker}\u0000${j.proposer.operator_address}`) ?? j.proposer.operator_address;
          yield record(at(`block ${b.height}`), JSON.stringify({
            height: b.height, chain_id: j.chain_id, hash: j.hash, timestamp: micros(b.time_us), block_time: j.block_time,
            proposer, gas_used: j.gas_used, gas_wanted: j.gas_wanted, tx_count: j.tx_count, total_fee: j.total_fee,
          }));
        }
      })();
    }
    case 'txs':
      return (function* () {
        // Merge-join txs with their account links, both in sequence order.
        const links = iterate<{ sequence: number; signer: number; addr: Buffer }>(db,
          'SELECT ta.sequence, ta.signer, a.addr FROM tx_accounts ta JOIN accounts a ON a.id = ta.account_id ORDER BY ta.sequence');
        let link = links.next();
        for (const t of iterate<{ sequence: number; json: string }>(db, 'SELECT sequence, json FROM txs ORDER BY sequence')) {
          while (!link.done && link.value.sequence < t.sequence) link = links.next();
          let signer: string | undefined;
          const accounts: string[] = [];
          while (!link.done && link.value.sequence === t.sequence) {
            const hex = link.value.addr.toString('hex');
            if (link.value.signer) signer = hex;
            else accounts.push(hex);
            link = links.next();
          }
          let text = '{"sequence":' + t.sequence;
          if (signer !== undefined) text += ',"signer":"0x' + signer + '"';
          text += ',"accounts":[' + accounts.map((a) => '"0x' + a + '"').join(',') + '],"tx":' + t.json + '}';
          yield record(at(`tx ${t.sequence}`), text);
        }
      })();
    case 'collections':
      return (function* () {
        for (const c of iterate<{ addr: Buffer; creator: Buffer; name: string; origin_name: string; height: number; timestamp: string }>(db,
          `SELECT c.addr, a.addr AS creator, c.name, c.origin_name, c.height, c.timestamp
           FROM collections c JOIN accounts a ON a.id = c.creator_id ORDER BY c.height, c.addr`)) {
          yield record(at(`collection ${toHex0x(c.addr)}`), JSON.stringify({
            object_addr: toHex0x(c.addr), creator: toHex0x(c.creator), name: c.name, origin_name: c.origin_name,
            height: c.height, timestamp: c.timestamp,
          }));
        }
      })();
    case 'tokens':
      return (function* () {
        for (const n of iterate<{ collection_addr: Buffer; token_id: string; json: string }>(db,
          'SELECT collection_addr, token_id, json FROM nfts ORDER BY collection_addr, token_id')) {
          const j = JSON.parse(n.json) as { object_addr: string; owner: string; nft: { uri: string }; height: number; timestamp: string };
          yield record(at(`token ${toHex0x(n.collection_addr)} ${JSON.stringify(n.token_id)}`), JSON.stringify({
            collection_addr: toHex0x(n.collection_addr), token_id: n.token_id,
            object_addr: j.object_addr === '' ? undefined : j.object_addr,
            owner: j.owner, uri: j.nft.uri, height: j.height, timestamp: j.timestamp,
          }));
        }
      })();
    case 'token_txs':
      return (function* () {
        for (const l of iterate<{ collection_addr: Buffer; token_id: string; sequence: number }>(db,
          'SELECT collection_addr, token_id, sequence FROM nft_txs ORDER BY collection_addr, token_id, sequence')) {
          yield record(at(`token tx ${toHex0x(l.collection_addr)} ${JSON.stringify(l.token_id)} ${l.sequence}`), JSON.stringify({
            collection_addr: toHex0x(l.collection_addr), token_id: l.token_id, sequence: l.sequence,
          }));
        }
      })();
    case 'richlist':
      return (function* () {
        for (const h of iterate<{ denom: string; amount_key: string; account: Buffer }>(db,
          'SELECT denom, amount_key, account FROM richlist ORDER BY denom, amount_key, account')) {
          yield record(at(`holder ${h.denom} ${toHex0x(h.account)}`), JSON.stringify({
            denom: h.denom, account: toHex0x(h.account), amount: amountFromKey(h.amount_key),
          }));
        }
      })();
    case 'denom_contracts':
      return (function* () {
        for (const d of iterate<{ denom: string; contract: string }>(db, 'SELECT denom, contract FROM denom_contracts ORDER BY denom')) {
          yield record(at(`denom contract ${d.denom}`), JSON.stringify(d));
        }
      })();
    default:
      return evmBaseRecords(db, kind, at);
  }
}

/** Reads all records of an iterable into memory (only for small kinds: meta, validators). */
async function collect(it: AsyncIterable<NdjsonLine> | undefined): Promise<NdjsonLine[] | undefined> {
  if (!it) return undefined;
  const out: NdjsonLine[] = [];
  for await (const r of it) out.push(r);
  return out;
}

/** The base snapshot's records followed (or replaced, see above) by those of `next`. */
export async function incrementalSource(basePath: string, next: ImportSource): Promise<ImportSource> {
  let base: Snapshot;
  try {
    base = openSnapshot(basePath);
  } catch (e) {
    if (e instanceof SnapshotError) throw new Error(`--base: ${e.message}`);
    throw e;
  }
  try {
    const m = base.meta;
    const newMeta = await collect(next.records('meta'));
    if (newMeta && newMeta.length === 1) {
      let obj: Record<string, unknown>;
      try { obj = JSON.parse(newMeta[0].text) as Record<string, unknown>; } catch { obj = {}; }
      const want: [string, string][] = [['chain_id', m.chainId], ['vm_type', m.vmType], ['bech32_prefix', m.prefix]];
      for (const [k, v] of want) {
        if (obj[k] !== undefined && obj[k] !== v) {
          throw new DumpError(newMeta[0].file, newMeta[0].line, k, `is ${JSON.stringify(obj[k])} but the base snapshot ${basePath} has ${JSON.stringify(v)}`);
        }
      }
    }
    const newValidators = await collect(next.records('validators'));
    const redefined = new Set<string>();
    for (const v of newValidators ?? []) {
      try { redefined.add((JSON.parse(v.text) as { proposer: string }).proposer); } catch { /* the loader reports it */ }
    }
    return {
      describe: `${base.file} + ${next.describe}`,
      lineBased: next.lineBased,
      records(kind) {
        if (kind === 'meta') {
          if (newMeta) return concat(newMeta);
          const [b] = [...(baseRecords(base, 'meta', redefined) ?? [])];
          const obj = JSON.parse(b.text) as Record<string, unknown>;
          obj.source = `${String(obj.source ?? '')} + ${next.describe}`;
          return concat([{ ...b, text: JSON.stringify(obj) }]);
        }
        if (kind === 'validators') return concat(baseRecords(base, kind, redefined), newValidators);
        const fresh = next.records(kind);
        if (STATE_KINDS.has(kind) && fresh) return fresh;
        return concat(baseRecords(base, kind, redefined), fresh);
      },
      total: (kind) => next.total?.(kind),
      stats: next.stats ? () => next.stats?.() ?? {} : undefined,
      dispose() {
        try { base.close(); } catch { /* closing anyway */ }
        next.dispose?.();
      },
      async close() {
        base.close();
        await next.close();
      },
    };
  } catch (e) {
    base.close();
    throw e;
  }
}
