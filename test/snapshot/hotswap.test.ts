import { expect } from 'chai';
import { copyFileSync, readdirSync, readlinkSync, renameSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { SnapshotHolder } from '../../src/snapshot/holder';
import { openSnapshot, Snapshot, SnapshotError } from '../../src/snapshot/open';
import { eventually, get, getJson, metric, serveTmp, SmallSnapshot, smallSnapshots, startServe } from '../helpers/serve';

/** Puts `from` at `db` the way a publisher does: a copy beside it, renamed over it. */
function publish(from: string, db: string): void {
  const tmp = `${db}.incoming`;
  copyFileSync(from, tmp);
  renameSync(tmp, db);
}

function publishGarbage(db: string): void {
  const tmp = `${db}.incoming`;
  writeFileSync(tmp, Buffer.alloc(64 * 1024, 'not a snapshot '));
  renameSync(tmp, db);
}

/** Requests that exist on every small snapshot (heights ≥ 20). */
const PATHS = [
  '/status',
  '/indexer/block/v1/blocks?pagination.limit=5',
  '/indexer/block/v1/blocks/10',
  '/indexer/tx/v1/txs?pagination.limit=5',
  '/indexer/tx/v1/txs/by_height/10',
  '/indexer/nft/v1/collections',
];

interface LoadResult { ok: number; failures: string[]; heights: Set<number> }

/** `connections` clients each sending PATHS in turn over keep-alive until stopped. */
function load(base: string, connections: number): { stop(): Promise<LoadResult> } {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const result: LoadResult = { ok: 0, failures: [], heights: new Set() };
  let running = true;
  const client = async (offset: number): Promise<void> => {
    for (let i = offset; running; i++) {
      const path = PATHS[i % PATHS.length];
      try {
        const r = await get(base + path, {}, agent);
        const body = JSON.parse(r.body) as { height?: number };
        if (r.status !== 200) result.failures.push(`${path}: ${r.status} ${r.body}`);
        else result.ok++;
        if (path === '/status') result.heights.add(body.height as number);
      } catch (e) {
        result.failures.push(`${path}: ${(e as Error).message}`);
      }
    }
  };
  const clients = Array.from({ length: connections }, (_, i) => client(i));
  return {
    async stop() {
      running = false;
      await Promise.all(clients);
      agent.destroy();
      return result;
    },
  };
}

/** Snapshot files the process still holds open although they were replaced (unlinked). */
function deletedSnapshotsOpen(pid: number): string[] {
  const fdDir = `/proc/${pid}/fd`;
  return readdirSync(fdDir)
    .map((fd) => { try { return readlinkSync(join(fdDir, fd)); } catch { return ''; } })
    .filter((target) => target.includes('.sqlite') && target.endsWith('(deleted)'));
}

describe('serve: hot swap', function () {
  this.timeout(120_000);
  let snaps: SmallSnapshot[];
  before(async () => { snaps = await smallSnapshots(); });

  describe('SnapshotHolder', () => {
    let db: string;
    beforeEach(() => {
      db = join(serveTmp(), `holder-${Math.random().toString(36).slice(2)}.sqlite`);
      publish(snaps[0].file, db);
    });

    it('switches on reload and closes the old snapshot only when its last request releases it', async () => {
      const holder = SnapshotHolder.open(db);
      const closed: Snapshot[] = [];
      holder.on('closed', (s: Snapshot) => closed.push(s));
      const old = holder.acquire() as Snapshot;
      publish(snaps[1].file, db);
      expect(await holder.reload('test')).to.equal(true);
      expect(holder.current()?.meta.height).to.equal(snaps[1].height);
      expect(closed).to.deep.equal([]);
      expect(old.db.open).to.equal(true);
      expect(old.q.block.byHeight(1)).to.not.equal(undefined); // still answering its request
      holder.release(old);
      expect(closed).to.deep.equal([old]);
      expect(old.db.open).to.equal(false);
      holder.close();
    });

    it('refuses a file that is not a snapshot and keeps serving the old one', async () => {
      const holder = SnapshotHolder.open(db);
      const refused: unknown[] = [];
      holder.on('refused', (e: unknown) => refused.push(e));
      const before = holder.current();
      publishGarbage(db);
      expect(await holder.reload('test')).to.equal(false);
      expect(holder.current()).to.equal(before);
      expect(before?.db.open).to.equal(true);
      expect(holder.failedSwaps).to.equal(1);
      expect(refused[0]).to.be.instanceOf(SnapshotError);
      expect((refused[0] as Error).message).to.match(/^not a SQLite database: /);
      holder.close();
    });

    it('refuses a snapshot whose statements do not prepare (incompatible) and keeps the old one', async () => {
      const holder = SnapshotHolder.open(db, {
        open: (file, opts) => {
          const s = openSnapshot(file, opts);
          if (s.meta.height === snaps[2].height) { s.close(); throw new SnapshotError(`snapshot is corrupt or incompatible (test): ${file}`); }
          return s;
        },
      });
      publish(snaps[2].file, db);
      expect(await holder.reload('test')).to.equal(false);
      expect(holder.current()?.meta.height).to.equal(snaps[0].height);
      holder.close();
    });

    it('does not count reloading the same unchanged file as a swap', async () => {
      const holder = SnapshotHolder.open(db);
      const before = holder.current();
      expect(await holder.reload('SIGHUP')).to.equal(false);
      expect(holder.current()).to.equal(before);
      expect(holder.swaps).to.equal(0);
      holder.close();
    });

    it('closes the current snapshot on close() once no request holds it', () => {
      const holder = SnapshotHolder.open(db);
      const s = holder.acquire() as Snapshot;
      holder.close();
      expect(holder.current()).to.equal(undefined);
      expect(s.db.open).to.equal(true);
      holder.release(s);
      expect(s.db.open).to.equal(false);
    });
  });

  it('swaps 20 times under 50 concurrent connections without failing a request, and refuses a bad file', async () => {
    const db = join(serveTmp(), 'swap.sqlite');
    publish(snaps[0].file, db);
    const s = await startServe(['--db', db]);
    const traffic = load(s.url, 50);
    let expected = snaps[0];
    try {
      for (let i = 1; i <= 20; i++) {
        expected = snaps[i % snaps.length];
        publish(expected.file, db);
        const height = expected.height;
        await eventually(`height ${height} after swap ${i}`, async () => (await getJson<{ height: number }>(`${s.url}/status`)).height === height);
      }
      const logged = s.lines.length;
      publishGarbage(db);
      const refused = await s.line('the refusal', (l) => l.msg === 'new snapshot refused; still serving the old one', logged);
      expect(refused.level).to.equal('error');
      expect(String(refused.error)).to.match(/^not a SQLite database: /);
      for (let i = 0; i < 20; i++) expect((await getJson<{ height: number }>(`${s.url}/status`)).height).to.equal(expected.height);
      const text = (await get(`${s.url}/metrics`)).body;
      expect(metric(text, 'indexer_api_snapshot_swaps_total')).to.equal(20);
      expect(metric(text, 'indexer_api_snapshot_swap_failures_total')).to.equal(1);
      expect(metric(text, 'indexer_api_snapshot_height')).to.equal(expected.height);

      // and a good file after the bad one is taken again
      const next = snaps.find((x) => x.height !== expected.height) as SmallSnapshot;
      publish(next.file, db);
      await eventually('the swap after the refusal', async () => (await getJson<{ height: number }>(`${s.url}/status`)).height === next.height);
    } finally {
      const result = await traffic.stop();
      expect(result.failures.slice(0, 5)).to.deep.equal([]);
      expect(result.ok).to.be.greaterThan(0);
      for (const h of result.heights) expect(snaps.map((x) => x.height)).to.include(h);
    }
    // Every replaced snapshot was closed once its requests finished.
    await eventually('the replaced snapshots closed', async () => deletedSnapshotsOpen(s.proc.pid as number).length === 0 || undefined);
    expect(s.lines.filter((l) => l.msg === 'snapshot swapped')).to.have.length(21);
    expect(await s.stop()).to.deep.equal({ code: 0, signal: null });
  });

  it('reloads on SIGHUP (with --no-watch, only then)', async () => {
    const db = join(serveTmp(), 'sighup.sqlite');
    publish(snaps[0].file, db);
    const s = await startServe(['--db', db, '--no-watch']);
    try {
      publish(snaps[1].file, db);
      expect((await getJson<{ height: number }>(`${s.url}/status`)).height).to.equal(snaps[0].height);
      const logged = s.lines.length;
      s.signal('SIGHUP');
      const swapped = await s.line('the swap', (l) => l.msg === 'snapshot swapped', logged);
      expect(swapped).to.include({ reason: 'SIGHUP', height: snaps[1].height, previous_height: snaps[0].height });
      expect((await getJson<{ height: number }>(`${s.url}/status`)).height).to.equal(snaps[1].height);
    } finally {
      expect(await s.stop()).to.deep.equal({ code: 0, signal: null });
    }
  });
});
