/**
 * `import --from-postgres DSN`: reads a rollytics database (docs/api-contract.md#rollytics-tables) and yields its rows
 * as dump-format records (docs/dump-format.md), so validation and derivation are shared with
 * `--from-dump`.
 *
 * Everything is read in ONE read-only REPEATABLE READ transaction (a consistent snapshot even
 * while the indexer keeps writing), each table streamed through a server-side cursor, so memory
 * stays bounded by the cursor batch whatever the table sizes. Dictionary lookups
 * (account_dict, nft_dict) are joins in SQL.
 *
 * On EVM chains the evm_* tables, when present, give evm_txs / evm_internal_txs records
 * (receipts from evm_tx.data, calls from evm_internal_tx with evm_tx_hash_dict and
 * account_dict resolved, links from the two *_accounts tables).
 *
 * Tx ↔ account links, the signer and the message types come from tx_accounts (+ tx.signer_id)
 * and tx_msg_types (+ msg_type_dict), so nothing is re-derived from the stored tx: a tx without a
 * signer (signer_id NULL or 0, no signer row) is passed as "signer": null, and the msg filters
 * answer exactly what rollytics' own tables say.
 *
 * What rollytics keeps outside its database comes from options: chain id (default: the only
 * chain_id in `block`), VM type, bech32 prefix, the indexer build for /status, proposer monikers
 * (`--validators`, NDJSON, or `--rest-url`: one node lookup per distinct proposer) and, on EVM,
 * the denom → ERC-20 map (`--denom-contracts`, NDJSON).
 */
import { Client } from 'pg';
import Cursor from 'pg-cursor';
import type { VmType } from '../lib/vm';
import { NdjsonLine } from '../records/ndjson';
import { AccountDeriver, nftKeysOfEvents } from '../records/derive';
import { rawMembers } from '../lib/raw-json';
import { HttpOptions } from './http';
import { validatorsFromRest } from './node-rest';
import { ImportSource, ndjsonFile, NftChangesSince, record, recordError, redactDsn } from '../records/source';
import type { CollectionState } from '../snapshot/queries/nft-state';
import type { StatusExtension } from '../wire/status';

export interface PostgresSourceOptions {
  dsn: string;
  vmType: VmType;
  prefix: string;
  /** default: the single chain_id found in `block` */
  chainId?: string;
  /** NDJSON in validators.ndjson format */
  validatorsFile?: string;
  /** without validatorsFile: a chain node's REST API, asked once per distinct proposer (node-rest.ts) */
  rest?: { url: string; http: HttpOptions };
  /** NDJSON in denom_contracts.ndjson format (EVM) */
  denomContractsFile?: string;
  /** what /status reports as version / commit_hash (rollytics' build; default dev / unknown) */
  statusVersion: string;
  statusCommit: string;
  /**
   * rows fetched per cursor read (default 100). Small on purpose: a batch (and the next one,
   * prefetched) lives while its rows are validated, long enough for V8 to promote big row
   * strings to the old generation; with 500 the 1M-tx import peaked at 554 MB, with 100 at
   * 484 MB, ≈10 % slower.
   */
  batchRows?: number;
  /**
   * only the history of these heights (blocks, txs, NFT ↔ tx links, EVM rows; `follow` and
   * updates on a base); current state (NFTs, rich list) is read whole (but see nftChangesSince)
   */
  fromHeight?: number;
  toHeight?: number;
  /**
   * follow: deliver only the NFTs whose `height` ≥ `height` (rollytics sets an NFT's height on
   * every change: mint, transfer, update) and the collections that can have changed — when that
   * is provably the whole change: per read collection, `ours`' count plus the delivered NFTs it
   * does not hold must equal `nft_collection.nft_count`, and the names must match. Otherwise (a
   * renamed or removed collection) both tables are delivered whole, as without this option.
   */
  nftChangesSince?: NftChangesSince;
  /**
   * follow: the rich list is refreshed apart from the block batches (src/follow/richlist-refresh.ts):
   * no `richlist` records, and a meta without `rich_list_height` (the snapshot's stays)
   */
  withoutRichList?: boolean;
}

/** EVM tables (docs/api-contract.md#rollytics-tables), read when all of them are present on an EVM chain. */
export const ROLLYTICS_EVM_TABLES = ['evm_tx', 'evm_tx_accounts', 'evm_internal_tx', 'evm_internal_tx_accounts', 'evm_tx_hash_dict'] as const;

/** The tables read; a missing one is refused before anything is written. */
export const ROLLYTICS_TABLES = ['block', 'tx', 'tx_accounts', 'account_dict', 'tx_msg_types', 'msg_type_dict',
  'nft_collection', 'nft', 'nft_dict', 'tx_nfts', 'rich_list', 'rich_list_status', 'seq_info'] as const;

/**
 * The accounts a tx (`t`) is linked to in a rollytics link table and the signer among them,
 * as hex arrays `acc.accounts` / `acc.signers`; an id missing from account_dict comes back as
 * `!<id>` so the row can be refused by name.
 */
const linkedAccounts = (links: 'tx_accounts' | 'evm_tx_accounts'): string => `LEFT JOIN LATERAL (
            SELECT array_agg(coalesce(encode(a.account, 'hex'), '!' || ta.account_id::text) ORDER BY ta.account_id) AS accounts,
                   array_agg(coalesce(encode(a.account, 'hex'), '!' || ta.account_id::text) ORDER BY ta.account_id)
                     FILTER (WHERE ta.signer IS TRUE) AS signers
            FROM ${links} ta LEFT JOIN account_dict a ON a.id = ta.account_id
            WHERE ta.sequence = t.sequence) acc ON true`;

