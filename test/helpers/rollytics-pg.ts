/**
 * A rollytics-shaped PostgreSQL database for tests: the tables and columns of the reference
 * §5.1 (final schema, as rollytics' gorm models declare them), loaded from a dump directory the
 * way rollytics' indexer would have stored that chain:
 * - tx.data is the Tx object as jsonb (PostgreSQL re-orders keys and re-spaces the text);
 * - tx_accounts holds the accounts rollytics links (events + signer, reference §5.4), with
 *   signer = true on the signer's row; tx.signer_id the signer's account_dict id;
 * - tx_msg_types / msg_type_dict from the body's message types;
 * - timestamps truncated to microseconds (pgx binary encoding);
 * - nft_dict + tx_nfts from token_txs; rich_list + rich_list_status; seq_info('tx');
 * - EVM: evm_tx (data = the receipt's EvmTx keys, `to` "" for a creation, as jsonb),
 *   evm_tx_accounts (rollytics' rules, signer = from), evm_tx_hash_dict, evm_internal_tx (hex
 *   quantities as bytes, odd lengths padded; top-level output not recorded; from/to id 0 for
 *   none), evm_internal_tx_accounts, seq_info('evm_tx' / 'evm_internal_tx').
 */
import { createReadStream, readFileSync, existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { Client } from 'pg';
import { AccountDeriver, msgTypesOf, signerFromTx } from '../../src/records/derive';
import { canonicalAddress } from '../../src/lib/address';
import { rawMembers } from '../../src/lib/raw-json';
import { evenHex, evmTxAccounts, internalTxAccounts } from '../../src/records/evm';
import { EvmReceipt, RECEIPT_KEYS } from '../../src/wire/evm';

/**
 * rollytics' schema after all of its migrations (initia-labs/rollytics orm/migrations/*.sql at
 * 3a2b99d, which types/table.go's gorm tags agree with), indexes included, so that sizes measured
 * on this database are those of a real deployment (docs/snapshot-size.md). Each index names the
 * migration that left it in place:
 * - 0806 = 20250806084521_migration.sql (initial schema), 0902 = 20250902111542_add_partial_indices,
 *   0916 = 20250916112051_add_nft_indices, 0922 = 20250922153000_add_tx_edge_tables,
 *   1021 = 20251021092817_migration (dropped the account_ids / *_ids array columns with their GIN
 *   indexes and every edge-table index of 0922, re-created the "partial" indexes without a WHERE),
 *   1030 = 20251030094500_add_evm_internal_tx_composite_indices, 1105 = 20251105035559_add_richlist,
 *   1112 = 20251112100000_add_tx_height_sequence_composite_index,
 *   0408 = 20260408163700_add_tx_accounts_sequence_index.
 * Index names differ from rollytics' where the tests' own names came first; the columns are the same.
 * tx_nfts and tx_type_tags have no index beyond their primary key since 1021.
 */
export const ROLLYTICS_SCHEMA = `
CREATE TABLE upgrade_history (version text PRIMARY KEY, applied timestamptz);
CREATE TABLE seq_info (name text PRIMARY KEY, sequence bigint);
CREATE TABLE block (
  chain_id text NOT NULL, height bigint NOT NULL, hash bytea, "timestamp" timestamptz, block_time bigint,
  proposer text, gas_used bigint, gas_wanted bigint, tx_count smallint, total_fee jsonb,
  PRIMARY KEY (chain_id, height));
CREATE INDEX block_height_desc ON block (height DESC); -- 0806
CREATE INDEX block_timestamp_desc ON block ("timestamp" DESC); -- 0806
CREATE INDEX block_tx_count ON block (tx_count); -- 0806
CREATE TABLE tx (hash bytea NOT NULL, height bigint NOT NULL, sequence bigint, signer_id bigint, data jsonb, PRIMARY KEY (hash, height));
CREATE INDEX tx_sequence_desc ON tx (sequence DESC); -- 0806
CREATE INDEX tx_height ON tx (height); -- 0806
CREATE INDEX tx_signer_id ON tx (signer_id); -- 0806
CREATE INDEX tx_account_sequence_partial ON tx (sequence DESC); -- 1021 (no longer partial)
CREATE INDEX tx_msg_type_sequence_partial ON tx (sequence DESC); -- 1021
CREATE INDEX tx_nft_sequence_partial ON tx (sequence DESC); -- 1021
CREATE INDEX tx_height_sequence_desc ON tx (height, sequence DESC); -- 1112
CREATE TABLE tx_accounts (account_id bigint NOT NULL, sequence bigint NOT NULL, signer boolean, PRIMARY KEY (account_id, sequence));
CREATE INDEX tx_accounts_sequence_idx ON tx_accounts (sequence); -- 0408 (idx_tx_accounts_sequence)
CREATE TABLE tx_nfts (nft_id bigint NOT NULL, sequence bigint NOT NULL, PRIMARY KEY (nft_id, sequence));
CREATE TABLE tx_msg_types (msg_type_id bigint NOT NULL, sequence bigint NOT NULL, PRIMARY KEY (msg_type_id, sequence));
CREATE INDEX tx_msg_types_sequence_idx ON tx_msg_types (sequence); -- 0408 (idx_tx_msg_types_sequence)
CREATE TABLE tx_type_tags (type_tag_id bigint NOT NULL, sequence bigint NOT NULL, PRIMARY KEY (type_tag_id, sequence));
CREATE TABLE evm_tx (hash bytea NOT NULL, height bigint NOT NULL, sequence bigint, signer_id bigint, data jsonb, PRIMARY KEY (hash, height));
CREATE INDEX evm_tx_height ON evm_tx (height); -- 0806
CREATE INDEX evm_tx_sequence_desc ON evm_tx (sequence DESC); -- 0806
CREATE INDEX evm_tx_signer_id ON evm_tx (signer_id); -- 0806
CREATE INDEX evm_tx_account_sequence_partial ON evm_tx (sequence DESC); -- 1021
CREATE TABLE evm_tx_accounts (account_id bigint NOT NULL, sequence bigint NOT NULL, signer boolean, PRIMARY KEY (account_id, sequence));
CREATE TABLE evm_internal_tx (height bigint, hash_id bigint, index bigint, parent_index bigint, sequence bigint, type text,
  from_id bigint, to_id bigint, input bytea, output bytea, value bytea, gas bytea, gas_used bytea, PRIMARY KEY (height, hash_id, index));
CREATE INDEX evm_internal_tx_from_id ON evm_internal_tx (from_id); -- 0806
CREATE INDEX evm_internal_tx_index ON evm_internal_tx (index); -- 0806
CREATE INDEX evm_internal_tx_parent_index ON evm_internal_tx (parent_index); -- 0806
CREATE INDEX evm_internal_tx_sequence_desc ON evm_internal_tx (sequence DESC); -- 0806
CREATE INDEX evm_internal_tx_to_id ON evm_internal_tx (to_id); -- 0806
CREATE INDEX evm_internal_tx_type ON evm_internal_tx (type); -- 0806
CREATE INDEX evm_internal_tx_account_sequence_partial ON evm_internal_tx (sequence DESC); -- 1021
CREATE INDEX evm_internal_tx_height_sequence_desc ON evm_internal_tx (height, sequence DESC); -- 1030
CREATE INDEX evm_internal_tx_hash_sequence_desc ON evm_internal_tx (hash_id, sequence DESC); -- 1030
CREATE TABLE evm_internal_tx_accounts (account_id bigint NOT NULL, sequence bigint NOT NULL, PRIMARY KEY (account_id, sequence));
CREATE TABLE evm_tx_hash_dict (id bigserial PRIMARY KEY, hash bytea UNIQUE);
CREATE TABLE nft_collection (addr bytea PRIMARY KEY, height bigint, "timestamp" timestamptz, name text, origin_name text,
  creator_id bigint, nft_count bigint);
CREATE INDEX nft_collection_creator_id ON nft_collection (creator_id); -- 0806
CREATE INDEX nft_collection_height ON nft_collection (height); -- 0806
CREATE INDEX nft_collection_name ON nft_collection (name); -- 0806
CREATE INDEX nft_collection_origin_name ON nft_collection (origin_name); -- 0806
CREATE TABLE nft (collection_addr bytea NOT NULL, token_id text NOT NULL, addr bytea, height bigint, "timestamp" timestamptz,
  owner_id bigint, uri text, PRIMARY KEY (collection_addr, token_id));
CREATE INDEX nft_addr ON nft USING hash (addr); -- 0806
CREATE INDEX nft_height ON nft (height); -- 0806
CREATE INDEX nft_owner_id ON nft (owner_id); -- 0806
CREATE INDEX nft_token_id ON nft (token_id); -- 0806
CREATE INDEX nft_height_token_id ON nft (height, token_id); -- 0916
CREATE INDEX nft_token_id_height ON nft (token_id, height); -- 0916
CREATE TABLE fa_store (store_addr bytea PRIMARY KEY, owner bytea);
CREATE INDEX fa_store_owner ON fa_store USING hash (owner); -- 0806
CREATE TABLE account_dict (id bigserial PRIMARY KEY, account bytea UNIQUE);
CREATE TABLE nft_dict (id bigserial PRIMARY KEY, collection_addr bytea, token_id text, UNIQUE (collection_addr, token_id));
CREATE TABLE msg_type_dict (id bigserial PRIMARY KEY, msg_type text UNIQUE);
CREATE TABLE type_tag_dict (id bigserial PRIMARY KEY, type_tag text UNIQUE);
CREATE TABLE rich_list (id bigint NOT NULL, denom text NOT NULL, amount numeric, PRIMARY KEY (id, denom));
CREATE INDEX rich_list_denom_amount ON rich_list (denom, amount DESC); -- 1105
CREATE TABLE rich_list_status (height bigint);
`;

function lines(dir: string, name: string): string[] {
  const f = join(dir, `${name}.ndjson`);
  if (!existsSync(f)) return [];
  return readFileSync(f, 'utf8').split('\n').filter((l) => l.trim() !== '');
}

/** The lines of a large NDJSON file, read as a stream (txs.ndjson of a 1M-tx chain is ~4 GB). */
async function* streamLines(dir: string, name: string): AsyncGenerator<string> {
  const f = join(dir, `${name}.ndjson`);
  if (!existsSync(f)) return;
  for await (const l of createInterface({ input: createReadStream(f), crlfDelay: Infinity })) if (l.trim() !== '') yield l;
}

/**
 * The history tables of a rollytics database and how their rows are tied to a height ($1): what
 * a follow test or bench moves aside ("not written yet") and reveals height by height.
 */
export const ROLLYTICS_HISTORY: readonly (readonly [string, string])[] = [
  ['block', 'height > $1'],
  ['tx_accounts', 'sequence IN (SELECT sequence FROM tx WHERE height > $1)'],
  ['tx_msg_types', 'sequence IN (SELECT sequence FROM tx WHERE height > $1)'],
  ['tx_nfts', 'sequence IN (SELECT sequence FROM tx WHERE height > $1)'],
  ['tx', 'height > $1'],
];

/** Moves the rows of `tables` above `height` into hidden_<table> (inside the caller's transaction). */
export async function hideHistoryAbove(c: Client, height: number, tables: readonly (readonly [string, string])[] = ROLLYTICS_HISTORY): Promise<void> {
  for (const [t, cond] of tables) await c.query(`CREATE TABLE hidden_${t} AS SELECT * FROM ${t} WHERE ${cond}`, [height]);
  for (const [t, cond] of tables) await c.query(`DELETE FROM ${t} WHERE ${cond}`, [height]);
}

/** `…:SS.fffffffffZ` → `…:SS.ffffffZ`: pgx writes timestamps in binary, truncated to µs. */
export function truncateToMicros(ts: string): string {
  return ts.replace(/\.(\d{1,9})Z$/, (_, f: string) => `.${f.padEnd(6, '0').slice(0, 6)}Z`);
}

class Inserter {
  private rows: unknown[][] = [];
  constructor(private readonly client: Client, private readonly sql: string, private readonly batch = 500) {}
  async add(row: unknown[]): Promise<void> {
    this.rows.push(row);
    if (this.rows.length >= this.batch) await this.flush();
  }
  async flush(): Promise<void> {
    if (!this.rows.length) return;
    const cols = this.rows[0].length;
    const arrays = Array.from({ length: cols }, (_, i) => this.rows.map((r) => r[i]));
    this.rows = [];
    await this.client.query(this.sql, arrays);
  }
}

export interface LoadOptions {
  /** mutate the tx.data object before it is stored (to plant a bad row) */
  txData?: (sequence: number, data: Record<string, unknown>) => Record<string, unknown>;
}

/** Creates the schema in `dsn` and loads the dump in `dir` into it. */
export async function loadRollyticsDb(dsn: string, dir: string, opts: LoadOptions = {}): Promise<{ chainId: string }> {
  const client = new Client({ connectionString: dsn });
  await client.connect();
  try {
    await client.query(ROLLYTICS_SCHEMA);
    await client.query('BEGIN');
    const meta = JSON.parse(lines(dir, 'meta')[0]) as { chain_id: string; bech32_prefix: string; rich_list_height?: number };
    const prefix = meta.bech32_prefix;

    const accountIds = new Map<string, number>();
    const accounts = new Inserter(client, 'INSERT INTO account_dict (id, account) SELECT * FROM unnest($1::bigint[], $2::bytea[])');
    const accountId = async (addr: Buffer): Promise<number> => {
      const k = addr.toString('hex');
      let id = accountIds.get(k);
      if (id === undefined) {
        id = accountIds.size + 1;
        accountIds.set(k, id);
        await accounts.add([id, addr]);
      }
      return id;
    };

    const blocks = new Inserter(client, `INSERT INTO block (chain_id, height, hash, "timestamp", block_time, proposer, gas_used, gas_wanted, tx_count, total_fee)
      SELECT * FROM unnest($1::text[], $2::bigint[], $3::bytea[], $4::timestamptz[], $5::bigint[], $6::text[], $7::bigint[], $8::bigint[], $9::smallint[], $10::jsonb[])`);
    for (const l of lines(dir, 'blocks')) {
      const b = JSON.parse(l) as { height: number; hash: string; timestamp: string; block_time: number; proposer: string;
        gas_used: number; gas_wanted: number; tx_count: number; total_fee: unknown };
      await blocks.add([meta.chain_id, b.height, Buffer.from(b.hash, 'hex'), truncateToMicros(b.timestamp), b.block_time, b.proposer,
        b.gas_used, b.gas_wanted, b.tx_count, JSON.stringify(b.total_fee)]);
    }
    await blocks.flush();

    const deriver = new AccountDeriver(prefix);
    const msgTypeIds = new Map<string, number>();
    const txs = new Inserter(client, `INSERT INTO tx (hash, height, sequence, signer_id, data)
      SELECT * FROM unnest($1::bytea[], $2::bigint[], $3::bigint[], $4::bigint[], $5::jsonb[])`, 200);
    const txAccounts = new Inserter(client, 'INSERT INTO tx_accounts (account_id, sequence, signer) SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::boolean[])', 2000);
    const txMsgTypes = new Inserter(client, 'INSERT INTO tx_msg_types (msg_type_id, sequence) SELECT * FROM unnest($1::bigint[], $2::bigint[])', 2000);
    let maxSeq = 0;
    for await (const l of streamLines(dir, 'txs')) {
      const rec = JSON.parse(l) as { sequence: number; tx: { txhash: string; height: string; tx: unknown; events: unknown } };
      const rawTx = rawMembers(l).get('tx') as string;
      let data = JSON.parse(rawTx) as Record<string, unknown>;
      if (opts.txData) data = opts.txData(rec.sequence, data);
      const signer = signerFromTx(rec.tx.tx);
      const linked = deriver.fromEvents(rec.tx.events);
      const signerId = signer ? await accountId(signer) : null;
      if (signer) {
        linked.delete(signer.toString('hex'));
        await txAccounts.add([signerId, rec.sequence, true]);
      }
      for (const a of linked.values()) await txAccounts.add([await accountId(a), rec.sequence, false]);
      for (const name of msgTypesOf(rec.tx.tx)) {
        let id = msgTypeIds.get(name);
        if (id === undefined) {
          id = msgTypeIds.size + 1;
          msgTypeIds.set(name, id);
          await client.query('INSERT INTO msg_type_dict (id, msg_type) VALUES ($1, $2)', [id, name]);
        }
        await txMsgTypes.add([id, rec.sequence]);
      }
      // The raw text keeps big numbers / number spelling exactly; JSON.stringify of the parsed
      // object is used only when a test mutates it.
      await txs.add([Buffer.from(rec.tx.txhash, 'hex'), Number(rec.tx.height), rec.sequence, signerId,
        opts.txData ? JSON.stringify(data) : rawTx]);
      maxSeq = rec.sequence;
    }
    await txs.flush();
    await txAccounts.flush();
    await txMsgTypes.flush();
    await client.query("INSERT INTO seq_info (name, sequence) VALUES ('tx', $1)", [maxSeq]);

    // streamed twice: a size bench's tokens (1M) and rich list (3M rows) are too big to hold as one string
    const nftCount = new Map<string, number>();
    for await (const l of streamLines(dir, 'tokens')) {
      const t = JSON.parse(l) as { collection_addr: string };
      const k = canonicalAddress(t.collection_addr, prefix).toString('hex');
      nftCount.set(k, (nftCount.get(k) ?? 0) + 1);
    }
    for (const l of lines(dir, 'collections')) {
      const c = JSON.parse(l) as { object_addr: string; creator: string; name: string; origin_name?: string; height: number; timestamp: string };
      const addr = canonicalAddress(c.object_addr, prefix);
      await client.query(`INSERT INTO nft_collection (addr, height, "timestamp", name, origin_name, creator_id, nft_count)
        VALUES ($1, $2, $3, $4, $5, $6, $7)`, [addr, c.height, truncateToMicros(c.timestamp), c.name, c.origin_name ?? '',
        await accountId(canonicalAddress(c.creator, prefix)), nftCount.get(addr.toString('hex')) ?? 0]);
    }
    const nfts = new Inserter(client, `INSERT INTO nft (collection_addr, token_id, addr, height, "timestamp", owner_id, uri)
      SELECT * FROM unnest($1::bytea[], $2::text[], $3::bytea[], $4::bigint[], $5::timestamptz[], $6::bigint[], $7::text[])`);
    for await (const l of streamLines(dir, 'tokens')) {
      const t = JSON.parse(l) as { collection_addr: string; token_id: string; object_addr?: string; owner: string; uri: string; height: number; timestamp: string };
      await nfts.add([canonicalAddress(t.collection_addr, prefix), t.token_id, t.object_addr ? canonicalAddress(t.object_addr, prefix) : null,
        t.height, truncateToMicros(t.timestamp), await accountId(canonicalAddress(t.owner, prefix)), t.uri]);
    }
    await nfts.flush();

    const nftIds = new Map<string, number>();
    const txNfts = new Inserter(client, 'INSERT INTO tx_nfts (nft_id, sequence) SELECT * FROM unnest($1::bigint[], $2::bigint[])', 2000);
    for (const l of lines(dir, 'token_txs')) {
      const x = JSON.parse(l) as { collection_addr: string; token_id: string; sequence: number };
      const addr = canonicalAddress(x.collection_addr, prefix);
      const k = `${addr.toString('hex')}\u0000${x.token_id}`;
      let id = nftIds.get(k);
      if (id === undefined) {
        id = nftIds.size + 1;
        nftIds.set(k, id);
        await client.query('INSERT INTO nft_dict (id, collection_addr, token_id) VALUES ($1, $2, $3)', [id, addr, x.token_id]);
      }
      await txNfts.add([id, x.sequence]);
    }
    await txNfts.flush();

    const holders = new Inserter(client, 'INSERT INTO rich_list (id, denom, amount) SELECT * FROM unnest($1::bigint[], $2::text[], $3::numeric[])', 1000);
    for await (const l of streamLines(dir, 'richlist')) {
      const h = JSON.parse(l) as { denom: string; account: string; amount: string };
      await holders.add([await accountId(canonicalAddress(h.account, prefix)), h.denom.toLowerCase(), h.amount]);
    }
    await holders.flush();
    if (meta.rich_list_height) await client.query('INSERT INTO rich_list_status (height) VALUES ($1)', [meta.rich_list_height]);
    await loadEvmTables(client, dir, prefix, accountId);
    await accounts.flush();
    await client.query("SELECT setval('account_dict_id_seq', greatest((SELECT max(id) FROM account_dict), 1))");
    await client.query('COMMIT');
    await client.query('ANALYZE');
    return { chainId: meta.chain_id };
  } finally {
    await client.end();
  }
}

/** The evm_* tables, from evm_txs / evm_internal_txs of the dump (absent files: nothing). */
async function loadEvmTables(client: Client, dir: string, prefix: string, accountId: (addr: Buffer) => Promise<number>): Promise<void> {
  const hashIds = new Map<string, number>();
  const hashId = async (hex: string): Promise<number> => {
    const k = hex.toLowerCase();
    let id = hashIds.get(k);
    if (id === undefined) {
      id = hashIds.size + 1;
      hashIds.set(k, id);
      await client.query('INSERT INTO evm_tx_hash_dict (id, hash) VALUES ($1, $2)', [id, Buffer.from(k.slice(2), 'hex')]);
    }
    return id;
  };
  const evmTxs = new Inserter(client, `INSERT INTO evm_tx (hash, height, sequence, signer_id, data)
    SELECT * FROM unnest($1::bytea[], $2::bigint[], $3::bigint[], $4::bigint[], $5::jsonb[])`, 200);
  const evmTxAccountRows = new Inserter(client, 'INSERT INTO evm_tx_accounts (account_id, sequence, signer) SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::boolean[])', 2000);
  let maxSeq = 0;
  for (const l of lines(dir, 'evm_txs')) {
    const rec = JSON.parse(l) as { sequence: number; height: number; receipt: Record<string, unknown> };
    const data: Record<string, unknown> = {};
    for (const k of RECEIPT_KEYS) data[k] = rec.receipt[k];
    data.to = data.to ?? '';
    const receipt = data as unknown as EvmReceipt;
    const signer = canonicalAddress(receipt.from, prefix);
    const signerId = await accountId(signer);
    await hashId(receipt.transactionHash);
    await evmTxs.add([Buffer.from(receipt.transactionHash.slice(2), 'hex'), rec.height, rec.sequence, signerId, JSON.stringify(data)]);
    await evmTxAccountRows.add([signerId, rec.sequence, true]);
    for (const a of evmTxAccounts(receipt, prefix)) {
      if (a !== signer.toString('hex')) await evmTxAccountRows.add([await accountId(Buffer.from(a, 'hex')), rec.sequence, false]);
    }
    maxSeq = rec.sequence;
  }
  await evmTxs.flush();
  await evmTxAccountRows.flush();
  if (maxSeq) await client.query("INSERT INTO seq_info (name, sequence) VALUES ('evm_tx', $1)", [maxSeq]);

  const internals = new Inserter(client, `INSERT INTO evm_internal_tx (height, hash_id, index, parent_index, sequence, type, from_id, to_id,
      input, output, value, gas, gas_used)
    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::text[], $7::bigint[], $8::bigint[],
      $9::bytea[], $10::bytea[], $11::bytea[], $12::bytea[], $13::bytea[])`, 500);
  const internalAccounts = new Inserter(client, 'INSERT INTO evm_internal_tx_accounts (account_id, sequence) SELECT * FROM unnest($1::bigint[], $2::bigint[])', 2000);
  const bytes = (hex: string | undefined): Buffer => Buffer.from(evenHex(hex ?? '').slice(2), 'hex');
  maxSeq = 0;
  for (const l of lines(dir, 'evm_internal_txs')) {
    const c = JSON.parse(l) as { sequence: number; height: number; hash: string; index: number; parent_index: number; type: string;
      from: string; to: string; input: string; output: string; value: string; gas: string; gasUsed: string };
    const id = async (a: string): Promise<number> => (a === '' ? 0 : accountId(canonicalAddress(a, prefix)));
    await internals.add([c.height, await hashId(c.hash), c.index, c.parent_index, c.sequence, c.type, await id(c.from), await id(c.to),
      bytes(c.input), c.index === 0 ? Buffer.alloc(0) : bytes(c.output), bytes(c.value), bytes(c.gas), bytes(c.gasUsed)]);
    const from = c.from === '' ? '' : '0x' + canonicalAddress(c.from, prefix).toString('hex');
    const to = c.to === '' ? '' : '0x' + canonicalAddress(c.to, prefix).toString('hex');
    for (const a of internalTxAccounts(from, to, evenHex(c.input), prefix)) {
      await internalAccounts.add([await accountId(Buffer.from(a, 'hex')), c.sequence]);
    }
    maxSeq = c.sequence;
  }
  await internals.flush();
  await internalAccounts.flush();
  if (maxSeq) await client.query("INSERT INTO seq_info (name, sequence) VALUES ('evm_internal_tx', $1)", [maxSeq]);
}
