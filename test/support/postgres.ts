/**
 * A throwaway PostgreSQL server for tests: initdb into a fresh temp directory, `postgres` on a
 * free 127.0.0.1 port (no Unix socket, trust auth, fsync off), torn down with the directory.
 *
 * Binaries: $PG_BIN, else the newest /usr/lib/postgresql/<v>/bin, else `pg_config --bindir`.
 * As root the server runs as the `postgres` OS user (PostgreSQL refuses to run as root).
 * When no binaries are found, `postgresOrSkip` skips the suite with a clear message unless
 * TEST_REQUIRE_POSTGRES is set (CI: scripts/ci-postgres.sh installs them), then it fails.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { freePort } from './net';

export { freePort };

export interface PgServer {
  port: number;
  /** superuser DSN for `db` (default `postgres`) */
  dsn(db?: string): string;
  /** creates a database and returns its DSN */
  createDatabase(name: string): Promise<string>;
  stop(): Promise<void>;
}

export function findPgBin(): string | undefined {
  const has = (dir: string): boolean => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres'));
  if (process.env.PG_BIN) return has(process.env.PG_BIN) ? process.env.PG_BIN : undefined;
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
    for (const v of versions) if (has(join(root, v, 'bin'))) return join(root, v, 'bin');
  }
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    if (has(dir)) return dir;
  } catch { /* no pg_config */ }
  return undefined;
}


function osUser(name: string): { uid: number; gid: number } {
  const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

/** Starts a server; throws if the binaries are missing. */
export async function startPostgres(): Promise<PgServer> {
  const bin = findPgBin();
  if (!bin) throw new Error('PostgreSQL server binaries not found (install: scripts/ci-postgres.sh, or set PG_BIN)');
  const root = mkdtempSync(join(tmpdir(), 'indexer-api-pg-'));
  const data = join(root, 'data');
  const asUser = process.getuid?.() === 0 ? osUser('postgres') : undefined;
  if (asUser) {
    chmodSync(root, 0o755);
    chownSync(root, asUser.uid, asUser.gid);
  }
  const env = { ...process.env, LC_ALL: 'C', LANG: 'C', HOME: root };
  const opts = { env, ...(asUser ?? {}) };
  try {
    execFileSync(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--no-locale', '-E', 'UTF8', '--no-sync'],
      { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    rmSync(root, { recursive: true, force: true });
    const err = e as { stderr?: Buffer; message: string };
    throw new Error(`initdb failed: ${err.stderr?.toString() || err.message}`);
  }
  const port = await freePort();
  const child: ChildProcess = spawn(join(bin, 'postgres'), [
    '-D', data, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=',
    '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=40',
    '-c', 'shared_buffers=64MB',
  ], { ...opts, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr?.on('data', (d: Buffer) => { log = (log + d.toString()).slice(-4000); });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // Never leave a server behind, even if the test run dies.
  const onExit = (): void => {
    try { child.kill('SIGKILL'); } catch { /* gone */ }
    try { rmSync(root, { recursive: true, force: true }); } catch { /* best effort */ }
  };
  process.once('exit', onExit);
  const dsn = (db = 'postgres'): string => `postgres://postgres@127.0.0.1:${port}/${db}`;
  const stop = async (): Promise<void> => {
    process.off('exit', onExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGINT'); // fast shutdown
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(root, { recursive: true, force: true });
  };
  // Wait until it accepts connections.
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) { await stop(); throw new Error(`postgres exited at start:\n${log}`); }
    const c = new Client({ connectionString: dsn() });
    try {
      await c.connect();
      await c.end();
      break;
    } catch {
      await c.end().catch(() => undefined);
      if (Date.now() > deadline) { await stop(); throw new Error(`postgres did not start within 30 s:\n${log}`); }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    port,
    dsn,
    async createDatabase(name) {
      const c = new Client({ connectionString: dsn() });
      await c.connect();
      try { await c.query(`CREATE DATABASE "${name}"`); } finally { await c.end(); }
      return dsn(name);
    },
    stop,
  };
}

/**
 * For a mocha `before`: starts a server, or skips the suite (binaries absent and
 * TEST_REQUIRE_POSTGRES unset) with a message saying why and how to enable it.
 */
export async function postgresOrSkip(ctx: Mocha.Context): Promise<PgServer | undefined> {
  if (!findPgBin()) {
    if (process.env.TEST_REQUIRE_POSTGRES) {
      throw new Error('TEST_REQUIRE_POSTGRES is set but no PostgreSQL server binaries were found (run scripts/ci-postgres.sh)');
    }
    console.warn('    (skipped: PostgreSQL server binaries not found; run scripts/ci-postgres.sh or set PG_BIN; '
      + 'set TEST_REQUIRE_POSTGRES=1 to make this a failure)');
    ctx.skip();
    return undefined;
  }
  return startPostgres();
}
