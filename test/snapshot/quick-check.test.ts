/**
 * Not ready until checked (issue #37): while a file's check runs — at start, or for a file added
 * to --db-dir — its chain is listed but marked not ready at / (JSON and the chain picker), its
 * /ready answers 503 saying so, and in a replica of several chains its API answers 503 (the root
 * /ready, ready while another chain is, does not keep a balancer away from it); a replica of one
 * answers its API meanwhile, its /ready 503. The check is made to last seconds with the
 * documented test hook INDEXER_TEST_CHECK_PASSES (docs/reliability.md "Test hooks").
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { quickCheck } from '../../src/snapshot/quick-check';
import { CLI, cleanEnv, DEMO, get, ROOT, ServeProcess } from '../helpers/serve';

const MOVE = 'minimove-demo-1';
const WASM = 'miniwasm-demo-1';
const CHECKING = 'checking the snapshot file (quick check)';

/** `serve ARGS` with each check lasting about `ms`; resolves once it listens (the start-up checks then run). */
async function serveSlowChecks(args: string[], ms: number): Promise<ServeProcess> {
  quickCheck(DEMO('wasm'));
  const t = process.hrtime.bigint();
  quickCheck(DEMO('wasm'));
  const one = Math.max(0.5, Number(process.hrtime.bigint() - t) / 1e6);
  const proc = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--workers', '1', ...args], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...cleanEnv(), INDEXER_TEST_CHECK_PASSES: String(Math.ceil(ms / one)) },
  });
  const s = new ServeProcess(proc);
  s.url = String((await s.line('listening', (l) => l.msg === 'listening')).url);
  return s;
}

interface Entry { chain_id: string; ready: boolean; not_ready?: string }

describe('serve: a file is not ready until its check passed', function () {
  this.timeout(120_000);
  let tmp: string;
  before(() => { tmp = mkdtempSync(join(tmpdir(), 'indexer-api-checks-')); });
  after(() => { rmSync(tmp, { recursive: true, force: true }); });

  it('--db-dir, at start and for a file added: listed not ready (JSON, picker), /ready and the API 503, until checked', async () => {
    const dir = join(tmp, 'dir');
    mkdirSync(dir);
    copyFileSync(DEMO('move'), join(dir, 'move.sqlite'));
    const s = await serveSlowChecks(['--db-dir', dir, '--watch-poll-ms', '100'], 3_000);
    try {
      const list = async (): Promise<Entry[]> => (JSON.parse((await get(`${s.url}/`, { accept: 'application/json' })).body) as { chains: Entry[] }).chains;
      expect(await list()).to.deep.equal([{ chain_id: MOVE, vm_type: 'move', height: 400, path: `/${MOVE}/`, ready: false, not_ready: CHECKING }]);
      expect((await get(`${s.url}/`, { accept: 'text/html' })).body).to.contain(`not ready: ${CHECKING}`);
      const ready = await get(`${s.url}/${MOVE}/ready`);
      expect(ready.status).to.equal(503);
      expect(JSON.parse(ready.body).message).to.equal(CHECKING);
      const api = await get(`${s.url}/${MOVE}/status`);
      expect(api.status).to.equal(503);
      expect(JSON.parse(api.body).message).to.contain(`chain ${MOVE}: its snapshot file is being checked (quick check); try again shortly`);
      expect((await get(`${s.url}/ready`)).status).to.equal(503);
      expect(s.stderr, 'the "serving" line waits for the check').to.equal('');
      await s.line('verified', (l) => l.msg === 'snapshot verified' && l.chain === MOVE);
      expect((await list())[0]).to.include({ ready: true });
      expect((await get(`${s.url}/${MOVE}/status`)).status).to.equal(200);

      // added while it runs: the same
      copyFileSync(DEMO('wasm'), join(tmp, 'wasm.incoming'));
      renameSync(join(tmp, 'wasm.incoming'), join(dir, 'wasm.sqlite'));
      await s.line('added', (l) => l.msg === 'chain added' && l.chain === WASM);
      expect((await list()).find((c) => c.chain_id === WASM)).to.include({ ready: false, not_ready: CHECKING });
      expect((await get(`${s.url}/${WASM}/status`)).status).to.equal(503);
      expect((await get(`${s.url}/${WASM}/ready`)).status).to.equal(503);
      expect((await get(`${s.url}/ready`)).status, 'the replica stays ready on the other chain').to.equal(200);
      await s.line('verified', (l) => l.msg === 'snapshot verified' && l.chain === WASM);
      expect((await get(`${s.url}/${WASM}/status`)).status).to.equal(200);
    } finally {
      await s.stop();
    }
  });

  it('one --db: /ready 503 while its start-up check runs (the API answers meanwhile), 200 after', async () => {
    // a file of its own (a new inode): the demo file's check is recorded by every serve of it, and taken
    const db = join(tmp, 'slow-check.sqlite');
    copyFileSync(DEMO('wasm'), db);
    const s = await serveSlowChecks(['--db', db], 3_000);
    try {
      const ready = await get(`${s.url}/ready`);
      expect(ready.status).to.equal(503);
      expect(JSON.parse(ready.body).message).to.equal(CHECKING);
      expect((await get(`${s.url}/status`)).status).to.equal(200);
      await s.line('verified', (l) => l.msg === 'snapshot verified');
      expect((await get(`${s.url}/ready`)).status).to.equal(200);
    } finally {
      await s.stop();
    }
  });
});
