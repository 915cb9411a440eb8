/**
 * `import --base old.sqlite --from-dump NEW_DIR --out new.sqlite`: the next snapshot from the
 * previous one plus new heights, from any source.
 *
 * The base file is copied to the temporary target (SnapshotWriter.extend; the base itself is
 * never modified) and only the new source's records go through the validating loader, applied
 * in place on the copy: appended history, adjusted counts, diffed current state. The cost is
 * the copy (a sequential read + write, or a reflink) plus work proportional to the new data;
 * see bench/import/README.md.
 *
 * What the new source's kinds mean:
 * - `blocks`, `txs`, `token_txs` (history) are appended: the first new block must be the
 *   base's highest height + 1 (an overlap or a gap is refused, naming both heights), new
 *   sequences must come after the base's highest.
 * - `collections`, `tokens`, `richlist`, `denom_contracts` (current state) REPLACE the base's
 *   when the new source has them (a dump file present, even empty), else the base's are kept.
 *   Collections and tokens are compared with the base's and only changed rows are rewritten
 *   and recounted; tokens delivered without collections are checked against the base's.
 * - `validators` are merged, the new source winning for a proposer listed in both; blocks
 *   already in the base keep the proposer rendering they were imported with.
 * - `meta`: optional; if present it must name the same chain id, VM type and prefix and it
 *   supplies version, commit, height and rich-list height. If absent the base's meta is kept,
 *   except that /status height becomes the new highest block.
 *
 * The steps that touch each table group live in SnapshotWriter (applyTxCounts,
 * applyNftState, beginKind for the replaced state kinds): a new table group adds its own step.
 */
import { toHex0x } from '../lib/address';
import { readPackedRow } from '../wire/packed';
import { DumpError } from './dump-error';
import { NdjsonLine } from './ndjson';
import { openSnapshotFile, SnapshotFile, SnapshotError } from '../snapshot/open';
import { collectionRows, metaValues, nftRows, validatorRows } from '../snapshot/queries/base-rows';
import { prepareTipQueries } from '../snapshot/queries/tip';
import { concat, ImportSource, record } from './source';
import type { BaseInfo } from '../snapshot/writer';

/** The base snapshot's records of a small kind, as the loader expects them. */
function baseRecords(s: SnapshotFile, kind: string, newValidators: Set<string>): Iterable<NdjsonLine> | undefined {
  const db = s.db;
  const at = (what: string): string => `base ${s.file} ${what}`;
  switch (kind) {
    case 'meta': {
      const kv = metaValues(db);
      return [
        record(
          at('meta'),
          JSON.stringify({
            chain_id: kv.get('chain_id'),
            vm_type: kv.get('vm_type'),
            bech32_prefix: kv.get('bech32_prefix'),
            version: kv.get('version'),
            commit_hash: kv.get('commit_hash'),
            source: kv.get('source'),
            internal_tx_height: kv.has('internal_tx_height_derived') ? undefined : Number(kv.get('internal_tx_height') ?? 0),
            rich_list_height: Number(kv.get('rich_list_height') ?? 0),
          }),
        ),
      ];
    }
    case 'validators':
      return (function* () {
        for (const v of validatorRows(db)) {
          if (newValidators.has(v.proposer)) continue;
          yield record(at(`validator ${v.proposer}`), JSON.stringify(v));
        }
      })();
    case 'collections':
      return (function* () {
        for (const c of collectionRows(db)) {
          yield record(
            at(`collection ${toHex0x(c.addr)}`),
            JSON.stringify({
              object_addr: toHex0x(c.addr),
              creator: toHex0x(c.creator),
              name: c.name,
              origin_name: c.origin_name,
              height: c.height,
              timestamp: c.timestamp,
            }),
          );
        }
      })();
    case 'tokens':
      return (function* () {
        for (const n of nftRows(db)) {
          const j = JSON.parse(readPackedRow(n.json)) as { object_addr: string; owner: string; nft: { uri: string }; height: number; timestamp: string };
          yield record(
            at(`token ${toHex0x(n.collection_addr)} ${JSON.stringify(n.token_id)}`),
            JSON.stringify({
              collection_addr: toHex0x(n.collection_addr),
              token_id: n.token_id,
              object_addr: j.object_addr === '' ? undefined : j.object_addr,
              owner: j.owner,
              uri: j.nft.uri,
              height: j.height,
              timestamp: j.timestamp,
            }),
          );
        }
      })();
    default:
      return undefined;
  }
}

