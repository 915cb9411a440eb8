/**
 * The read-only REPEATABLE READ transaction every read of a rollytics database goes through (a
 * consistent view while the indexer keeps writing): one query, or a table streamed through a
 * server-side cursor.
 */
import type { Client } from 'pg';
import Cursor from 'pg-cursor';
import { connectPostgres, errorText } from './connect';

export type Row = Record<string, unknown>;

export type Query = <T extends Row>(sql: string, params?: unknown[]) => Promise<T[]>;

/** Connects and opens the read-only REPEATABLE READ transaction every read goes through. */
export async function beginReadTransaction(dsn: string, where: string): Promise<Client> {
  const client = await connectPostgres(dsn, 'indexer-api import');
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    await client.query('SET LOCAL idle_in_transaction_session_timeout = 0; SET LOCAL statement_timeout = 0');
  } catch (e) {
    await client.end().catch(() => undefined);
    throw new Error(`PostgreSQL at ${where}: cannot open a read-only snapshot transaction: ${errorText(e)}`);
  }
  return client;
}

/**
 * The open read transaction (REPEATABLE READ, READ ONLY: PostgreSQL's consistent snapshot of the
 * database, not the served SQLite Snapshot): queries, cursors, failing (which ends the connection)
 * and closing.
 */
export class ReadTransaction {
  private busy = false;

  constructor(
    private readonly client: Client,
    readonly where: string,
    private readonly batch: number,
  ) {}

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
  async *rows(label: string, sql: string, params: unknown[] = []): AsyncGenerator<Row> {
    if (this.busy) throw new Error('internal: two PostgreSQL cursors at once');
    this.busy = true;
    const cursor = this.client.query(new Cursor(sql, params));
    let next: Promise<Row[]> | undefined;
    const read = (): Promise<Row[]> =>
      cursor.read(this.batch).catch((e: unknown) => {
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
    try {
      await this.client.query('COMMIT');
    } catch {
      /* the connection may already be gone */
    }
    await this.client.end().catch(() => undefined);
  }
}
