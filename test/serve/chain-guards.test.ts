/**
 * A replica never changes chains unless told to (issue #37): a file of another chain renamed
 * over `--db`, or over a file of `--db-dir` under the same name, is refused like a damaged one
 * — the old file keeps serving, /ready (and / of a replica of several) lists the file and why —
 * and `--expect-chain-id` pins the chain from the start. Real `serve` processes on real files.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, renameSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, cleanEnv, DEMO, eventually, get, getJson, ROOT, startServe } from '../helpers/serve';

const IDS = { move: 'minimove-demo-1', wasm: 'miniwasm-demo-1', evm: 'minievm-demo-1' } as const;

/** Puts `from` at `to` as a deploy does: a copy beside it, renamed over it. */
function renameOver(from: string, to: string): void {
  copyFileSync(from, `${to}.incoming`);
  renameSync(`${to}.incoming`, to);
}

interface NotServed { file: string; error: string }

describe('serve: a replica never changes chains unless told to', function () {
  this.timeout(120_000);
  let tmp: string;
  before(() => { tmp = mkdtempSync(join(tmpdir(), 'indexer-api-chain-guards-')); });
  after(() => { rmSync(tmp, { recursive: true, force: true }); });

  it('--db: a file of another chain renamed over it is refused; the chain serves on, /ready lists the file and why; a good file clears it', async () => {
    const db = join(tmp, 'one.sqlite');
    copyFileSync(DEMO('move'), db);
    const s = await startServe(['--db', db, '--watch-poll-ms', '100']);
    try {
      renameOver(DEMO('wasm'), db);
      const refused = await s.line('the refusal', (l) => l.msg === 'new snapshot refused; still serving the old one');
      expect(refused.level).to.equal('error');
      expect(String(refused.error)).to.equal(`snapshot is now chain "${IDS.wasm}", but this replica serves chain "${IDS.move}" from this file: `
        + `not swapped in (a replica never changes chains unless told: to serve "${IDS.wasm}", restart serve with --expect-chain-id ${IDS.wasm}): ${db}`);
      expect(await getJson(`${s.url}/status`)).to.include({ chain_id: IDS.move });
      const ready = await get(`${s.url}/ready`);
      expect(ready.status).to.equal(200);
      expect(JSON.parse(ready.body).files_not_served).to.deep.equal([{ file: db, error: refused.error }]);
      // the same chain again: swapped in, nothing listed any more
      renameOver(DEMO('move'), db);
      await s.line('the swap', (l) => l.msg === 'snapshot swapped');
      expect(JSON.parse((await get(`${s.url}/ready`)).body)).to.not.have.property('files_not_served');
    } finally {
      await s.stop();
    }
  });

  it('--db-dir: a file replaced under its name by another chain is refused (listed at / and /ready); taken out and put back, it is served as its chain', async () => {
    const dir = join(tmp, 'dir');
    mkdirSync(dir);
    const file = join(dir, 'a.sqlite');
    copyFileSync(DEMO('move'), file);
    const s = await startServe(['--db-dir', dir, '--watch-poll-ms', '100']);
    try {
      const origin = s.url;
      renameOver(DEMO('evm'), file);
      const refused = await s.line('the refusal', (l) => l.msg === 'new snapshot refused; still serving the old one');
      expect(refused).to.include({ chain: IDS.move });
      expect(String(refused.error)).to.contain(`snapshot is now chain "${IDS.evm}", but this replica serves chain "${IDS.move}" from this file`);
      expect((await get(`${origin}/${IDS.move}/status`)).status).to.equal(200);
      expect((await get(`${origin}/${IDS.evm}/status`)).status).to.equal(404);
      const root = JSON.parse((await get(`${origin}/`, { accept: 'application/json' })).body) as { chains: { chain_id: string }[]; files_not_served: NotServed[] };
      expect(root.chains.map((c) => c.chain_id)).to.deep.equal([IDS.move]);
      expect(root.files_not_served).to.deep.equal([{ file, error: refused.error }]);
      const html = (await get(`${origin}/`, { accept: 'text/html' })).body;
      expect(html).to.contain('Files not served').and.contain(file);
      expect(JSON.parse((await get(`${origin}/ready`)).body).files_not_served).to.deep.equal([{ file, error: refused.error }]);
      // told to: the file leaves the directory and comes back
      renameSync(file, join(tmp, 'aside.sqlite'));
      await eventually('the chain dropped', async () => ((await get(`${origin}/${IDS.move}/status`)).status === 404 ? true : undefined));
      renameSync(join(tmp, 'aside.sqlite'), file);
      await eventually('served as its chain', async () => ((await get(`${origin}/${IDS.evm}/ready`)).status === 200 ? true : undefined));
      expect(JSON.parse((await get(`${origin}/`, { accept: 'application/json' })).body)).to.not.have.property('files_not_served');
    } finally {
      await s.stop();
    }
  });

  it('--expect-chain-id pins the chain from the start: another is refused with one line (exit 1), even when it is the first file', () => {
    const r = spawnSync(process.execPath, [CLI, 'serve', '--workers', '1', '--port', '0', '--db', DEMO('wasm'), '--expect-chain-id', IDS.move], { cwd: ROOT, encoding: 'utf8', env: cleanEnv() });
    expect(r.status, r.stderr).to.equal(1);
    expect(r.stderr).to.equal(`indexer-api: snapshot is chain "${IDS.wasm}", not "${IDS.move}" (--expect-chain-id): ${DEMO('wasm')}\n`);
    const many = spawnSync(process.execPath, [CLI, 'serve', '--db', DEMO('wasm'), '--db', DEMO('move'), '--expect-chain-id', IDS.move], { cwd: ROOT, encoding: 'utf8', env: cleanEnv() });
    expect(many.status).to.equal(2);
    expect(many.stderr.split('\n')[0]).to.equal(`indexer-api: --expect-chain-id ${IDS.move} pins the one chain of a replica of one (--db FILE or --pull), not 2 --db files: a replica of several keeps each file's chain from its first open`);
  });

  it('--expect-chain-id with the right chain serves it, and refuses another renamed over it with the same words', async () => {
    const db = join(tmp, 'pinned.sqlite');
    copyFileSync(DEMO('evm'), db);
    const s = await startServe(['--db', db, '--expect-chain-id', IDS.evm, '--watch-poll-ms', '100', '--workers', '2']);
    try {
      renameOver(DEMO('move'), db);
      const refused = await s.line('the refusal', (l) => l.msg === 'new snapshot refused; still serving the old one');
      expect(String(refused.error)).to.contain(`snapshot is now chain "${IDS.move}", but this replica serves chain "${IDS.evm}"`);
      // every worker refused it and lists it
      await eventually('every worker lists it', async () => {
        const bodies = await Promise.all(Array.from({ length: 6 }, async () => JSON.parse((await get(`${s.url}/ready`)).body) as { files_not_served?: NotServed[] }));
        return bodies.every((b) => b.files_not_served?.[0]?.file === db) || undefined;
      });
      expect(await getJson(`${s.url}/status`)).to.include({ chain_id: IDS.evm });
    } finally {
      await s.stop();
      unlinkSync(db);
    }
  });
});
