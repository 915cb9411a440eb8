/**
 * rollytics' rows as dump-format records (docs/dump-format.md), one reader per record kind, each
 * streaming its table(s) through the read transaction; dictionary lookups (account_dict,
 * nft_dict) are joins in SQL.
 */
import type { NdjsonLine } from '../../records/ndjson';
import { AccountDeriver, nftKeysOfEvents } from '../../records/derive';
import { rawMembers } from '../../lib/raw-json';
import { ndjsonFile, NftChangesSince, record, recordError } from '../../records/source';
import type { StatusExtension } from '../../wire/status';
import type { PostgresSourceOptions } from './options';
import type { ReadTransaction, Row } from './transaction';

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

const hex0x = (v: unknown): string | undefined => (typeof v === 'string' ? '0x' + v : undefined);

/** What the record readers need besides the read transaction and the options. */
export interface SourceFacts {
  where: string;
  chainId: string;
  evm: boolean;
  richListHeight: string;
  statusExtensions: Partial<Record<StatusExtension, string>>;
  restValidators: NdjsonLine[] | undefined;
  inRange: (col: string) => string;
}

/** One reader per record kind, each streaming its table(s) as dump-format records. */
export class RollyticsRecords {
  /** why the whole nft table was read although nftChangesSince was given (undefined: it was not) */
  fullNftReason: string | undefined;
  /** with nftChangesSince: collections whose tokens were read whole (a burn in them) */
  completeCollections = new Set<string>();

  constructor(
    private readonly db: ReadTransaction,
    private readonly o: PostgresSourceOptions,
    private readonly f: SourceFacts,
  ) {}

  async *meta(): AsyncGenerator<NdjsonLine> {
    const { o, f } = this;
    yield record(
      'meta',
      JSON.stringify({
        chain_id: f.chainId,
        vm_type: o.vmType,
        bech32_prefix: o.prefix,
        version: o.statusVersion,
        commit_hash: o.statusCommit,
        // With the EVM tables the importer derives internal_tx_height as rollytics' /status does.
        source: `postgres ${f.where}`,
        ...(f.evm ? {} : { internal_tx_height: 0 }),
        ...(o.withoutRichList ? {} : { rich_list_height: f.richListHeight }),
        ...f.statusExtensions,
      }),
    );
  }

  validators(): AsyncIterable<NdjsonLine> | undefined {
    const restValidators = this.f.restValidators;
    return this.o.validatorsFile
      ? ndjsonFile(this.o.validatorsFile)
      : restValidators
        ? (async function* () {
            yield* restValidators;
          })()
        : undefined;
  }

  async *blocks(): AsyncGenerator<NdjsonLine> {
    for await (const r of this.db.rows(
      'table block',
      `
        SELECT height::text AS height, encode(hash, 'hex') AS hash, ${TIME('"timestamp"')} AS ts, block_time::text AS block_time,
               proposer, gas_used::text AS gas_used, gas_wanted::text AS gas_wanted, tx_count::text AS tx_count,
               total_fee::text AS total_fee
        FROM block b WHERE b.chain_id = $1 AND ${this.f.inRange('b.height')} ORDER BY b.height`,
      [this.f.chainId],
    )) {
      const label = `table block, height ${r.height as string}`;
      const obj = {
        height: r.height,
        hash: r.hash ?? undefined,
        timestamp: r.ts ?? undefined,
        block_time: r.block_time ?? undefined,
        proposer: r.proposer ?? undefined,
        gas_used: r.gas_used ?? undefined,
        gas_wanted: r.gas_wanted ?? undefined,
        tx_count: r.tx_count ?? undefined,
      };
      // total_fee is jsonb: its text is valid JSON; SQL NULL and JSON null both mean "no txs".
      const text = JSON.stringify(obj).slice(0, -1) + ',"total_fee":' + ((r.total_fee as string | null) ?? 'null') + '}';
      yield record(label, text);
    }
  }

