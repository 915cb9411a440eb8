import type Database from 'better-sqlite3';
import { prepareBlockQueries } from './queries/block';
import { prepareEvmQueries, type EvmCounts } from './queries/evm';
import { prepareNftQueries } from './queries/nft';
import { prepareRichListQueries } from './queries/richlist';
import { STATUS_EXTENSIONS, statusJson, type StatusExtension } from '../wire/status';
import { prepareTxQueries } from './queries/tx';
import { metaValues } from './queries/base-rows';
import { openStore, StoreError } from './store';
import { quickCheck, quickCheckMessage } from './quick-check';
import { checkSnapshotFile, schemaVersionError, SnapshotError } from './file-check';
import { EVM_INTERNAL_TXS_META_KEY, READABLE_SCHEMA_VERSIONS, readableSchema } from './schema';
import { WIRE_FORMAT_META_KEY, WIRE_FORMAT_VERSION, wireFormatOf } from '../wire/format';
import { createHash, randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { readPackedRow } from '../wire/packed';
import { prepareChangeReader, type ChangeReader } from './changes';
import { prepareTagVersions, type TagVersionReader, type TagVersions } from './tag-versions';
import { COLLECTIONS } from './tags';
import type { CollectionNames } from './queries/collection-names';

import type { VmType } from '../lib/vm';

export interface SnapshotMeta {
  chainId: string;
  vmType: VmType;
  prefix: string;
  version: string;
  commitHash: string;
  height: number;
  internalTxHeight: number;
  richListHeight: number;
  /** rollytics' /status extension fields the import recorded (src/wire/status.ts) */
  extensions: Partial<Record<StatusExtension, number>>;
  snapshotId: string;
  createdAt: string;
  source: string;
  countBlocks: number;
  countTxs: number;
  countCollections: number;
  /** the stored JSON's wire format (docs/api-contract.md#stored-wire-format): 1 = the text itself, 2 = packed rows */
  wireFormat: number;
  /** EVM: the source indexes internal txs (false: its evm-internal-txs routes answer 404, and so do ours) */
  evmInternalTxs: boolean;
  /** PRAGMA user_version: 3 has the rich list's rank marks, 2 (still served) has not (src/snapshot/schema.ts) */
  schemaVersion: number;
}

export { SnapshotError };

/**
 * An open, checked, read-only snapshot file and its meta, no statement prepared: for callers
 * that do not serve it (follow, cut, publish, `import --base`, pull) and only need its VM type,
 * prefix, height or a few named reads.
 */
export interface SnapshotFile {
  file: string;
  db: Database.Database;
  meta: SnapshotMeta;
  close(): void;
}

/** An open, checked, read-only snapshot with every statement prepared. */
export interface Snapshot extends SnapshotFile {
  /** the /status body, rendered once */
  status: string;
  /**
   * Which file this is: its device and inode when opened (a follow batch commits to the same
   * file; a hot swap or a pull renames another over the path). Answers cached for one file are
   * carried to the next state of the same file by its change records (src/snapshot/changes.ts),
   * never to another file.
   */
  fileKey: string;
  /** the newest change record this snapshot's read transaction sees (0: none) */
  changeSeq: number;
  /** the change records, read in this snapshot's read transaction */
  changes: ChangeReader;
  /**
   * The chain this file holds: a hash of its chain id and its lowest block, the same on every
   * replica of that chain however it was made (followed, pulled, imported, `import --base`),
   * different for another chain. Part of every ETag (src/http/etag.ts).
   */
  lineage: string;
  /** the tag versions of this state (src/snapshot/tag-versions.ts): what an answer's ETag is a hash of (src/http/version-etag.ts) */
  versions: TagVersions;
  /**
   * Whether the rows this state's statements read now are still those its versions name — asked
   * after an answer is computed, before its ETag is made of the versions (src/http/send.ts). A
   * state of a WAL file is one read transaction: always. A file in rollback-journal mode (an
   * import's or a pull's output) is read statement by statement, and `follow` may start writing
   * it in place while it is served (its first commit turns it to WAL): only while no connection
   * has committed to the file since the state began (PRAGMA data_version, asked on this
   * connection). Otherwise the answer's ETag is that of its bytes, until the holder has the
   * follower's state (docs/response-cache.md "A file outside WAL mode written in place").
   */
  versionsHold(): boolean;
  q: {
    block: ReturnType<typeof prepareBlockQueries>;
    tx: ReturnType<typeof prepareTxQueries>;
    nft: ReturnType<typeof prepareNftQueries>;
    richlist: ReturnType<typeof prepareRichListQueries>;
    /** EVM snapshots only: the evm-txs and evm-internal-txs groups */
    evm?: ReturnType<typeof prepareEvmQueries>;
  };
}

export interface OpenOptions {
  /**
   * accept only the wire format this build renders (import --base of a base, which then renders it
   * again, passes false; serve reads every older format: each is the same JSON, stored otherwise)
   */
  currentWireFormatOnly?: boolean;
  /** run PRAGMA quick_check (reads the whole file; off by default so start-up stays O(1)) */
  verify?: boolean;
}

const REQUIRED_META = ['chain_id', 'vm_type', 'bech32_prefix', 'snapshot_id', 'count_blocks', 'count_txs', 'count_collections'];

/**
 * The stored JSON must be of a format this build reads (docs/api-contract.md#stored-wire-format):
 * any version from 1 to WIRE_FORMAT_VERSION (version 1 is served as is, without gzip).
 */
function checkWireFormat(version: number, file: string, opts: OpenOptions): void {
  if (version === WIRE_FORMAT_VERSION || (!opts.currentWireFormatOnly && version >= 1 && version < WIRE_FORMAT_VERSION)) return;
  throw new SnapshotError(
    version < WIRE_FORMAT_VERSION
      ? `snapshot's stored JSON is wire format ${version}, this indexer-api renders ${WIRE_FORMAT_VERSION} ` +
          `(render it again: indexer-api import --base ${file} --from-dump DIR --out NEW.sqlite, ` +
          `DIR holding new heights or none): ${file}`
      : `snapshot's stored JSON is wire format ${version}, newer than this indexer-api renders (${WIRE_FORMAT_VERSION}): ` +
          `use the indexer-api that built it: ${file}`,
  );
}

/** A non-SnapshotError while reading a file that passed the header checks: corrupt or incompatible. */
function corrupt(e: unknown, file: string): SnapshotError {
  return e instanceof SnapshotError ? e : new SnapshotError(`snapshot is corrupt or incompatible (${(e as Error).message}): ${file}`);
}

/**
 * Opens a snapshot read-only and refuses, with one line naming the file, anything that is not
 * a complete snapshot of this schema version: missing, not SQLite, truncated, wrong version,
 * unfinished import, or (with verify) a failed quick check. Reads its meta; prepares nothing.
 */
export function openSnapshotFile(file: string, opts: OpenOptions = {}): SnapshotFile {
  return openChecked(file, opts).file;
}

function openChecked(file: string, opts: OpenOptions): { file: SnapshotFile; evmCounts: EvmCounts; begun: number | undefined } {
  checkSnapshotFile(file);
  let db: Database.Database;
  try {
    db = openStore(file, 'read');
  } catch (e) {
    throw new SnapshotError(`cannot open snapshot ${file}: ${e instanceof StoreError ? e.reason : (e as Error).message}`);
  }
  try {
    const begun = beginRead(db);
    const { meta, evmCounts } = readMeta(db, file, opts);
    return { file: { file, db, meta, close: () => db.close() }, evmCounts, begun };
  } catch (e) {
    db.close();
    throw corrupt(e, file);
  }
}

/**
 * A WAL file may be written while it is served (`follow`): a snapshot is one read transaction
 * held from here to its end, so meta, counts and rows all come from one commit. A file in
 * rollback-journal mode cannot be: a reader's lock would keep every writer out. Its state is
 * read statement by statement, and what this returns — its `PRAGMA data_version` before the meta
 * is read — tells later whether another connection has committed since (Snapshot.versionsHold);
 * undefined in a read transaction.
 */
function beginRead(db: Database.Database): number | undefined {
  // read first: a connection that last read the file before a follower turned it to WAL learns
  // it by reading (PRAGMA journal_mode alone says what the connection last saw)
  const version = db.pragma('data_version', { simple: true }) as number;
  if (db.pragma('journal_mode', { simple: true }) === 'wal') {
    db.exec('BEGIN');
    db.prepare('SELECT count(*) FROM sqlite_schema').get();
    return undefined;
  }
  return version;
}

/** The checked meta of the state `db` reads (its read transaction begun). */
function readMeta(db: Database.Database, file: string, opts: OpenOptions): { meta: SnapshotMeta; evmCounts: EvmCounts } {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (!readableSchema(version)) {
    throw schemaVersionError(version, file);
  }
  if (opts.verify) {
    const check = quickCheck(file);
    if (check.problems > 0) throw new SnapshotError(quickCheckMessage(file, check));
  }
  const kv = metaValues(db);
  for (const k of REQUIRED_META) if (!kv.has(k)) throw new SnapshotError(`snapshot meta lacks ${k}: ${file}`);
  checkWireFormat(wireFormatOf(kv.get(WIRE_FORMAT_META_KEY)), file, opts);
  // user_version is the file's shape; meta schema_version is what the import wrote: both must agree.
  const metaVersion = kv.get('schema_version');
  if (metaVersion !== undefined && metaVersion !== String(version)) {
    throw new SnapshotError(
      `snapshot meta schema_version is ${JSON.stringify(metaVersion).slice(0, 40)}, its user_version ${version} ` +
        `(this indexer-api reads versions ${READABLE_SCHEMA_VERSIONS.join(' and ')}; re-import it): ${file}`,
    );
  }
  const num = (k: string): number => Number(kv.get(k) ?? 0);
  const meta: SnapshotMeta = {
    chainId: kv.get('chain_id') as string,
    vmType: kv.get('vm_type') as VmType,
    prefix: kv.get('bech32_prefix') as string,
    version: kv.get('version') ?? 'dev',
    commitHash: kv.get('commit_hash') ?? 'unknown',
    height: kv.has('height') ? num('height') : num('max_height'),
    internalTxHeight: num('internal_tx_height'),
    richListHeight: num('rich_list_height'),
    extensions: Object.fromEntries(STATUS_EXTENSIONS.filter((k) => kv.has(k)).map((k) => [k, num(k)])),
    snapshotId: kv.get('snapshot_id') as string,
    createdAt: kv.get('created_at') ?? '',
    source: kv.get('source') ?? '',
    countBlocks: num('count_blocks'),
    countTxs: num('count_txs'),
    countCollections: num('count_collections'),
    wireFormat: wireFormatOf(kv.get(WIRE_FORMAT_META_KEY)),
    evmInternalTxs: kv.get(EVM_INTERNAL_TXS_META_KEY) !== '0',
    schemaVersion: version,
  };
  return { meta, evmCounts: { txs: num('count_evm_txs'), internalTxs: num('count_evm_internal_txs') } };
}

/**
 * One served connection to a file: its statements, prepared once, and the state it reads now —
 * one read transaction (src/snapshot/holder.ts keeps a spare one for the next follow batch:
 * renewSnapshot). The statements read the meta of the state on their connection at call time
 * (`live`), so a new state needs no statement prepared again.
 */
interface Connection {
  db: Database.Database;
  meta: SnapshotMeta;
  evm: EvmCounts;
  changes: ChangeReader & { hasTable: boolean };
  tagVersions: TagVersionReader;
  /** PRAGMA data_version on this connection (asked outside a read transaction only) */
  dataVersion: Database.Statement;
  /** the state's data_version when it began outside a read transaction (beginRead); undefined: in one */
  begun: number | undefined;
  q: Snapshot['q'];
}

/** each state's connection (a Snapshot is one state of one connection) */
const connectionOf = new WeakMap<Snapshot, Connection>();

/** openSnapshotFile, then every statement of the API prepared and /status rendered: what `serve` holds. */
export function openSnapshot(file: string, opts: OpenOptions = {}): Snapshot {
  const before = fileIdentity(file);
  const { file: f, evmCounts, begun } = openChecked(file, opts);
  const { db, meta } = f;
  try {
    const c = {
      db,
      meta,
      evm: evmCounts,
      changes: prepareChangeReader(db),
      tagVersions: prepareTagVersions(db, meta.vmType === 'evm'),
      dataVersion: db.prepare('PRAGMA data_version').pluck(),
      begun,
    } as Connection;
    // what the statements read of the meta: the state now on the connection
    const live = {
      get countBlocks(): number {
        return c.meta.countBlocks;
      },
      get countTxs(): number {
        return c.meta.countTxs;
      },
      get countCollections(): number {
        return c.meta.countCollections;
      },
      get vmType(): VmType {
        return c.meta.vmType;
      },
      get prefix(): string {
        return c.meta.prefix;
      },
      get schemaVersion(): number {
        return c.meta.schemaVersion;
      },
    };
    const liveEvm: EvmCounts = {
      get txs(): number {
        return c.evm.txs;
      },
      get internalTxs(): number {
        return c.evm.internalTxs;
      },
    };
    c.q = {
      block: prepareBlockQueries(db, live),
      tx: prepareTxQueries(db, live),
      nft: prepareNftQueries(db, live),
      richlist: prepareRichListQueries(db, live),
      evm: meta.vmType === 'evm' ? prepareEvmQueries(db, liveEvm) : undefined,
    };
    // replaced between the stat and the open: an identity no other snapshot has (its cache starts empty)
    const after = fileIdentity(file);
    const fileKey = before !== undefined && before === after ? before : `unknown-${randomBytes(8).toString('hex')}`;
    return stateOf(c, file, fileKey, lineageOf(db, meta.chainId));
  } catch (e) {
    db.close();
    throw corrupt(e, file);
  }
}

/** A new Snapshot object for the state now on `c` (the response cache tells states apart by identity). */
function stateOf(c: Connection, file: string, fileKey: string, lineage: string): Snapshot {
  const status = statusJson(c.meta);
  const s: Snapshot = {
    file,
    db: c.db,
    meta: c.meta,
    close: () => c.db.close(),
    status,
    versions: c.tagVersions.forState(c.meta, c.evm.internalTxs, status),
    versionsHold: versionsHoldOf(c),
    fileKey,
    changeSeq: c.changes.seq(),
    changes: c.changes,
    lineage,
    q: c.q,
  };
  connectionOf.set(s, c);
  return s;
}

/** Snapshot.versionsHold of the state now on `c`. */
function versionsHoldOf(c: Connection): () => boolean {
  const begun = c.begun;
  if (begun === undefined) return () => true;
  const { dataVersion } = c;
  // once moved, never back (the state's meta stays what it began with); asked per answer computed, not per 304
  // (in rollback-journal mode SQLite takes and drops the file's lock for it: 6–7 µs, docs/response-cache.md)
  let holds = true;
  return () => holds && (holds = dataVersion.get() === begun);
}

/**
 * Ends the read transaction of `s`, a state no request holds any more and that is not served,
 * keeping its connection and statements for renewSnapshot (an idle connection holding an old
 * state would keep the WAL from being reset).
 */
export function endRead(s: Snapshot): void {
  if (s.db.open && s.db.inTransaction) s.db.exec('COMMIT');
}

/**
 * The newest committed state of the file of `spare`, on the connection of `spare` — a state of
 * the same file that no request holds and that is not served (endRead): a follow batch's new
 * state without opening the file or preparing a statement again (≈6 ms per batch and per serve
 * worker, bench/README.md "Batch reload"). Its read transaction is begun again and the meta read
 * again (counts, height, snapshot id, wire format, /status: everything a statement or /status
 * derives from it); what a state reads once (a dense list's bounds, avg_blocktime) is forgotten.
 * The by_name index of `previous` (the state served now) is carried when the change records
 * since it name no collection change (`cl`); otherwise it is built again at its next use. The
 * lineage stays (the same file, its lowest block does not move).
 *
 * Returns a new Snapshot object (fileKey of `spare`, changeSeq and changes of the new state).
 * `spare` must not be used again. Throws SnapshotError as openSnapshot does, having closed the
 * connection.
 */
export function renewSnapshot(spare: Snapshot, previous: Snapshot | undefined): Snapshot {
  const c = connectionOf.get(spare);
  if (c === undefined || !c.db.open) throw new Error('internal: renewSnapshot of a snapshot not opened by openSnapshot, or closed');
  const { db } = c;
  try {
    endRead(spare);
    const begun = beginRead(db);
    const { meta, evmCounts } = readMeta(db, spare.file, {});
    if (meta.vmType !== spare.meta.vmType || meta.chainId !== spare.meta.chainId) {
      throw new SnapshotError(`snapshot is now chain ${meta.chainId} (${meta.vmType}), was ${spare.meta.chainId} (${spare.meta.vmType}): ${spare.file}`);
    }
    c.meta = meta;
    c.evm = evmCounts;
    c.begun = begun;
    // a file first followed after it was served gets its change records table with the first batch
    if (!c.changes.hasTable) c.changes = prepareChangeReader(db);
    const seq = c.changes.seq();
    let carried: CollectionNames | undefined;
    const names = previous?.q.nft.namesIndex();
    if (previous !== undefined && names !== undefined && previous.fileKey === spare.fileKey) {
      const records =
        seq === previous.changeSeq
          ? meta.snapshotId === previous.meta.snapshotId
            ? []
            : undefined // a commit with no record: unknown changes
          : c.changes.since(previous.changeSeq, seq);
      if (records !== undefined && !records.some((r) => r.tags.includes(COLLECTIONS))) carried = names;
    }
    c.q.block.renew();
    c.q.tx.renew();
    c.q.nft.renew(carried);
    c.q.evm?.renew();
    // a file without blocks had a lineage of its chain id alone: its first block now names it
    const lineage = spare.meta.countBlocks === 0 ? lineageOf(db, meta.chainId) : spare.lineage;
    return stateOf(c, spare.file, spare.fileKey, lineage);
  } catch (e) {
    db.close();
    throw corrupt(e, spare.file);
  }
}

function fileIdentity(file: string): string | undefined {
  try {
    const st = statSync(file);
    return `${st.dev}:${st.ino}`;
  } catch {
    return undefined;
  }
}

/** The chain id and the lowest block's JSON, hashed: what every replica of one chain shares. */
function lineageOf(db: Database.Database, chainId: string): string {
  const first = db.prepare('SELECT height, json FROM blocks ORDER BY height LIMIT 1').get() as { height: number; json: Buffer | string } | undefined;
  const h = createHash('sha1').update(chainId).update('\n');
  if (first) h.update(String(first.height)).update('\n').update(readPackedRow(first.json));
  return h.digest('hex').slice(0, 16);
}