/** Reads all records of an iterable into memory (only for small kinds: meta, validators). */
async function collect(it: AsyncIterable<NdjsonLine> | undefined): Promise<NdjsonLine[] | undefined> {
  if (!it) return undefined;
  const out: NdjsonLine[] = [];
  for await (const r of it) out.push(r);
  return out;
}

export interface IncrementalSource {
  source: ImportSource;
  base: BaseInfo;
}

/**
 * The records to apply on a copy of the base snapshot: the new source's, plus what the loader
 * needs from the base to validate and render them (meta when the source has none, validators,
 * the other half of the collections / tokens pair).
 */
export async function incrementalSource(basePath: string, next: ImportSource): Promise<IncrementalSource> {
  let base: SnapshotFile;
  try {
    base = openSnapshotFile(basePath, {});
  } catch (e) {
    if (e instanceof SnapshotError) throw new Error(`--base: ${e.message}`);
    throw e;
  }
  try {
    const m = base.meta;
    const tip = prepareTipQueries(base.db);
    const info: BaseInfo = { file: basePath, height: tip.height(), sequence: tip.txSequence() };
    const newMeta = await collect(next.records('meta'));
    if (newMeta && newMeta.length === 1) {
      let obj: Record<string, unknown>;
      try {
        obj = JSON.parse(newMeta[0].text) as Record<string, unknown>;
      } catch {
        obj = {};
      }
      const want: [string, string][] = [
        ['chain_id', m.chainId],
        ['vm_type', m.vmType],
        ['bech32_prefix', m.prefix],
      ];
      for (const [k, v] of want) {
        if (obj[k] !== undefined && obj[k] !== v) {
          throw new DumpError(newMeta[0].file, newMeta[0].line, k, `is ${JSON.stringify(obj[k])} but the base snapshot ${basePath} has ${JSON.stringify(v)}`);
        }
      }
    }
    const newValidators = await collect(next.records('validators'));
    const redefined = new Set<string>();
    for (const v of newValidators ?? []) {
      try {
        redefined.add((JSON.parse(v.text) as { proposer: string }).proposer);
      } catch {
        /* the loader reports it */
      }
    }
    const [baseMeta] = [...(baseRecords(base, 'meta', redefined) ?? [])];
    const metaObj = JSON.parse(baseMeta.text) as Record<string, unknown>;
    metaObj.source = `${String(metaObj.source ?? '')} + ${next.describe}`;
    const metaRecords = newMeta ?? [{ ...baseMeta, text: JSON.stringify(metaObj) }];
    // The base's validators and NFT state are read now: the base is closed before it is copied.
    const baseValidators = [...(baseRecords(base, 'validators', redefined) ?? [])];
    const hasCollections = next.records('collections') !== undefined;
    const hasTokens = next.records('tokens') !== undefined;
    const baseCollections = hasTokens && !hasCollections ? [...(baseRecords(base, 'collections', redefined) ?? [])] : undefined;
    const baseTokens = hasCollections && !hasTokens ? [...(baseRecords(base, 'tokens', redefined) ?? [])] : undefined;
    base.close();
    return {
      base: info,
      source: {
        describe: `${basePath} + ${next.describe}`,
        lineBased: next.lineBased,
        records(kind) {
          switch (kind) {
            case 'meta':
              return concat(metaRecords);
            case 'validators':
              return concat(baseValidators, newValidators);
            case 'collections':
              return next.records(kind) ?? (baseCollections && concat(baseCollections));
            case 'tokens':
              return next.records(kind) ?? (baseTokens && concat(baseTokens));
            default:
              return next.records(kind);
          }
        },
        lineBatches: next.lineBatches ? (kind, alloc) => next.lineBatches?.(kind, alloc) : undefined,
        total: (kind) => next.total?.(kind),
        stats: next.stats ? () => next.stats?.() ?? {} : undefined,
        partialKinds: next.partialKinds ? () => next.partialKinds?.() ?? new Set() : undefined,
        completeCollections: next.completeCollections ? () => next.completeCollections?.() ?? new Set() : undefined,
        fullStateReason: () => next.fullStateReason?.(),
        dispose() {
          next.dispose?.();
        },
        async close() {
          await next.close();
        },
      },
    };
  } catch (e) {
    if (base.db.open) base.close();
    throw e;
  }
}