  async *txs(): AsyncGenerator<NdjsonLine> {
    for await (const r of this.db.rows(
      'table tx',
      `
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
        ORDER BY t.sequence`,
    )) {
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

  async *collections(): AsyncGenerator<NdjsonLine> {
    const changed = this.o.nftChangesSince ? await (this.changes ??= this.nftChanges()) : undefined;
    for await (const r of changed?.collections ?? this.db.rows('table nft_collection', `${RollyticsRecords.COLLECTION_SELECT} ORDER BY c.height, c.addr`)) {
      const label = `table nft_collection, addr 0x${(r.addr as string | null) ?? ''}`;
      if (r.creator === null) throw recordError(label, 'creator_id', `account_id ${String(r.creator_id)} is not in account_dict`);
      yield record(
        label,
        JSON.stringify({
          object_addr: hex0x(r.addr),
          creator: hex0x(r.creator),
          name: r.name ?? undefined,
          origin_name: r.origin_name ?? '',
          height: r.height ?? undefined,
          timestamp: r.ts ?? undefined,
        }),
      );
    }
  }

  async *tokens(): AsyncGenerator<NdjsonLine> {
    const o = this.o;
    const changed = o.nftChangesSince ? await (this.changes ??= this.nftChanges()) : undefined;
    for await (const r of changed?.tokens ?? this.db.rows('table nft', `${RollyticsRecords.NFT_SELECT} ORDER BY n.collection_addr, n.token_id`)) {
      const label = `table nft, collection_addr 0x${(r.collection_addr as string | null) ?? ''}, token_id ${JSON.stringify(r.token_id)}`;
      yield record(
        label,
        JSON.stringify({
          collection_addr: hex0x(r.collection_addr),
          token_id: r.token_id ?? undefined,
          object_addr: o.vmType === 'move' || r.addr !== null ? hex0x(r.addr) : undefined,
          // an owner_id missing from account_dict (or empty bytes): rollytics serves owner ""
          owner: r.owner === null || r.owner === '' ? '' : hex0x(r.owner),
          uri: r.uri ?? '',
          height: r.height ?? undefined,
          timestamp: r.ts ?? undefined,
        }),
      );
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
    for await (const r of this.db.rows('table nft', `${RollyticsRecords.NFT_SELECT} WHERE n.height >= $1 ORDER BY n.collection_addr, n.token_id`, [
      since.height,
    ]))
      tokens.push(r);
    const expected = new Map<string, number>();
    for (const r of tokens) {
      const addr = r.collection_addr;
      // the whole read reports it
      if (typeof addr !== 'string' || typeof r.token_id !== 'string') return this.whole('an NFT without collection_addr or token_id');
      if (!expected.has(addr)) expected.set(addr, ours.collection(addr)?.count ?? 0);
      if (!ours.hasToken(addr, r.token_id)) expected.set(addr, (expected.get(addr) as number) + 1);
    }
    const asked = new Set<string>([...expected.keys(), ...(since.recheck ?? [])]);
    for (const r of await this.db.q<{ a: string }>(`SELECT DISTINCT encode(a.account, 'hex') AS a FROM tx t
        JOIN tx_accounts ta ON ta.sequence = t.sequence JOIN account_dict a ON a.id = ta.account_id WHERE ${this.f.inRange('t.height')}`)) {
      if (ours.collection(r.a) !== undefined) asked.add(r.a);
    }
    const collections = await this.db.q(`${RollyticsRecords.COLLECTION_SELECT} WHERE c.addr = ANY($1::bytea[]) OR c.height >= $2 ORDER BY c.height, c.addr`, [
      [...asked].map((hex) => Buffer.from(hex, 'hex')),
      since.height,
    ]);
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
    for await (const r of this.db.rows(
      'table nft',
      `${RollyticsRecords.NFT_SELECT} WHERE n.collection_addr = ANY($1::bytea[]) ORDER BY n.collection_addr, n.token_id`,
      [[...off.keys()].map((hex) => Buffer.from(hex, 'hex'))],
    )) {
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

  async *tokenTxs(): AsyncGenerator<NdjsonLine> {
    const o = this.o;
    const keyed = o.nftChangesSince ? await this.batchNftKeys() : undefined;
    const rows = keyed
      ? // follow: rollytics has no index on tx_nfts.sequence (its primary key is (nft_id, sequence)),
        // so the links of a height range are read by NFT — those the batch's txs name — not by a
        // pass over every link of the chain (docs/follow.md "Cost")
        this.db.rows(
          'table tx_nfts',
          `
        SELECT tn.nft_id::text AS nft_id, tn.sequence::text AS sequence,
               encode(d.collection_addr, 'hex') AS collection_addr, d.token_id, true AS known
        FROM nft_dict d JOIN tx_nfts tn ON tn.nft_id = d.id AND tn.sequence BETWEEN $3 AND $4
        WHERE (d.collection_addr, d.token_id) IN (SELECT * FROM unnest($1::bytea[], $2::text[]))
        ORDER BY tn.nft_id, tn.sequence`,
          [keyed.collections, keyed.tokenIds, keyed.first, keyed.last],
        )
      : this.db.rows(
          'table tx_nfts',
          `
        SELECT tn.nft_id::text AS nft_id, tn.sequence::text AS sequence,
               encode(d.collection_addr, 'hex') AS collection_addr, d.token_id, d.id IS NOT NULL AS known
        ${
          o.fromHeight === undefined && o.toHeight === undefined
            ? 'FROM tx_nfts tn'
            : // a height range walks the range's txs (index tx_height), then their links: not every link of the chain
              `FROM tx t JOIN tx_nfts tn ON tn.sequence = t.sequence AND ${this.f.inRange('t.height')}`
        }
        LEFT JOIN nft_dict d ON d.id = tn.nft_id
        ORDER BY tn.nft_id, tn.sequence`,
        );
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
    const add = (hex: string, tokenId: string): void => {
      keys.set(`${hex} ${tokenId}`, [Buffer.from(hex, 'hex'), tokenId]);
    };
    const deriver = new AccountDeriver(this.o.prefix);
    let first: string | undefined;
    let last = '0';
    for await (const r of this.db.rows(
      'table tx',
      `SELECT t.sequence::text AS sequence, t.data::text AS data FROM tx t
        WHERE ${this.f.inRange('t.height')} ORDER BY t.sequence`,
    )) {
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
  async *evmTxs(): AsyncGenerator<NdjsonLine> {
    for await (const r of this.db.rows(
      'table evm_tx',
      `
        SELECT t.sequence::text AS sequence, encode(t.hash, 'hex') AS hash, t.height::text AS height, t.data::text AS data,
               t.signer_id::text AS signer_id, encode(s.account, 'hex') AS signer_account, acc.accounts, acc.signers
        FROM evm_tx t
        LEFT JOIN account_dict s ON s.id = t.signer_id
        ${linkedAccounts('evm_tx_accounts')}
        WHERE ${this.f.inRange('t.height')}
        ORDER BY t.sequence`,
    )) {
      const label = `table evm_tx, sequence ${r.sequence as string} (hash 0x${(r.hash as string | null) ?? '?'}, height ${r.height as string})`;
      if (r.data === null) throw recordError(label, 'data', 'is NULL');
      const { accounts, signer } = linkedAccountsOf(r, label, 'evm_tx_accounts');
      yield record(
        label,
        '{"sequence":' +
          (r.sequence as string) +
          ',"height":' +
          (r.height as string) +
          ',"signer":' +
          (signer === undefined ? 'null' : '"0x' + signer + '"') +
          ',"accounts":[' +
          accounts.map((a) => '"0x' + a + '"').join(',') +
          '],"receipt":' +
          (r.data as string) +
          '}',
      );
    }
  }

  async *evmInternalTxs(): AsyncGenerator<NdjsonLine> {
    for await (const r of this.db.rows(
      'table evm_internal_tx',
      `
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
        ORDER BY i.sequence`,
    )) {
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
      yield record(
        label,
        JSON.stringify({
          sequence: r.sequence,
          height: r.height,
          hash: '0x' + (r.hash as string),
          index: Number(r.index),
          parent_index: Number(r.parent_index),
          type: r.type ?? undefined,
          from: account(r.from_id, r.from_account),
          to: account(r.to_id, r.to_account),
          input: bytes(r.input),
          output: bytes(r.output),
          value: bytes(r.value),
          gas: bytes(r.gas),
          gasUsed: bytes(r.gas_used),
          accounts: accounts.map((a) => '0x' + a),
        }),
      );
    }
  }
}

/** rollytics' rich_list (every denom) as dump-format records, in (denom, account id) order. */
export async function* richListRows(db: ReadTransaction): AsyncGenerator<NdjsonLine> {
  for await (const r of db.rows(
    'table rich_list',
    `
      SELECT r.id::text AS id, r.denom, encode(a.account, 'hex') AS account, r.amount::text AS amount
      FROM rich_list r LEFT JOIN account_dict a ON a.id = r.id
      ORDER BY r.denom, r.id`,
  )) {
    const label = `table rich_list, id ${r.id as string}, denom ${JSON.stringify(r.denom)}`;
    if (r.account === null) throw recordError(label, 'id', `account_id ${r.id as string} is not in account_dict`);
    yield record(label, JSON.stringify({ denom: r.denom ?? undefined, account: hex0x(r.account), amount: r.amount ?? undefined }));
  }
}
