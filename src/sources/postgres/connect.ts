/** The one way to connect to PostgreSQL (import, follow's polls and reads) and the text of its errors. */
import { Client } from 'pg';
import { redactDsn, scrubPassword } from './dsn';

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
  return scrubPassword(errorText(e), dsn);
}

/** A driver error's first line (an AggregateError's empty message filled in). */
export function errorText(e: unknown): string {
  const err = e as { message?: string; code?: string; errors?: { message: string }[] };
  // An AggregateError (IPv4 + IPv6 attempts) has an empty message of its own.
  const msg = err.message || err.errors?.map((x) => x.message).join('; ') || err.code || String(e);
  return msg.split('\n')[0];
}
