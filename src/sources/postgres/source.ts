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
 *
 * Here: openPostgresSource and the facts read before any record (tables, chain id, totals,
 * cleanup status); the records are records.ts', the transaction transaction.ts', the connector
 * connect.ts'; follow's polls head.ts, its whole-state reads (rich list, collections) state.ts.
 */
import type { NdjsonLine } from '../../records/ndjson';
import { ImportSource, ndjsonFile } from '../../records/source';
import type { StatusExtension } from '../../wire/status';
import { validatorsFromRest } from '../node-rest';
import { redactDsn } from './dsn';
import type { PostgresSourceOptions } from './options';
import { RollyticsRecords } from './records';
import { presentTables, ROLLYTICS_EVM_TABLES } from './tables';
import { beginReadTransaction, type Query, ReadTransaction } from './transaction';

/** Connects, opens the read transaction and checks the schema; errors never show the password. */
export async function openPostgresSource(o: PostgresSourceOptions): Promise<ImportSource> {
  const where = redactDsn(o.dsn);
  const db = new ReadTransaction(await beginReadTransaction(o.dsn, where), where, o.batchRows ?? 100);
  const have = await presentTables(db);
  const evm = o.vmType === 'evm' && ROLLYTICS_EVM_TABLES.every((t) => have.has(t));
  const chainId = o.chainId ?? (await onlyChainId(db));
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

/** The chain id when none is given: the only one in `block`. */
async function onlyChainId(db: ReadTransaction): Promise<string> {
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
async function proposerMonikers(
  db: ReadTransaction,
  o: PostgresSourceOptions,
  chainId: string,
): Promise<{ records: NdjsonLine[]; unknown: number } | undefined> {
  if (o.validatorsFile || !o.rest) return undefined;
  const proposers = (
    await db.q<{ p: string }>('SELECT DISTINCT proposer AS p FROM block WHERE chain_id = $1 AND proposer IS NOT NULL ORDER BY 1', [chainId])
  ).map((r) => r.p);
  try {
    const got = await validatorsFromRest(o.rest.url, proposers, o.rest.http);
    return { records: got.records, unknown: got.unknown.length };
  } catch (e) {
    return db.fail((e as Error).message);
  }
}

/** Record counts per kind for progress: exact where rollytics counts, else the planner's estimate. */
async function recordTotals(db: ReadTransaction, chainId: string, evm: boolean): Promise<Record<string, number | undefined>> {
  const seqOf = async (name: string): Promise<number | undefined> => {
    const v = (await db.q<{ s: string | null }>('SELECT max(sequence)::text AS s FROM seq_info WHERE name = $1', [name]))[0]?.s;
    return v != null ? Number(v) : undefined;
  };
  const seqTx = await seqOf('tx');
  const heights = (
    await db.q<{ lo: string | null; hi: string | null }>('SELECT min(height)::text AS lo, max(height)::text AS hi FROM block WHERE chain_id = $1', [chainId])
  )[0];
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
async function historyRange(db: ReadTransaction, o: PostgresSourceOptions): Promise<(col: string) => string> {
  const lo = o.fromHeight ?? 1;
  const hi = o.toHeight ?? Number.MAX_SAFE_INTEGER;
  for (const [name, v] of [
    ['fromHeight', lo],
    ['toHeight', hi],
  ] as const) {
    if (!Number.isSafeInteger(v) || v < 1) return db.fail(`${name} must be an integer ≥ 1, got ${v}`);
  }
  return (col: string): string => `${col} BETWEEN ${lo} AND ${hi}`;
}

/**
 * Rollytics' cleanup progress as its /status shows it (docs/api-contract.md#status): the first
 * row of evm_ret_cleanup_status and of tx_account_cleanup_status, when those tables exist and
 * hold one. Without a row nothing is recorded (rollytics' −1 means "enabled, no row yet", which
 * the database cannot tell).
 */
async function cleanupStatus(q: Query): Promise<Partial<Record<StatusExtension, string>>> {
  const out: Partial<Record<StatusExtension, string>> = {};
  const exists = async (table: string): Promise<boolean> => (await q<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [table]))[0]?.t != null;
  if (await exists('evm_ret_cleanup_status')) {
    const r = (await q<{ h: string | null }>('SELECT last_cleaned_height::text AS h FROM evm_ret_cleanup_status LIMIT 1'))[0];
    if (r?.h != null) out.evm_ret_cleanup_height = r.h;
  }
  if (await exists('tx_account_cleanup_status')) {
    const r = (
      await q<{ s: string | null; d: string | null; i: string | null }>(`SELECT last_cleaned_sequence::text AS s,
      deleted_records::text AS d, inserted_records::text AS i FROM tx_account_cleanup_status LIMIT 1`)
    )[0];
    if (r?.s != null) out.tx_account_cleanup_sequence = r.s;
    if (r?.d != null) out.tx_account_cleanup_deleted = r.d;
    if (r?.i != null) out.tx_account_cleanup_inserted = r.i;
  }
  return out;
}