/**
 * A tx row's linked accounts (hex, from the `linkedAccounts` columns) and its signer: its
 * `links` signer row (what is_signer filters on), else the row's signer_id; dangling ids are
 * record errors.
 */
function linkedAccountsOf(r: Row, label: string, links: 'tx_accounts' | 'evm_tx_accounts'): { accounts: string[]; signer: string | undefined } {
  const accounts = (r.accounts as string[] | null) ?? [];
  const signers = (r.signers as string[] | null) ?? [];
  for (const a of accounts) {
    if (a.startsWith('!')) throw recordError(label, links, `account_id ${a.slice(1)} is not in account_dict`);
  }
  if (signers.length > 1) throw recordError(label, links, `${signers.length} signer rows (expected at most one)`);
  let signer = signers[0];
  if (signer === undefined && r.signer_id !== null && r.signer_id !== '0') {
    if (r.signer_account === null) throw recordError(label, 'signer_id', `account_id ${r.signer_id as string} is not in account_dict`);
    signer = r.signer_account as string;
  }
  return { accounts, signer };
}

const TIME = (col: string): string => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

type Row = Record<string, unknown>;

/** Connects, opens the snapshot transaction and checks the schema; errors never show the password. */
export async function openPostgresSource(o: PostgresSourceOptions): Promise<ImportSource> {
  const where = redactDsn(o.dsn);
  const db = new Snapshot(await connectSnapshot(o.dsn, where), where, o.batchRows ?? 100);
  const have = await presentTables(db);
  const evm = o.vmType === 'evm' && ROLLYTICS_EVM_TABLES.every((t) => have.has(t));
  const chainId = o.chainId ?? await onlyChainId(db);
  const rest = await proposerMonikers(db, o, chainId);
  const richListHeight = (await db.q<{ h: string | null }>('SELECT max(height)::text AS h FROM rich_list_status'))[0]?.h ?? '0';
  const statusExtensions = await cleanupStatus(db.q);
  const totals = await recordTotals(db, chainId, evm);
  const inRange = await historyRange(db, o);
  const r = new RollyticsRecords(db, o, { where, chainId, evm, richListHeight, statusExtensions, restValidators: rest?.records, inRange });

  const kinds: Record<string, () => AsyncIterable<NdjsonLine> | undefined> = {
    meta: () => r.meta(),
    validators: () => r.validators(),
    blocks: () => r.blocks(),
    txs: () => r.txs(),
    collections: () => r.collections(),
    tokens: () => r.tokens(),
    token_txs: () => r.tokenTxs(),
    richlist: () => (o.withoutRichList ? undefined : r.richList()),
    denom_contracts: () => (o.denomContractsFile ? ndjsonFile(o.denomContractsFile) : undefined),
    evm_txs: () => (!evm ? undefined : r.evmTxs()),
    evm_internal_txs: () => (!evm ? undefined : r.evmInternalTxs()),
  };

  return {
    describe: `postgres ${where}`,
    lineBased: false,
    records: (kind) => kinds[kind]?.(),
    total: (kind) => totals[kind],
    partialKinds: () => new Set(o.nftChangesSince && r.fullNftReason === undefined ? ['collections', 'tokens'] : []),
    completeCollections: () => r.completeCollections,
    fullStateReason: () => r.fullNftReason,
    ...(rest ? { stats: () => ({ rest_validators: rest.records.length, rest_unknown_proposers: rest.unknown }) } : {}),
    close: () => db.close(),
  };
}

/**
 * The one way to connect to PostgreSQL (import, follow's polls and reads): a failure says
 * where (the DSN without its password) and why (never empty, never the password). `onError`:
 * an idle connection's error after a failure (it must not crash the process).
 */
export async function connectPostgres(dsn: string, applicationName: string, onError: (e: Error) => void = () => undefined): Promise<Client> {
  const client = new Client({ connectionString: dsn, connectionTimeoutMillis: 15_000, application_name: applicationName });
  client.on('error', onError);
  try {
    await client.connect();
  } catch (e) {
    await client.end().catch(() => undefined);
    throw new Error(`cannot connect to PostgreSQL at ${redactDsn(dsn)}: ${postgresErrorText(e, dsn)}`);
  }
  return client;
}

/** A driver error's first line, password removed (an AggregateError's empty message filled in). */
export function postgresErrorText(e: unknown, dsn: string): string {
  return scrub(errorText(e), dsn);
}

/**
 * follow's polls of a rollytics database: its newest height, the hash at a height, its chain
 * id; one connection kept between polls, dropped (and made again) after an error.
 */
export function postgresHead(dsn: string, chainId: string | undefined): {
  head(): Promise<number>; hashAt(height: number): Promise<string | undefined>; chainId(): Promise<string | undefined>; close(): Promise<void>;
} {
  const where = redactDsn(dsn);
  let client: Client | undefined;
  const conn = async (): Promise<Client> => {
    if (client) return client;
    const c = await connectPostgres(dsn, 'indexer-api follow', () => { if (client === c) client = undefined; });
    client = c;
    return c;
  };
  const one = async (sql: string, params: unknown[]): Promise<string | null | undefined> => {
    const c = await conn();
    try {
      const r = await c.query(sql, params);
      return (r.rows[0] as { v: string | null } | undefined)?.v;
    } catch (e) {
      client = undefined;
      await c.end().catch(() => undefined);
      throw new Error(`PostgreSQL at ${where}: ${postgresErrorText(e, dsn)}`);
    }
  };
  const chain = (): string => (chainId === undefined ? 'true' : 'chain_id = $2');
  const chainParam = (): unknown[] => (chainId === undefined ? [] : [chainId]);
  return {
    async head() {
      const v = await one(`SELECT max(height)::text AS v FROM block WHERE ${chain().replace('$2', '$1')}`, chainParam());
      return v == null ? 0 : Number(v);
    },
    async hashAt(height) {
      const v = await one(`SELECT encode(hash, 'hex') AS v FROM block WHERE height = $1 AND ${chain()}`, [height, ...chainParam()]);
      return v == null ? undefined : v.toLowerCase();
    },
    async chainId() {
      const v = await one(`SELECT chain_id AS v FROM block WHERE ${chain().replace('$2', '$1')} ORDER BY height DESC LIMIT 1`, chainParam());
      return v ?? undefined;
    },
    async close() {
      const c = client;
      client = undefined;
      await c?.end().catch(() => undefined);
    },
  };
}

