/**
 * A state read outside a read transaction (a file in rollback-journal mode: an import's or a
 * pull's output) keeps its versions only while nobody has written the file since it began
 * (src/snapshot/open.ts Snapshot.versionsHold): `follow` started on a file already served writes
 * it in place, and the rows a statement reads then are newer than the versions the state holds.
 * An answer computed then has the ETag of its bytes (src/http/send.ts), never one that names
 * versions its body does not show — one ETag names one body (docs/response-cache.md "A file
 * outside WAL mode written in place").
 */
import { expect } from 'chai';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { openDatabase } from '../../src/sqlite';
import { SnapshotHolder } from '../../src/snapshot/holder';
import { openSnapshot, type Snapshot } from '../../src/snapshot/open';
import { createRequestListener } from '../../src/serve/routing';
import { loadOpenApi } from '../../src/serve/openapi';
import { routeMatcher, versionedTags, versionEtag } from '../../src/http/version-etag';
import { apiRoutes } from '../../src/routes/table';
import { appOptions } from '../helpers/app-options';
import { watchCommits } from '../../src/serve/live';
import { commitBlock } from './helpers';
import { DEMO, get } from '../helpers/serve';

const BLOCKS = '/indexer/block/v1/blocks?pagination.limit=3';

describe('snapshot: versions outside a read transaction hold only while the file is unwritten (versionsHold)', function () {
  this.timeout(60_000);
  let dir: string;
  let file: string;
  let w: Database.Database;
  let server: Server | undefined;
  let served: Snapshot | undefined;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'versions-hold-'));
    file = join(dir, 'chain.sqlite');
    copyFileSync(DEMO('move'), file);
    w = openDatabase(file);
  });
  afterEach(async () => {
    if (server !== undefined) await new Promise<void>((done) => (server as Server).close(() => done()));
    server = undefined;
    served?.close();
    served = undefined;
    w.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The app over `s` (serve's request listener, no response cache), on 127.0.0.1. */
  async function serveState(s: Snapshot): Promise<string> {
    const app = createRequestListener({ snapshots: { current: () => s }, openapi: loadOpenApi(), options: appOptions() });
    server = createServer(app);
    await new Promise<void>((done) => (server as Server).listen(0, '127.0.0.1', done));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  /** The ETag the answer to `url` has from the versions `s` reads now. */
  function fromVersions(s: Snapshot, url: string): string {
    const m = routeMatcher(apiRoutes())(url);
    const tags = versionedTags(m?.route, (m as NonNullable<typeof m>).params, s);
    if (tags === undefined) throw new Error(`no versions for ${url}`);
    return versionEtag(s, url, tags, false);
  }

  it('a file in rollback-journal mode: true until another connection commits; after that an answer has the ETag of its bytes', async () => {
    expect(w.pragma('journal_mode', { simple: true })).to.equal('delete');
    served = openSnapshot(file);
    expect(served.db.inTransaction, 'read statement by statement').to.equal(false);
    expect(served.versionsHold()).to.equal(true);
    const url = await serveState(served);
    const before = await get(url + BLOCKS);
    expect(before.status).to.equal(200);
    expect(before.headers.etag, 'unwritten: the ETag of the versions').to.equal(fromVersions(served, BLOCKS));

    // follow's first batch on the served file: the rows move, the state's versions (its meta: the tip) do not
    commitBlock(w);
    expect(served.versionsHold()).to.equal(false);
    const after = await get(url + BLOCKS);
    expect(after.status).to.equal(200);
    // without the check, the tip the state holds would name whatever the statements read now
    expect(after.headers.etag, 'not the ETag of the versions the state holds').not.to.equal(fromVersions(served, BLOCKS));
    expect(after.headers.etag).not.to.equal(before.headers.etag);
    // the ETag of the bytes (of the gzip stream of the stored rows, src/http/etag.ts): the same body, the same one
    const again = await get(url + BLOCKS);
    expect(again.body).to.equal(after.body);
    expect(again.headers.etag).to.equal(after.headers.etag);
    // the first body's ETag (of the versions) is still decided from them (a 304 is safe: its body is the
    // answer of a real state, the one served); a 200 never gets it again
    expect((await get(url + BLOCKS, { 'if-none-match': before.headers.etag as string })).status).to.equal(304);
  });

  it('the follower turning the file to WAL: the state begun before stops holding; one begun after (a read transaction) holds across commits', async () => {
    served = openSnapshot(file);
    w.pragma('journal_mode = WAL');
    commitBlock(w);
    expect(served.versionsHold()).to.equal(false);
    const later = openSnapshot(file);
    try {
      expect(later.db.inTransaction, 'one read transaction').to.equal(true);
      commitBlock(w);
      expect(later.versionsHold()).to.equal(true);
      const m = routeMatcher(apiRoutes())(BLOCKS);
      expect(versionedTags(m?.route, (m as NonNullable<typeof m>).params, later)?.versions).to.deep.equal([later.status]);
    } finally {
      later.close();
    }
  });

  it('the holder\'s next state of the file (a follow batch) holds again', async () => {
    const holder = SnapshotHolder.open(file);
    try {
      const first = holder.current() as Snapshot;
      w.pragma('journal_mode = WAL');
      commitBlock(w);
      expect(first.versionsHold()).to.equal(false);
      expect(await holder.reload('new batch')).to.equal(true);
      const next = holder.current() as Snapshot;
      expect(next).not.to.equal(first);
      expect(next.versionsHold()).to.equal(true);
      commitBlock(w);
      expect(next.versionsHold(), 'its read transaction still reads its own commit').to.equal(true);
      // and on the spare connection (the first state's, once released): a read transaction again
      expect(await holder.reload('new batch')).to.equal(true);
      expect(holder.renewed).to.equal(1);
      const renewed = holder.current() as Snapshot;
      commitBlock(w);
      expect(renewed.versionsHold()).to.equal(true);
    } finally {
      holder.close();
    }
  });

  it('a spare connection that last read the file before it turned to WAL begins its next state in a read transaction', async () => {
    const holder = SnapshotHolder.open(file);
    try {
      const first = holder.current() as Snapshot;
      // turned to WAL and written, the first state's connection not asked anything since
      w.pragma('journal_mode = WAL');
      commitBlock(w);
      expect(await holder.reload('new batch')).to.equal(true); // opened: no spare yet; the first state's connection becomes it
      commitBlock(w);
      expect(await holder.reload('new batch')).to.equal(true);
      expect(holder.renewed, 'begun on the first state\'s connection').to.equal(1);
      const renewed = holder.current() as Snapshot;
      expect(renewed.db).to.equal(first.db);
      expect(renewed.db.inTransaction, 'one read transaction').to.equal(true);
      commitBlock(w);
      expect(renewed.versionsHold()).to.equal(true);
    } finally {
      holder.close();
    }
  });

  it('serve\'s commit watch begins the state again when the file moved under it with no new snapshot id (turned to WAL, nothing else)', async () => {
    const holder = SnapshotHolder.open(file);
    const watch = watchCommits(holder, 10);
    try {
      const first = holder.current() as Snapshot;
      await new Promise((r) => setTimeout(r, 50));
      expect(holder.current(), 'nothing written: the same state').to.equal(first);
      w.pragma('journal_mode = WAL');
      w.prepare("UPDATE meta SET value = value WHERE key = 'chain_id'").run();
      expect(first.versionsHold()).to.equal(false);
      const deadline = Date.now() + 5000;
      while (holder.current() === first && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      const next = holder.current() as Snapshot;
      expect(next, 'a new state').not.to.equal(first);
      expect(next.meta.snapshotId).to.equal(first.meta.snapshotId);
      expect(next.versionsHold()).to.equal(true);
    } finally {
      watch.close();
      holder.close();
    }
  });
});
