/** follow's polls of a rollytics database (./follow.ts): its head, a height's hash, its chain id. */
import type { Client } from 'pg';
import { connectPostgres, postgresErrorText } from './connect';
import { redactDsn } from './dsn';

/**
 * follow's polls of a rollytics database: its newest height, the hash at a height, its chain
 * id; one connection kept between polls, dropped (and made again) after an error.
 */
export function postgresHead(
  dsn: string,
  chainId: string | undefined,
): {
  head(): Promise<number>;
  hashAt(height: number): Promise<string | undefined>;
  chainId(): Promise<string | undefined>;
  close(): Promise<void>;
} {
  const where = redactDsn(dsn);
  let client: Client | undefined;
  const conn = async (): Promise<Client> => {
    if (client) return client;
    const c = await connectPostgres(dsn, 'indexer-api follow', () => {
      if (client === c) client = undefined;
    });
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