/** Connects and opens the read-only REPEATABLE READ transaction every read goes through. */
async function connectSnapshot(dsn: string, where: string): Promise<Client> {
  const client = await connectPostgres(dsn, 'indexer-api import');
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    await client.query("SET LOCAL idle_in_transaction_session_timeout = 0; SET LOCAL statement_timeout = 0");
  } catch (e) {
    await client.end().catch(() => undefined);
    throw new Error(`PostgreSQL at ${where}: cannot open a read-only snapshot transaction: ${errorText(e)}`);
  }
  return client;
}

/** The open snapshot: queries, cursors, failing (which ends the connection) and closing. */
class Snapshot {
  private busy = false;

  constructor(private readonly client: Client, readonly where: string, private readonly batch: number) {}

  /** Ends the connection and throws `msg`. */
  async fail(msg: string): Promise<never> {
    await this.client.end().catch(() => undefined);
    throw new Error(msg);
  }

  /** One query, its rows; an error ends the connection. */
  readonly q: Query = async <T extends Row>(sql: string, params: unknown[] = []): Promise<T[]> => {
    try {
      return (await this.client.query(sql, params)).rows as T[];
    } catch (e) {
      return this.fail(`PostgreSQL at ${this.where}: ${errorText(e)} (in: ${sql.replace(/\s+/g, ' ').slice(0, 120)})`);
    }
  };

  /** Streams one query through a server-side cursor, prefetching the next batch while rows are used. */
  async* rows(label: string, sql: string, params: unknown[] = []): AsyncGenerator<Row> {
    if (this.busy) throw new Error('internal: two PostgreSQL cursors at once');
    this.busy = true;
    const cursor = this.client.query(new Cursor(sql, params));
    let next: Promise<Row[]> | undefined;
    const read = (): Promise<Row[]> => cursor.read(this.batch).catch((e: unknown) => {
      throw new Error(`PostgreSQL at ${this.where}: reading ${label} failed: ${errorText(e)}`);
    });
    try {
      next = read();
      for (;;) {
        const got = await next;
        next = undefined;
        if (got.length === 0) break;
        next = read();
        for (const r of got) yield r;
      }
    } finally {
      if (next) await next.catch(() => undefined);
      await cursor.close().catch(() => undefined);
      this.busy = false;
    }
  }

  async close(): Promise<void> {
    try { await this.client.query('COMMIT'); } catch { /* the connection may already be gone */ }
    await this.client.end().catch(() => undefined);
  }
}

