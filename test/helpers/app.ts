/**
 * The one test-app factory. Per VM and per test run: copy the demo dump (or generate it when
 * fixtures/demo/dumps/<vm> is missing), import it with runImport into a temp directory (so every
 * route test also exercises import), open the snapshot, and serve it with serve's own request
 * listener (src/serve/routing.ts createRequestListener, without the response cache) with response
 * validation on — every response is checked against openapi.yaml.
 */
import type Database from 'better-sqlite3';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, RequestListener, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import request from 'supertest';
import { AppOptions } from '../../src/serve/app';
import { createRequestListener } from '../../src/serve/routing';
import { appOptions } from './app-options';
import { runGenerate } from '../../src/commands/generate';
import { runImport } from '../../src/import/run';
import { loadOpenApi } from '../../src/serve/openapi';
import { openSnapshot, Snapshot } from '../../src/snapshot/open';
import { DumpModel, loadDump, Vm } from './dump';
import { atRunEnd } from '../support/run-end';

/** Repository root (tests run from build/test/…). */
export const ROOT = resolve(__dirname, '..', '..', '..');
export const DEMO_DUMPS = join(ROOT, 'fixtures', 'demo', 'dumps');
export const VMS: readonly Vm[] = ['move', 'wasm', 'evm'];

let tmpRoot: string | undefined;
/** A private temp directory for this process, removed when it exits. */
export function testTmp(): string {
  if (!tmpRoot) {
    const dir = mkdtempSync(join(tmpdir(), 'indexer-api-test-'));
    tmpRoot = dir;
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return tmpRoot;
}

export interface TestChain {
  vm: Vm;
  /** the dump directory the snapshot was imported from (a private copy) */
  dumpDir: string;
  /** the snapshot file runImport wrote */
  file: string;
  snapshot: Snapshot;
  /** the open (read-only) snapshot, for independent SQL over sql/001-tables.sql */
  db: Database.Database;
  /** expected values computed from the dump NDJSON alone */
  dump: DumpModel;
}

const chains = new Map<Vm, Promise<TestChain>>();

async function buildChain(vm: Vm): Promise<TestChain> {
  const base = join(testTmp(), vm);
  let dumpDir = join(base, 'dump');
  const file = join(base, `${vm}.sqlite`);
  const source = join(DEMO_DUMPS, vm);
  const generate = async (out: string): Promise<void> => {
    await runGenerate({ vm, out, preset: 'demo', seed: 1, gzip: false, force: true, quiet: true });
  };
  if (existsSync(join(source, 'meta.ndjson'))) cpSync(source, dumpDir, { recursive: true });
  else await generate(dumpDir);
  try {
    await runImport({ fromDump: dumpDir, out: file, force: true, quiet: true, json: false });
  } catch (e) {
    // The shared fixtures directory may be being rewritten by `make fixtures` right now: fall back
    // to a private generated dump rather than fail on a half-written copy.
    if (!existsSync(join(source, 'meta.ndjson'))) throw e;
    dumpDir = join(base, 'generated');
    await generate(dumpDir);
    await runImport({ fromDump: dumpDir, out: file, force: true, quiet: true, json: false });
  }
  const snapshot = openSnapshot(file);
  return { vm, dumpDir, file, snapshot, db: snapshot.db, dump: loadDump(dumpDir) };
}

/** The imported snapshot of a VM's demo chain, built once per run. */
export function testChain(vm: Vm): Promise<TestChain> {
  let c = chains.get(vm);
  if (!c) {
    c = buildChain(vm);
    chains.set(vm, c);
  }
  return c;
}

export interface TestApp extends TestChain {
  /** what the HTTP server runs, as `serve` builds it (src/serve/routing.ts createRequestListener) */
  app: RequestListener;
  /** a listening server on 127.0.0.1 (one per app, reused by every request) */
  server: Server;
  baseUrl: string;
  /** supertest over the app: `api.get('/status')` */
  api: ReturnType<typeof request>;
}

const apps = new Map<string, Promise<TestApp>>();
const servers: Server[] = [];

async function buildApp(vm: Vm, overrides: Partial<AppOptions>): Promise<TestApp> {
  const chain = await testChain(vm);
  const app = createRequestListener({
    snapshots: { current: () => chain.snapshot },
    openapi: loadOpenApi(),
    options: appOptions({
      corsOrigin: '*',
      validateResponses: true,
      // a server fault is what the tests look for: show where, briefly (the test reports the request)
      logError: (err) => { process.stderr.write(`    (server fault: ${String((err as Error)?.stack ?? err).split('\n').slice(0, 2).join(' | ')})\n`); },
      ...overrides,
    }),
  });
  const server = createServer(app);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  server.unref();
  servers.push(server);
  const { port } = server.address() as AddressInfo;
  return { ...chain, app, server, baseUrl: `http://127.0.0.1:${port}`, api: request(server) };
}

/**
 * The app over `vm`'s demo snapshot: response validation on, CORS `*`. `overrides` change
 * AppOptions (e.g. `{ validateResponses: false }` to see the exact bytes the server writes).
 */
export function makeTestApp(vm: Vm, overrides: Partial<AppOptions> = {}): Promise<TestApp> {
  const id = `${vm} ${JSON.stringify(overrides)}`;
  let a = apps.get(id);
  if (!a) {
    a = buildApp(vm, overrides);
    apps.set(id, a);
  }
  return a;
}

// The chains, apps and servers are built once per process and shared by every file it runs (a
// serial run: all of them; under --parallel, each worker's files). After each run (each file under
// --parallel, test/support/run-end.ts), drop the kept-alive connections, which would hold the
// process open; the servers are unref'd and stay for the next file. The temp directory goes when
// the process exits.
atRunEnd(() => {
  for (const s of servers) s.closeAllConnections();
});
