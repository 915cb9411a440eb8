/**
 * The crawl's staging database (a file beside --out, or memory for follow's small batches) and
 * the records read back from it in the loader's order: what the API cannot give in that order
 * cheaply (validators before blocks, block times that need the txs) is put right here.
 */
import { existsSync, unlinkSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type Database from 'better-sqlite3';
import { openStore } from '../../snapshot/store';
import type { VmType } from '../../lib/vm';
import type { NdjsonLine } from '../../records/ndjson';
import { ImportSource, ndjsonFile, record, ResumableLoad } from '../../records/source';
import { STATUS_EXTENSIONS } from '../../wire/status';
import type { HttpClient } from '../http';
import type { Status } from './answers';
import type { ApiSourceOptions } from './options';
import { txPages } from './resume';

function parseUtcMicros(text: string): number | undefined {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z$/.exec(text);
  if (!m) return undefined;
  return Date.parse(`${m[1]}Z`) * 1000 + Number((m[2] ?? '').padEnd(9, '0').slice(0, 6));
}

function formatMicrosUtc(us: number): string {
  const sec = Math.floor(us / 1e6);
  return `${new Date(sec * 1000).toISOString().slice(0, 19)}.${String(us - sec * 1e6).padStart(6, '0')}Z`;
}

export const STAGING_SQL = `
  CREATE TABLE blocks (height INTEGER PRIMARY KEY, text TEXT NOT NULL, seconds TEXT NOT NULL, block_time INTEGER NOT NULL, tx_count INTEGER NOT NULL);
  CREATE TABLE block_times (height INTEGER PRIMARY KEY, ts TEXT NOT NULL);
  CREATE TABLE validators (operator TEXT PRIMARY KEY, moniker TEXT NOT NULL);
  CREATE TABLE txs (sequence INTEGER PRIMARY KEY, height INTEGER NOT NULL, hash TEXT NOT NULL, text TEXT NOT NULL);
  CREATE TABLE collections (addr TEXT PRIMARY KEY, height INTEGER NOT NULL, nft_count INTEGER, text TEXT NOT NULL);
  CREATE TABLE tokens (collection TEXT NOT NULL, token_id TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY (collection, token_id)) WITHOUT ROWID;
  CREATE TABLE token_txs (collection TEXT NOT NULL, token_id TEXT NOT NULL, sequence INTEGER NOT NULL, PRIMARY KEY (collection, token_id, sequence)) WITHOUT ROWID;
  CREATE TABLE holders (denom TEXT NOT NULL, account TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY (denom, account)) WITHOUT ROWID;
  CREATE TABLE evm_txs (height INTEGER NOT NULL, pos INTEGER NOT NULL, text TEXT NOT NULL, PRIMARY KEY (height, pos)) WITHOUT ROWID;
  CREATE TABLE evm_internal_txs (height INTEGER NOT NULL, pos INTEGER NOT NULL, text TEXT NOT NULL, PRIMARY KEY (height, pos)) WITHOUT ROWID;
  CREATE TABLE tx_pages (first INTEGER PRIMARY KEY, texts BLOB NOT NULL, lengths TEXT NOT NULL);
  CREATE TABLE crawl_state (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
  CREATE TABLE cursors (name TEXT PRIMARY KEY, next_key TEXT, pos INTEGER NOT NULL, done INTEGER NOT NULL) WITHOUT ROWID;`;

/**
 * An import's crawl staging: `.NAME.crawl` beside --out. Not a temporary file of the crash
 * clean-up (src/snapshot/store.ts cleanStaleTemps): it is kept when a crawl fails or is killed,
 * so that the same command continues it (docs/follow.md "A crawl that resumes"), and removed
 * once the snapshot it was for is in place.
 */
export function crawlStagingPath(out: string): string {
  return join(dirname(resolve(out)), `.${basename(out)}.crawl`);
}

/**
 * The load of an import's crawl: `.NAME.load` beside --out, committed as it goes and kept with
 * the staging (src/snapshot/writer.ts SnapshotWriter.resumable), renamed over --out at its end.
 */
export function crawlLoadPath(out: string): string {
  return join(dirname(resolve(out)), `.${basename(out)}.load`);
}

/** Removes a crawl staging file (and its -wal). */
export function removeStagingFile(path: string): void {
  for (const f of [path, `${path}-wal`, `${path}-journal`]) {
    try {
      if (existsSync(f)) unlinkSync(f);
    } catch {
      /* already gone */
    }
  }
}

/**
 * The crawl's staging database: a file, or (stageInMemory) memory until a read too big for it
 * (spill()). Whoever reads it asks for `db` each time (it is another connection after a spill).
 */
export class Staging {
  db: Database.Database;
  /** the file in use; undefined while in memory */
  private file: string | undefined;
  /** rows a previous run committed (a resumed crawl): the file existed with the crawl's state */
  readonly resumed: boolean;

  /**
   * `resumable` (an import's crawl): the file is kept on failure and reopened by the next run
   * (crash-safe commits, ./resume.ts); otherwise a throw-away file or memory.
   */
  constructor(
    readonly path: string,
    inMemory: boolean,
    readonly resumable = false,
  ) {
    this.file = inMemory ? undefined : path;
    const existed = resumable && existsSync(path);
    this.db = openStore(inMemory ? ':memory:' : path, resumable ? 'resumable' : 'scratch');
    this.resumed = existed && (this.db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'crawl_state'").pluck().get() as number) > 0;
    // a resumable staging shrinks as the load commits its txs (ResumableLoad.loaded): the pages
    // freed go back to the file system (set before the first table)
    // (set before the first table; the file is already in WAL mode, so it takes a VACUUM of the empty file)
    if (!this.resumed && resumable && !inMemory) this.db.exec('PRAGMA auto_vacuum = INCREMENTAL; VACUUM');
    if (!this.resumed) this.db.exec(STAGING_SQL);
  }

  get inMemory(): boolean {
    return this.file === undefined;
  }

  /** Moves an in-memory staging to its file (nothing may hold a statement of the old one). */
  spill(): void {
    if (this.file !== undefined) return;
    this.db.prepare('VACUUM INTO ?').run(this.path);
    this.db.close();
    this.file = this.path;
    this.db = openStore(this.path, 'scratch');
  }

  /** Closes it; a throw-away staging is removed, a resumable one kept (removeStagingFile). */
  dispose(): void {
    try {
      if (this.db.open) this.db.close();
    } catch {
      /* closing anyway */
    }
    if (this.resumable) return;
    try {
      if (this.file !== undefined && existsSync(this.file)) unlinkSync(this.file);
    } catch {
      /* already gone */
    }
  }
}

/** What a crawl left besides its staged rows (crawlInto, ./source.ts). */
export interface Crawl {
  status: Status;
  vmType: VmType;
  from: number;
  to: number;
  denomContracts: Map<string, string>;
  /** the tokens are the changed ones only (nftChangesSince held) */
  changedTokensOnly: boolean;
  /** why every token was read although nftChangesSince was given */
  fullNftReason?: string;
  /** with changedTokensOnly: collections (lower-case hex) whose tokens were read whole (a burn) */
  completeCollections: ReadonlySet<string>;
  /** EVM: whether the source indexes internal txs (Crawler.internalTxs) */
  internalTxs?: boolean;
}

/** The records of a finished crawl, read from its staging in the loader's order. */
export function sourceFromStaging(
  db: Database.Database,
  c: Crawl,
  o: ApiSourceOptions,
  base: string,
  dispose: () => void,
  http: HttpClient,
  loadId?: string,
): ImportSource {
  const at = (what: string): string => `${base} ${what}`;
  const count = (table: string): number => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
  const totals: Record<string, number> = {
    meta: 1,
    validators: count('validators'),
    blocks: count('blocks'),
    txs: count('txs'),
    collections: count('collections'),
    tokens: count('tokens'),
    token_txs: count('token_txs'),
    richlist: count('holders'),
    evm_txs: count('evm_txs'),
    evm_internal_txs: count('evm_internal_txs'),
  };
  function* rows<T>(sql: string): Generator<T> {
    yield* db.prepare(sql).iterate() as IterableIterator<T>;
  }
  const kinds: Record<string, () => AsyncIterable<NdjsonLine> | Iterable<NdjsonLine> | undefined> = {
    meta: () => [
      record(
        at('/status'),
        JSON.stringify({
          chain_id: c.status.chain_id,
          vm_type: c.vmType,
          bech32_prefix: o.prefix,
          version: c.status.version ?? 'dev',
          commit_hash: c.status.commit_hash ?? 'unknown',
          source: `api ${base}`,
          ...(c.to === c.status.height ? { height: c.status.height } : {}),
          internal_tx_height: c.status.internal_tx_height ?? 0,
          // recorded on every crawl of an EVM source: an extension turned on (or off) later is seen by the next batch
          ...(c.vmType === 'evm' && c.internalTxs !== undefined ? { evm_internal_txs: c.internalTxs } : {}),
          ...(o.withoutRichList ? {} : { rich_list_height: c.status.rich_list_height ?? 0 }),
          // rollytics' cleanup progress, passed on as the source shows it (the loader checks the values)
          ...Object.fromEntries(STATUS_EXTENSIONS.filter((k) => c.status[k] !== undefined).map((k) => [k, c.status[k]])),
        }),
      ),
    ],
    validators: () =>
      o.validatorsFile
        ? ndjsonFile(o.validatorsFile)
        : (function* () {
            for (const v of rows<{ operator: string; moniker: string }>('SELECT operator, moniker FROM validators ORDER BY operator')) {
              yield record(at(`validator ${v.operator}`), JSON.stringify({ proposer: v.operator, moniker: v.moniker, operator_address: v.operator }));
            }
          })(),
    blocks: () =>
      (function* () {
        let prevUs: number | undefined = o.previousBlockUs;
        for (const b of rows<{ height: number; text: string; seconds: string; block_time: number; ts: string | null }>(
          'SELECT b.height, b.text, b.seconds, b.block_time, t.ts FROM blocks b LEFT JOIN block_times t ON t.height = b.height ORDER BY b.height',
        )) {
          let ts = b.ts;
          if (ts === null) {
            // Empty block: only whole seconds are served; estimate within that second.
            const sec = parseUtcMicros(b.seconds);
            if (sec !== undefined) {
              const est = prevUs !== undefined ? prevUs + b.block_time * 1000 : sec;
              ts = formatMicrosUtc(Math.min(Math.max(est, sec), sec + 999_999));
            } else {
              ts = b.seconds; // the loader reports it
            }
          }
          prevUs = parseUtcMicros(ts);
          yield record(at(`block ${b.height}`), b.text.slice(0, -1) + ',"timestamp":' + JSON.stringify(ts) + '}');
        }
      })(),
    txs: () =>
      loadId !== undefined || count('tx_pages') > 0
        ? (function* () {
            // an import's crawl: each tx page's texts in one compressed row (./resume.ts packTexts)
            for (const p of txPages(db, after + 1)) {
              for (let i = 0; i < p.texts.length; i++) {
                const sequence = p.first + i;
                if (sequence <= after) continue;
                yield record(at(`tx ${p.hashes[i]} (sequence ${sequence})`), '{"sequence":' + sequence + ',"tx":' + p.texts[i] + '}');
              }
            }
          })()
        : (function* () {
            for (const t of rows<{ sequence: number; hash: string; text: string }>('SELECT sequence, hash, text FROM txs ORDER BY sequence')) {
              yield record(at(`tx ${t.hash} (sequence ${t.sequence})`), '{"sequence":' + t.sequence + ',"tx":' + t.text + '}');
            }
          })(),
    collections: () =>
      (function* () {
        for (const r of rows<{ addr: string; text: string }>('SELECT addr, text FROM collections ORDER BY height, addr')) {
          yield record(at(`collection ${r.addr}`), r.text);
        }
      })(),
    tokens: () =>
      (function* () {
        for (const r of rows<{ collection: string; token_id: string; text: string }>(
          'SELECT collection, token_id, text FROM tokens ORDER BY collection, token_id',
        )) {
          yield record(at(`token ${r.collection} ${JSON.stringify(r.token_id)}`), r.text);
        }
      })(),
    token_txs: () =>
      c.vmType === 'move'
        ? undefined
        : (function* () {
            for (const r of rows<{ collection: string; token_id: string; sequence: number }>(
              'SELECT collection, token_id, sequence FROM token_txs ORDER BY collection, token_id, sequence',
            )) {
              yield record(
                at(`nft tx ${r.collection} ${JSON.stringify(r.token_id)} ${r.sequence}`),
                JSON.stringify({ collection_addr: r.collection, token_id: r.token_id, sequence: r.sequence }),
              );
            }
          })(),
    richlist: () =>
      o.denoms.length && !o.withoutRichList
        ? (function* () {
            for (const r of rows<{ denom: string; account: string; text: string }>('SELECT denom, account, text FROM holders ORDER BY denom, account')) {
              yield record(at(`holder ${r.denom} ${r.account}`), r.text);
            }
          })()
        : undefined,
    denom_contracts: () => (o.denomContractsFile ? ndjsonFile(o.denomContractsFile) : undefined),
    // Sequences are numbered from 1 (or after a base snapshot's) in (height, position) order over the crawled range.
    evm_txs: () =>
      c.vmType !== 'evm'
        ? undefined
        : (function* () {
            let sequence = o.evmSequenceStart?.txs ?? 0;
            for (const r of rows<{ height: number; text: string }>('SELECT height, text FROM evm_txs ORDER BY height, pos')) {
              sequence++;
              yield record(at(`evm tx ${sequence} (height ${r.height})`), '{"sequence":' + sequence + ',"height":' + r.height + ',"receipt":' + r.text + '}');
            }
          })(),
    // The served object has the record's fields (height, hash, index, parent_index, ...) but the sequence.
    evm_internal_txs: () =>
      c.vmType !== 'evm'
        ? undefined
        : (function* () {
            let sequence = o.evmSequenceStart?.internal ?? 0;
            for (const r of rows<{ height: number; text: string }>('SELECT height, text FROM evm_internal_txs ORDER BY height, pos')) {
              sequence++;
              yield record(at(`evm internal tx ${sequence} (height ${r.height})`), '{"sequence":' + sequence + ',' + r.text.slice(1));
            }
          })(),
  };
  // a resumed load: the txs after its checkpoint's sequence
  let after = 0;
  const resumableLoad: ResumableLoad | undefined =
    loadId === undefined
      ? undefined
      : {
          id: loadId,
          startAfter(sequence) {
            after = sequence;
          },
          seen(through) {
            return new Map(db.prepare('SELECT height, count(*) FROM txs WHERE sequence <= ? GROUP BY height').raw().all(through) as [number, number][]);
          },
          loaded(through) {
            // every page before the one holding the next tx: committed in the load, gone from here
            db.prepare('DELETE FROM tx_pages WHERE first < (SELECT coalesce(max(first), 0) FROM tx_pages WHERE first <= ?)').run(through + 1);
            // (the last page too once its last tx is in)
            db.prepare('DELETE FROM tx_pages WHERE ? >= (SELECT max(sequence) FROM txs)').run(through);
            db.prepare("INSERT OR REPLACE INTO crawl_state (name, value) VALUES ('load_committed', ?)").run(String(through));
            db.pragma('incremental_vacuum');
            db.pragma('wal_checkpoint(TRUNCATE)');
          },
          committed() {
            const v = db.prepare("SELECT value FROM crawl_state WHERE name = 'load_committed'").pluck().get() as string | undefined;
            return v === undefined ? undefined : Number(v);
          },
        };
  return {
    describe: `api ${base}`,
    lineBased: false,
    resumableLoad,
    partialKinds: () => new Set(c.changedTokensOnly ? ['collections', 'tokens'] : []),
    completeCollections: () => c.completeCollections,
    fullStateReason: () => c.fullNftReason,
    records(kind) {
      const k = kinds[kind]?.();
      if (!k) return undefined;
      return (async function* () {
        yield* k;
      })();
    },
    total: (kind) => totals[kind],
    stats: () => ({ requests: http.stats.requests, retries: http.stats.retries, bytes: http.stats.bytes }),
    dispose,
    async close() {
      dispose();
    },
  };
}