/** The rollytics tables present (a missing required one is refused), EVM ones included. */
async function presentTables(db: Snapshot): Promise<Set<string>> {
  const present = await db.q<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND c.relname = ANY($1)`,
  [[...ROLLYTICS_TABLES, ...ROLLYTICS_EVM_TABLES]]);
  const have = new Set(present.map((r) => r.name));
  const missing = ROLLYTICS_TABLES.filter((t) => !have.has(t));
  if (missing.length) {
    return db.fail(`PostgreSQL at ${db.where} is not a rollytics database: missing table${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`);
  }
  return have;
}

/** The chain id when none is given: the only one in `block`. */
async function onlyChainId(db: Snapshot): Promise<string> {
  const lo = await db.q<{ chain_id: string }>('SELECT chain_id FROM block ORDER BY chain_id LIMIT 1');
  const hi = await db.q<{ chain_id: string }>('SELECT chain_id FROM block ORDER BY chain_id DESC LIMIT 1');
  if (!lo.length) return db.fail(`PostgreSQL at ${db.where}: table block is empty (nothing to import)`);
  if (lo[0].chain_id !== hi[0].chain_id) {
    return db.fail(`PostgreSQL at ${db.where}: table block holds several chains (${lo[0].chain_id}, ${hi[0].chain_id}, ...); pass --chain-id`);
  }
  return lo[0].chain_id;
}

/**
 * Proposer monikers from the node (--rest-url without --validators), looked up before any cursor
 * is open (one per distinct proposer); undefined when not asked for.
 */
async function proposerMonikers(db: Snapshot, o: PostgresSourceOptions, chainId: string):
  Promise<{ records: NdjsonLine[]; unknown: number } | undefined> {
  if (o.validatorsFile || !o.rest) return undefined;
  const proposers = (await db.q<{ p: string }>('SELECT DISTINCT proposer AS p FROM block WHERE chain_id = $1 AND proposer IS NOT NULL ORDER BY 1', [chainId]))
    .map((r) => r.p);
  try {
    const got = await validatorsFromRest(o.rest.url, proposers, o.rest.http);
    return { records: got.records, unknown: got.unknown.length };
  } catch (e) {
    return db.fail((e as Error).message);
  }
}

/** Record counts per kind for progress: exact where rollytics counts, else the planner's estimate. */
async function recordTotals(db: Snapshot, chainId: string, evm: boolean): Promise<Record<string, number | undefined>> {
  const seqOf = async (name: string): Promise<number | undefined> => {
    const v = (await db.q<{ s: string | null }>('SELECT max(sequence)::text AS s FROM seq_info WHERE name = $1', [name]))[0]?.s;
    return v != null ? Number(v) : undefined;
  };
  const seqTx = await seqOf('tx');
  const heights = (await db.q<{ lo: string | null; hi: string | null }>(
    'SELECT min(height)::text AS lo, max(height)::text AS hi FROM block WHERE chain_id = $1', [chainId]))[0];
  const estimate = async (table: string): Promise<number | undefined> => {
    const r = await db.q<{ n: number }>('SELECT reltuples::float8 AS n FROM pg_class WHERE oid = to_regclass($1)', [table]);
    const n = r[0]?.n;
    return n !== undefined && n >= 0 ? Math.round(n) : undefined;
  };
  return {
    meta: 1,
    blocks: heights?.lo != null && heights.hi != null ? Number(heights.hi) - Number(heights.lo) + 1 : undefined,
    txs: seqTx,
    evm_txs: evm ? await seqOf('evm_tx') : undefined,
    evm_internal_txs: evm ? await seqOf('evm_internal_tx') : undefined,
    collections: await estimate('nft_collection'),
    tokens: await estimate('nft'),
    token_txs: await estimate('tx_nfts'),
    richlist: await estimate('rich_list'),
  };
}

/** History restricted to fromHeight..toHeight (both optional): the SQL condition on a height column. */
async function historyRange(db: Snapshot, o: PostgresSourceOptions): Promise<(col: string) => string> {
  const lo = o.fromHeight ?? 1;
  const hi = o.toHeight ?? Number.MAX_SAFE_INTEGER;
  for (const [name, v] of [['fromHeight', lo], ['toHeight', hi]] as const) {
    if (!Number.isSafeInteger(v) || v < 1) return db.fail(`${name} must be an integer ≥ 1, got ${v}`);
  }
  return (col: string): string => `${col} BETWEEN ${lo} AND ${hi}`;
}

const hex0x = (v: unknown): string | undefined => (typeof v === 'string' ? '0x' + v : undefined);

/** What the record readers need besides the snapshot and the options. */
interface SnapshotFacts {
  where: string;
  chainId: string;
  evm: boolean;
  richListHeight: string;
  statusExtensions: Partial<Record<StatusExtension, string>>;
  restValidators: NdjsonLine[] | undefined;
  inRange: (col: string) => string;
}

/** One reader per record kind, each streaming its table(s) as dump-format records. */
class RollyticsRecords {
  /** why the whole nft table was read although nftChangesSince was given (undefined: it was not) */
  fullNftReason: string | undefined;
  /** with nftChangesSince: collections whose tokens were read whole (a burn in them) */
  completeCollections = new Set<string>();

  constructor(private readonly db: Snapshot, private readonly o: PostgresSourceOptions, private readonly f: SnapshotFacts) {}

  async* meta(): AsyncGenerator<NdjsonLine> {
    const { o, f } = this;
    yield record('meta', JSON.stringify({
      chain_id: f.chainId, vm_type: o.vmType, bech32_prefix: o.prefix,
      version: o.statusVersion, commit_hash: o.statusCommit,
      // With the EVM tables the importer derives internal_tx_height as rollytics' /status does.
      source: `postgres ${f.where}`, ...(f.evm ? {} : { internal_tx_height: 0 }), ...(o.withoutRichList ? {} : { rich_list_height: f.richListHeight }),
      ...f.statusExtensions,
    }));
  }

  validators(): AsyncIterable<NdjsonLine> | undefined {
    const restValidators = this.f.restValidators;
    return this.o.validatorsFile ? ndjsonFile(this.o.validatorsFile)
      : restValidators ? (async function* () { yield* restValidators; })() : undefined;
  }

  async* blocks(): AsyncGenerator<NdjsonLine> {
    for await (const r of this.db.rows('table block', `
        SELECT height::text AS height, encode(hash, 'hex') AS hash, ${TIME('"timestamp"')} AS ts, block_time::text AS block_time,
               proposer, gas_used::text AS gas_used, gas_wanted::text AS gas_wanted, tx_count::text AS tx_count,
               total_fee::text AS total_fee
        FROM block b WHERE b.chain_id = $1 AND ${this.f.inRange('b.height')} ORDER BY b.height`, [this.f.chainId])) {
      const label = `table block, height ${r.height as string}`;
      const obj = {
        height: r.height, hash: r.hash ?? undefined, timestamp: r.ts ?? undefined, block_time: r.block_time ?? undefined,
        proposer: r.proposer ?? undefined, gas_used: r.gas_used ?? undefined, gas_wanted: r.gas_wanted ?? undefined,
        tx_count: r.tx_count ?? undefined,
      };
      // total_fee is jsonb: its text is valid JSON; SQL NULL and JSON null both mean "no txs".
      const text = JSON.stringify(obj).slice(0, -1) + ',"total_fee":' + ((r.total_fee as string | null) ?? 'null') + '}';
      yield record(label, text);
    }
  }

  async* txs(): AsyncGenerator<NdjsonLine> {
    for await (const r of this.db.rows('table tx', `
        SELECT t.sequence::text AS sequence, encode(t.hash, 'hex') AS hash, t.height::text AS height, t.data::text AS data,
               t.signer_id::text AS signer_id, encode(s.account, 'hex') AS signer_account,
               acc.accounts, acc.signers, mt.msg_types
        FROM tx t
        LEFT JOIN account_dict s ON s.id = t.signer_id
        ${linkedAccounts('tx_accounts')}
        LEFT JOIN LATERAL (
          SELECT array_agg(coalesce(d.msg_type, '!' || tm.msg_type_id::text) ORDER BY tm.msg_type_id) AS msg_types
          FROM tx_msg_types tm LEFT JOIN msg_type_dict d ON d.id = tm.msg_type_id
          WHERE tm.sequence = t.sequence) mt ON true
        WHERE ${this.f.inRange('t.height')}
        ORDER BY t.sequence`)) {
      const label = `table tx, sequence ${r.sequence as string} (hash ${((r.hash as string | null) ?? '?').toUpperCase()}, height ${r.height as string})`;
      if (r.data === null) throw recordError(label, 'data', 'is NULL');
      const { accounts, signer } = linkedAccountsOf(r, label, 'tx_accounts');
      const msgTypes = (r.msg_types as string[] | null) ?? [];
      for (const m of msgTypes) {
        if (m.startsWith('!')) throw recordError(label, 'tx_msg_types', `msg_type_id ${m.slice(1)} is not in msg_type_dict`);
      }
      // No signer row and no signer_id: rollytics has no signer for it ("signer": null), which
      // is not the same as leaving it out (derived from the public key).
      let text = '{"sequence":' + (r.sequence as string);
      text += signer === undefined ? ',"signer":null' : ',"signer":"0x' + signer + '"';
      text += ',"accounts":[' + accounts.map((a) => '"0x' + a + '"').join(',') + ']';
      text += ',"msg_types":' + JSON.stringify(msgTypes);
      text += ',"tx":' + (r.data as string) + '}';
      yield record(label, text);
    }
  }

  private static readonly COLLECTION_SELECT = `SELECT encode(c.addr, 'hex') AS addr, c.creator_id::text AS creator_id, encode(a.account, 'hex') AS creator,
               c.name, c.origin_name, c.height::text AS height, ${TIME('c."timestamp"')} AS ts, c.nft_count::text AS n
        FROM nft_collection c LEFT JOIN account_dict a ON a.id = c.creator_id`;

  private static readonly NFT_SELECT = `SELECT encode(n.collection_addr, 'hex') AS collection_addr, n.token_id, encode(n.addr, 'hex') AS addr,
               n.owner_id::text AS owner_id, encode(o.account, 'hex') AS owner, n.uri, n.height::text AS height,
               ${TIME('n."timestamp"')} AS ts
        FROM nft n LEFT JOIN account_dict o ON o.id = n.owner_id`;

  /** with nftChangesSince: the collections and NFTs that changed (undefined: read both tables whole) */
  private changes?: Promise<{ collections: Row[]; tokens: Row[] } | undefined>;

  async* collections(): AsyncGenerator<NdjsonLine> {
    const changed = this.o.nftChangesSince ? await (this.changes ??= this.nftChanges()) : undefined;
    for await (const r of changed?.collections ?? this.db.rows('table nft_collection', `${RollyticsRecords.COLLECTION_SELECT} ORDER BY c.height, c.addr`)) {
      const label = `table nft_collection, addr 0x${(r.addr as string | null) ?? ''}`;
      if (r.creator === null) throw recordError(label, 'creator_id', `account_id ${String(r.creator_id)} is not in account_dict`);
      yield record(label, JSON.stringify({
        object_addr: hex0x(r.addr), creator: hex0x(r.creator), name: r.name ?? undefined,
        origin_name: r.origin_name ?? '', height: r.height ?? undefined, timestamp: r.ts ?? undefined,
      }));
    }
  }

  async* tokens(): AsyncGenerator<NdjsonLine> {
    const o = this.o;
    const changed = o.nftChangesSince ? await (this.changes ??= this.nftChanges()) : undefined;
    for await (const r of changed?.tokens ?? this.db.rows('table nft', `${RollyticsRecords.NFT_SELECT} ORDER BY n.collection_addr, n.token_id`)) {
      const label = `table nft, collection_addr 0x${(r.collection_addr as string | null) ?? ''}, token_id ${JSON.stringify(r.token_id)}`;
      yield record(label, JSON.stringify({
        collection_addr: hex0x(r.collection_addr), token_id: r.token_id ?? undefined,
        object_addr: o.vmType === 'move' || r.addr !== null ? hex0x(r.addr) : undefined,
        // an owner_id missing from account_dict (or empty bytes): rollytics serves owner ""
        owner: r.owner === null || r.owner === '' ? '' : hex0x(r.owner), uri: r.uri ?? '', height: r.height ?? undefined, timestamp: r.ts ?? undefined,
      }));
    }
  }

  /**
   * follow (nftChangesSince): the collections that can have changed in the batch and the NFTs
   * changed since its first height — every read keyed, none over a whole table (docs/follow.md
   * "Cost"): the NFTs by `nft.height` (index nft_height; rollytics sets an NFT's height on every
   * change), the candidate collections by address (those of the changed NFTs, those the batch's
   * txs name — rollytics' own tx_accounts of the batch's sequences — and `recheck`) or by
   * `nft_collection.height` ≥ the first height (new ones). "ours + the changed NFTs" must give
   * each candidate's nft_count and names: a collection whose count does not add up (a burn) has
   * its NFTs read whole (completeCollections); a renamed or removed one, and undefined is
   * returned: both tables are read whole, fullNftReason says why.
   */
  private async nftChanges(): Promise<{ collections: Row[]; tokens: Row[] } | undefined> {
    const since = this.o.nftChangesSince as NftChangesSince;
    const ours = since.ours;
    const tokens: Row[] = [];
    for await (const r of this.db.rows('table nft', `${RollyticsRecords.NFT_SELECT} WHERE n.height >= $1 ORDER BY n.collection_addr, n.token_id`, [since.height])) tokens.push(r);
    const expected = new Map<string, number>();
    for (const r of tokens) {
      const addr = r.collection_addr;
      if (typeof addr !== 'string' || typeof r.token_id !== 'string') return this.whole('an NFT without collection_addr or token_id'); // the whole read reports it
      if (!expected.has(addr)) expected.set(addr, ours.collection(addr)?.count ?? 0);
      if (!ours.hasToken(addr, r.token_id)) expected.set(addr, (expected.get(addr) as number) + 1);
    }
    const asked = new Set<string>([...expected.keys(), ...(since.recheck ?? [])]);
    for (const r of await this.db.q<{ a: string }>(`SELECT DISTINCT encode(a.account, 'hex') AS a FROM tx t
        JOIN tx_accounts ta ON ta.sequence = t.sequence JOIN account_dict a ON a.id = ta.account_id WHERE ${this.f.inRange('t.height')}`)) {
      if (ours.collection(r.a) !== undefined) asked.add(r.a);
    }
    const collections = await this.db.q(`${RollyticsRecords.COLLECTION_SELECT} WHERE c.addr = ANY($1::bytea[]) OR c.height >= $2 ORDER BY c.height, c.addr`,
      [[...asked].map((hex) => Buffer.from(hex, 'hex')), since.height]);
    const off = new Map<string, number>();
    const theirs = new Set<string>();
    for (const r of collections) {
      const addr = r.addr as string;
      theirs.add(addr);
      const m = ours.collection(addr);
      if (m && (m.name !== (r.name ?? '') || m.originName !== (r.origin_name ?? ''))) return this.whole(`collection 0x${addr} was renamed`);
      const n = Number(r.n ?? 0);
      if (n !== (expected.get(addr) ?? m?.count ?? 0)) off.set(addr, n);
    }
    for (const addr of asked) {
      if (!theirs.has(addr) && (expected.get(addr) ?? ours.collection(addr)?.count ?? 0) > 0) return this.whole(`collection 0x${addr} is gone`);
    }
    if (off.size === 0) return { collections, tokens };
    // A burn (or a count the changed rows do not explain) in a few collections: those
    // collections' NFTs are read whole (what is not delivered is gone), the rest stays changed rows.
    const rows = tokens.filter((r) => !off.has(r.collection_addr as string));
    const got = new Map<string, number>();
    for await (const r of this.db.rows('table nft', `${RollyticsRecords.NFT_SELECT} WHERE n.collection_addr = ANY($1::bytea[]) ORDER BY n.collection_addr, n.token_id`,
      [[...off.keys()].map((hex) => Buffer.from(hex, 'hex'))])) {
      rows.push(r);
      got.set(r.collection_addr as string, (got.get(r.collection_addr as string) ?? 0) + 1);
    }
    for (const [hex, n] of off) if ((got.get(hex) ?? 0) !== n) return this.whole(`collection 0x${hex} has ${n} NFTs, ${got.get(hex) ?? 0} read`);
    const k = (r: Row): string => `${r.collection_addr as string} ${r.token_id as string}`;
    this.completeCollections = new Set(off.keys());
    return { collections, tokens: rows.sort((a, b) => (k(a) < k(b) ? -1 : k(a) > k(b) ? 1 : 0)) };
  }

  private whole(reason: string): undefined {
    this.fullNftReason = reason;
    return undefined;
  }

  async* tokenTxs(): AsyncGenerator<NdjsonLine> {
    const o = this.o;
    const keyed = o.nftChangesSince ? await this.batchNftKeys() : undefined;
    const rows = keyed
      // follow: rollytics has no index on tx_nfts.sequence (its primary key is (nft_id, sequence)),
      // so the links of a height range are read by NFT — those the batch's txs name — not by a
      // pass over every link of the chain (docs/follow.md "Cost")
      ? this.db.rows('table tx_nfts', `
        SELECT tn.nft_id::text AS nft_id, tn.sequence::text AS sequence,
               encode(d.collection_addr, 'hex') AS collection_addr, d.token_id, true AS known
        FROM nft_dict d JOIN tx_nfts tn ON tn.nft_id = d.id AND tn.sequence BETWEEN $3 AND $4
        WHERE (d.collection_addr, d.token_id) IN (SELECT * FROM unnest($1::bytea[], $2::text[]))
        ORDER BY tn.nft_id, tn.sequence`, [keyed.collections, keyed.tokenIds, keyed.first, keyed.last])
      : this.db.rows('table tx_nfts', `
        SELECT tn.nft_id::text AS nft_id, tn.sequence::text AS sequence,
               encode(d.collection_addr, 'hex') AS collection_addr, d.token_id, d.id IS NOT NULL AS known
        ${o.fromHeight === undefined && o.toHeight === undefined ? 'FROM tx_nfts tn'
    // a height range walks the range's txs (index tx_height), then their links: not every link of the chain
    : `FROM tx t JOIN tx_nfts tn ON tn.sequence = t.sequence AND ${this.f.inRange('t.height')}`}
        LEFT JOIN nft_dict d ON d.id = tn.nft_id
        ORDER BY tn.nft_id, tn.sequence`);
    for await (const r of rows) {
      const label = `table tx_nfts, nft_id ${r.nft_id as string}, sequence ${r.sequence as string}`;
      if (!r.known) throw recordError(label, 'nft_id', `nft_id ${r.nft_id as string} is not in nft_dict`);
      yield record(label, JSON.stringify({ collection_addr: hex0x(r.collection_addr), token_id: r.token_id ?? undefined, sequence: r.sequence }));
    }
  }

  /**
   * follow: the NFTs the batch's txs can have touched — as rollytics fills tx_nfts from their
   * events (Wasm: a `wasm` event's `_contract_address` + `token_id`; EVM: an ERC-721 Transfer
   * log's contract + token id), plus the changed NFTs — and the batch's sequence range.
   */
  private async batchNftKeys(): Promise<{ collections: Buffer[]; tokenIds: string[]; first: string; last: string }> {
    const keys = new Map<string, [Buffer, string]>();
    const add = (hex: string, tokenId: string): void => { keys.set(`${hex} ${tokenId}`, [Buffer.from(hex, 'hex'), tokenId]); };
    const deriver = new AccountDeriver(this.o.prefix);
    let first: string | undefined;
    let last = '0';
    for await (const r of this.db.rows('table tx', `SELECT t.sequence::text AS sequence, t.data::text AS data FROM tx t
        WHERE ${this.f.inRange('t.height')} ORDER BY t.sequence`)) {
      first ??= r.sequence as string;
      last = r.sequence as string;
      const events = typeof r.data === 'string' ? rawMembers(r.data).get('events') : undefined;
      if (events !== undefined) nftKeysOfEvents(JSON.parse(events), deriver, add);
    }
    const changed = await (this.changes ??= this.nftChanges());
    for (const t of changed?.tokens ?? []) add(t.collection_addr as string, t.token_id as string);
    const all = [...keys.values()];
    return { collections: all.map(([c]) => c), tokenIds: all.map(([, t]) => t), first: first ?? '1', last: first === undefined ? '0' : last };
  }

  richList(): AsyncGenerator<NdjsonLine> {
    return richListRows(this.db);
  }

  /** evm_tx.data is the receipt subset rollytics keeps (jsonb order; the loader re-encodes it). */
  async* evmTxs(): AsyncGenerator<NdjsonLine> {
    for await (const r of this.db.rows('table evm_tx', `
        SELECT t.sequence::text AS sequence, encode(t.hash, 'hex') AS hash, t.height::text AS height, t.data::text AS data,
               t.signer_id::text AS signer_id, encode(s.account, 'hex') AS signer_account, acc.accounts, acc.signers
        FROM evm_tx t
        LEFT JOIN account_dict s ON s.id = t.signer_id
        ${linkedAccounts('evm_tx_accounts')}
        WHERE ${this.f.inRange('t.height')}
        ORDER BY t.sequence`)) {
      const label = `table evm_tx, sequence ${r.sequence as string} (hash 0x${(r.hash as string | null) ?? '?'}, height ${r.height as string})`;
      if (r.data === null) throw recordError(label, 'data', 'is NULL');
      const { accounts, signer } = linkedAccountsOf(r, label, 'evm_tx_accounts');
      yield record(label, '{"sequence":' + (r.sequence as string) + ',"height":' + (r.height as string)
        + ',"signer":' + (signer === undefined ? 'null' : '"0x' + signer + '"')
        + ',"accounts":[' + accounts.map((a) => '"0x' + a + '"').join(',') + '],"receipt":' + (r.data as string) + '}');
    }
  }

  async* evmInternalTxs(): AsyncGenerator<NdjsonLine> {
    for await (const r of this.db.rows('table evm_internal_tx', `
        SELECT i.sequence::text AS sequence, i.height::text AS height, i."index"::text AS index, i.parent_index::text AS parent_index,
               i.type, i.hash_id::text AS hash_id, encode(h.hash, 'hex') AS hash,
               i.from_id::text AS from_id, encode(f.account, 'hex') AS from_account,
               i.to_id::text AS to_id, encode(d.account, 'hex') AS to_account,
               encode(i.input, 'hex') AS input, encode(i.output, 'hex') AS output, encode(i.value, 'hex') AS value,
               encode(i.gas, 'hex') AS gas, encode(i.gas_used, 'hex') AS gas_used, acc.accounts
        FROM evm_internal_tx i
        LEFT JOIN evm_tx_hash_dict h ON h.id = i.hash_id
        LEFT JOIN account_dict f ON f.id = i.from_id
        LEFT JOIN account_dict d ON d.id = i.to_id
        LEFT JOIN LATERAL (
          SELECT array_agg(coalesce(encode(a.account, 'hex'), '!' || ia.account_id::text) ORDER BY ia.account_id) AS accounts
          FROM evm_internal_tx_accounts ia LEFT JOIN account_dict a ON a.id = ia.account_id
          WHERE ia.sequence = i.sequence) acc ON true
        WHERE ${this.f.inRange('i.height')}
        ORDER BY i.sequence`)) {
      const label = `table evm_internal_tx, sequence ${r.sequence as string} (height ${r.height as string}, index ${r.index as string})`;
      if (r.hash === null) throw recordError(label, 'hash_id', `id ${String(r.hash_id)} is not in evm_tx_hash_dict`);
      const account = (id: unknown, hex: unknown): string => {
        if (id === null || id === '0') return '';
        // an id missing from account_dict: rollytics serves "0x" (0x + hex of no bytes)
        return '0x' + ((hex as string | null) ?? '');
      };
      // Links to an account_id missing from account_dict (or of no bytes) no address can reach in
      // rollytics either: dropped.
      const accounts = ((r.accounts as string[] | null) ?? []).filter((a) => !a.startsWith('!') && a !== '');
      const bytes = (v: unknown): string => '0x' + ((v as string | null) ?? '');
      yield record(label, JSON.stringify({
        sequence: r.sequence, height: r.height, hash: '0x' + (r.hash as string),
        index: Number(r.index), parent_index: Number(r.parent_index), type: r.type ?? undefined,
        from: account(r.from_id, r.from_account), to: account(r.to_id, r.to_account),
        input: bytes(r.input), output: bytes(r.output), value: bytes(r.value), gas: bytes(r.gas), gasUsed: bytes(r.gas_used),
        accounts: accounts.map((a) => '0x' + a),
      }));
    }
  }
}

/** rollytics' rich_list (every denom) as dump-format records, in (denom, account id) order. */
async function* richListRows(db: Snapshot): AsyncGenerator<NdjsonLine> {
  for await (const r of db.rows('table rich_list', `
      SELECT r.id::text AS id, r.denom, encode(a.account, 'hex') AS account, r.amount::text AS amount
      FROM rich_list r LEFT JOIN account_dict a ON a.id = r.id
      ORDER BY r.denom, r.id`)) {
    const label = `table rich_list, id ${r.id as string}, denom ${JSON.stringify(r.denom)}`;
    if (r.account === null) throw recordError(label, 'id', `account_id ${r.id as string} is not in account_dict`);
    yield record(label, JSON.stringify({ denom: r.denom ?? undefined, account: hex0x(r.account), amount: r.amount ?? undefined }));
  }
}

/**
 * follow's rich-list refresh (src/follow/richlist-refresh.ts): the whole rich_list, streamed to
 * `put`, and the height rich_list_status gives it — both in one REPEATABLE READ snapshot, so they
 * belong together (the rows carry no height: no "changed since" read is possible).
 */
export async function readPostgresRichList(dsn: string, put: (r: NdjsonLine) => void, batchRows = 1000): Promise<{ height: number }> {
  const where = redactDsn(dsn);
  const db = new Snapshot(await connectSnapshot(dsn, where), where, batchRows);
  try {
    await presentTables(db);
    const h = (await db.q<{ h: string | null }>('SELECT max(height)::text AS h FROM rich_list_status'))[0]?.h;
    for await (const r of richListRows(db)) put(r);
    return { height: h == null ? 0 : Number(h) };
  } finally {
    await db.close();
  }
}

/**
 * follow's collections audit (src/follow/collections-audit.ts): every nft_collection row's NFT
 * count and names, keyed by lower-case hex.
 */
export async function readPostgresCollections(dsn: string, batchRows = 1000): Promise<Map<string, CollectionState>> {
  const where = redactDsn(dsn);
  const db = new Snapshot(await connectSnapshot(dsn, where), where, batchRows);
  try {
    await presentTables(db);
    const out = new Map<string, CollectionState>();
    for await (const r of db.rows('table nft_collection', `SELECT encode(addr, 'hex') AS addr, nft_count::text AS n, name, origin_name FROM nft_collection`)) {
      out.set(r.addr as string, { count: Number(r.n ?? 0), name: (r.name as string | null) ?? '', originName: (r.origin_name as string | null) ?? '' });
    }
    return out;
  } finally {
    await db.close();
  }
}

function errorText(e: unknown): string {
  const err = e as { message?: string; code?: string; errors?: { message: string }[] };
  // An AggregateError (IPv4 + IPv6 attempts) has an empty message of its own.
  const msg = err.message || err.errors?.map((x) => x.message).join('; ') || err.code || String(e);
  return msg.split('\n')[0];
}

/** Removes the password from a driver message, should it ever quote the DSN. */
function scrub(text: string, dsn: string): string {
  let pw: string | undefined;
  try { pw = decodeURIComponent(new URL(dsn).password); } catch { pw = /password\s*=\s*'?([^'\s]+)/i.exec(dsn)?.[1]; }
  return pw ? text.split(pw).join('***') : text;
}

type Query = <T extends Row>(sql: string, params?: unknown[]) => Promise<T[]>;

/**
 * Rollytics' cleanup progress as its /status shows it (docs/api-contract.md#status): the first
 * row of evm_ret_cleanup_status and of tx_account_cleanup_status, when those tables exist and
 * hold one. Without a row nothing is recorded (rollytics' −1 means "enabled, no row yet", which
 * the database cannot tell).
 */
async function cleanupStatus(q: Query): Promise<Partial<Record<StatusExtension, string>>> {
  const out: Partial<Record<StatusExtension, string>> = {};
  const exists = async (table: string): Promise<boolean> =>
    (await q<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [table]))[0]?.t != null;
  if (await exists('evm_ret_cleanup_status')) {
    const r = (await q<{ h: string | null }>('SELECT last_cleaned_height::text AS h FROM evm_ret_cleanup_status LIMIT 1'))[0];
    if (r?.h != null) out.evm_ret_cleanup_height = r.h;
  }
  if (await exists('tx_account_cleanup_status')) {
    const r = (await q<{ s: string | null; d: string | null; i: string | null }>(`SELECT last_cleaned_sequence::text AS s,
      deleted_records::text AS d, inserted_records::text AS i FROM tx_account_cleanup_status LIMIT 1`))[0];
    if (r?.s != null) out.tx_account_cleanup_sequence = r.s;
    if (r?.d != null) out.tx_account_cleanup_deleted = r.d;
    if (r?.i != null) out.tx_account_cleanup_inserted = r.i;
  }
  return out;
}
