/**
 * What `follow` asks of its source: how high it is, which block it has at a height (to notice
 * a source that went backwards), and the records of a range of new heights — the same
 * ImportSource the importer reads (src/import/sources/*), so validation and derivation are the
 * importer's.
 */
import { Client } from 'pg';
import { basename, dirname, join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { VmType } from '../import/from-dump';
import { openApiSource } from '../import/sources/api';
import { HttpClient } from '../import/sources/http';
import { openPostgresSource } from '../import/sources/postgres';
import { ImportSource, NftStateProbe, redactDsn } from '../import/sources/source';
import { HTTP_CLIENT_DEFAULTS } from '../lib/defaults';

export interface FollowSourceOptions {
  fromApi?: string;
  fromPostgres?: string;
  vmType: VmType;
  prefix: string;
  chainId?: string;
  denoms: string[];
  validators?: string;
  restUrl?: string;
  denomContracts?: string;
  statusVersion?: string;
  statusCommit?: string;
  concurrency?: number;
  rate?: number;
  timeout?: number;
  /** the snapshot file: crawl staging files go beside it (cleaned like an import's temporaries) */
  db: string;
}

/** Where our snapshot ends, for the next range: the highest height, its time and EVM sequences. */
export interface Tip {
  height: number;
  /** the highest block's stored time (µs since the epoch; 0 when there is no block) */
  timeUs: number;
  /** the highest tx sequence (0 when there is no tx) */
  txs: number;
  evmTxs: number;
  evmInternalTxs: number;
}

export interface FollowSource {
  describe: string;
  /** the source's newest height */
  head(): Promise<number>;
  /** the source's block hash at `height` (lower-case hex), undefined if it has no such block */
  hashAt(height: number): Promise<string | undefined>;
  /** the source's chain id, asked only when its blocks disagree with ours (to name another chain) */
  chainId(): Promise<string | undefined>;
  /**
   * the records of heights from..to plus the current NFT / rich-list state — only the NFTs
   * changed since `from` when `ours` proves that enough (openPostgresSource's and
   * openApiSource's nftChangesSince)
   */
  batch(from: number, to: number, tip: Tip, ours: NftStateProbe): Promise<ImportSource>;
  close(): Promise<void>;
}

function apiSource(o: FollowSourceOptions & { fromApi: string }): FollowSource {
  const base = o.fromApi.replace(/\/+$/, '');
  if (!/^https?:\/\//.test(base)) throw new Error(`--from-api must be an http(s) URL, got ${JSON.stringify(o.fromApi)}`);
  // No retries here: the follower retries the whole step with backoff and logs each failure.
  const http = new HttpClient(base, { concurrency: 1, retries: 0, timeoutMs: o.timeout ?? HTTP_CLIENT_DEFAULTS.timeoutMs });
  const json = async <T>(path: string): Promise<T> => {
    const text = await http.get(path);
    try { return JSON.parse(text) as T; } catch { throw new Error(`GET ${base}${path}: not JSON`); }
  };
  return {
    describe: `api ${base}`,
    async head() {
      const s = await json<{ height?: unknown }>('/status');
      if (!Number.isSafeInteger(s.height)) throw new Error(`GET ${base}/status: no integer height`);
      return s.height as number;
    },
    async hashAt(height) {
      try {
        const b = await json<{ block?: { hash?: unknown } }>(`/indexer/block/v1/blocks/${height}`);
        return typeof b.block?.hash === 'string' ? b.block.hash.toLowerCase() : undefined;
      } catch (e) {
        if (/HTTP 404/.test((e as Error).message)) return undefined;
        throw e;
      }
    },
    async chainId() {
      const s = await json<{ chain_id?: unknown }>('/status');
      return typeof s.chain_id === 'string' ? s.chain_id : undefined;
    },
    batch(from, to, tip, ours) {
      return openApiSource({
        nftChangesSince: { height: from, ours },
        url: base, vmType: o.vmType, prefix: o.prefix, fromHeight: from, toHeight: to,
        evmSequenceStart: { txs: tip.evmTxs, internal: tip.evmInternalTxs }, txSequenceAfter: tip.txs,
        previousBlockUs: tip.height > 0 ? tip.timeUs : undefined,
        denoms: o.denoms, concurrency: o.concurrency, rate: o.rate, retries: 0, timeoutMs: o.timeout,
        validatorsFile: o.validators, denomContractsFile: o.denomContracts, linkTokensSince: from,
        stagingPath: join(dirname(resolve(o.db)), `.${basename(o.db)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`),
      });
    },
    async close() { /* nothing held between steps */ },
  };
}

function postgresSource(o: FollowSourceOptions & { fromPostgres: string }): FollowSource {
  const where = redactDsn(o.fromPostgres);
  let client: Client | undefined;
  const conn = async (): Promise<Client> => {
    if (client) return client;
    const c = new Client({ connectionString: o.fromPostgres, connectionTimeoutMillis: 15_000, application_name: 'indexer-api follow' });
    c.on('error', () => { if (client === c) client = undefined; });
    try {
      await c.connect();
    } catch (e) {
      await c.end().catch(() => undefined);
      throw new Error(`cannot connect to PostgreSQL at ${where}: ${(e as Error).message.split('\n')[0]}`);
    }
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
      throw new Error(`PostgreSQL at ${where}: ${(e as Error).message.split('\n')[0]}`);
    }
  };
  const chain = (): string => (o.chainId === undefined ? 'true' : 'chain_id = $2');
  const chainParam = (): unknown[] => (o.chainId === undefined ? [] : [o.chainId]);
  return {
    describe: `postgres ${where}`,
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
    batch(from, to, _tip, ours) {
      return openPostgresSource({
        nftChangesSince: { height: from, ours },
        dsn: o.fromPostgres, vmType: o.vmType, prefix: o.prefix, chainId: o.chainId, validatorsFile: o.validators,
        restUrl: o.restUrl, restHttp: { concurrency: o.concurrency, rate: o.rate, retries: 0, timeoutMs: o.timeout },
        denomContractsFile: o.denomContracts, statusVersion: o.statusVersion, statusCommit: o.statusCommit,
        fromHeight: from, toHeight: to,
      });
    },
    async close() {
      const c = client;
      client = undefined;
      await c?.end().catch(() => undefined);
    },
  };
}

export function openFollowSource(o: FollowSourceOptions): FollowSource {
  if ((o.fromApi === undefined) === (o.fromPostgres === undefined)) throw new Error('name exactly one source: --from-api URL or --from-postgres DSN');
  return o.fromApi !== undefined ? apiSource({ ...o, fromApi: o.fromApi }) : postgresSource({ ...o, fromPostgres: o.fromPostgres as string });
}
