/**
 * Every file passes the same check before it is served, however it arrives (issue #37): a
 * damaged file added to `serve --db-dir` is checked like one given at start — never ready,
 * dropped, listed with its reason at / (JSON and the chain picker) and /ready — and
 * `indexer-api check FILE` runs that check offline with serve's words. Real processes, real
 * files damaged the way the operator damaged them.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { closeSync, copyFileSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, renameSync, statSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, cleanEnv, DEMO, get, ROOT, startServe } from '../helpers/serve';
import { BAD_KINDS, makeBad } from '../helpers/faults';

const WASM = 'miniwasm-demo-1';

/** The damage: 16 KiB of random bytes written at 2 MiB. */
function damage(file: string): void {
  const fd = openSync(file, 'r+');
  try {
    const junk = Buffer.alloc(16 * 1024);
    for (let i = 0; i < junk.length; i++) junk[i] = Math.floor(Math.random() * 256);
    writeSync(fd, junk, 0, junk.length, 2 * 1024 * 1024);
  } finally {
    closeSync(fd);
  }
}

function cli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: ROOT, encoding: 'utf8', env: cleanEnv(), timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('faults: every file is checked before it is served, however it arrives', function () {
  this.timeout(120_000);
  let tmp: string;
  before(() => { tmp = mkdtempSync(join(tmpdir(), 'indexer-api-checks-')); });
  after(() => { rmSync(tmp, { recursive: true, force: true }); });

  it('a recorded check (#42): a restart of an unchanged file does not read it again; a record half-written when serve was killed is ignored; a file damaged since is refused', async () => {
    const db = join(tmp, 'recorded.sqlite');
    copyFileSync(DEMO('wasm'), db);
    const how = async (): Promise<unknown> => {
      const s = await startServe(['--db', db]);
      try {
        const line = await s.line('snapshot verified', (l) => l.msg === 'snapshot verified');
        expect(JSON.parse((await get(`${s.url}/ready`)).body).check).to.include({ state: 'passed', how: line.how });
        return line.how;
      } finally { await s.stop('SIGKILL'); }
    };
    expect(await how(), 'the first start reads every page').to.equal('read');
    expect(await how(), 'the next takes the record').to.equal('recorded');
    // serve killed while it wrote the record: what a kill can leave is a temporary file (the
    // record is renamed into place) — or, on a file system without atomic rename, half a record
    const records = join(tmp, '.indexer-api-checked');
    const [name] = readdirSync(records).filter((n) => n.endsWith('.json'));
    const text = readFileSync(join(records, name), 'utf8');
    writeFileSync(join(records, `${name}.999.x.tmp`), text.slice(0, 40));
    writeFileSync(join(records, name), text.slice(0, Math.floor(text.length / 2)));
    expect(await how(), 'a half-written record is not trusted').to.equal('read');
    expect(await how(), 'recorded anew').to.equal('recorded');
    // damaged in place after its record (the write moves its modification time): checked, refused
    damage(db);
    const r = cli(['serve', '--db', db, '--port', '0', '--workers', '1']);
    expect(r.status, r.stderr).to.equal(1);
    expect(r.stderr).to.match(/quick check/);
  });

  it('a damaged file added to --db-dir: checked, never ready, dropped, listed with its reason at / (JSON, picker) and /ready; a good one renamed over it is served', async () => {
    const dir = join(tmp, 'dir');
    mkdirSync(dir);
    copyFileSync(DEMO('move'), join(dir, 'move.sqlite'));
    const s = await startServe(['--db-dir', dir, '--watch-poll-ms', '100']);
    try {
      const bad = join(dir, 'wasm.sqlite');
      copyFileSync(DEMO('wasm'), join(tmp, 'wasm.incoming'));
      damage(join(tmp, 'wasm.incoming'));
      renameSync(join(tmp, 'wasm.incoming'), bad);
      const added = await s.line('chain added', (l) => l.msg === 'chain added' && l.chain === WASM);
      expect(added).to.include({ checking: true });
      const refused = await s.line('the refusal', (l) => l.msg === 'snapshot file not served' && l.file === bad);
      expect(refused.level).to.equal('error');
      expect(String(refused.error)).to.match(/^snapshot failed its quick check .*: /).and.contain(bad);
      expect(s.lines.some((l) => l.msg === 'snapshot verified' && l.chain === WASM), 'never verified').to.equal(false);
      await s.line('the chain removed', (l) => l.msg === 'chain removed' && l.chain === WASM);
      // never served: not listed as a chain, its paths are no chain's
      expect((await get(`${s.url}/${WASM}/status`)).status).to.equal(404);
      expect((await get(`${s.url}/${WASM}/ready`)).status).to.equal(404);
      const list = JSON.parse((await get(`${s.url}/`, { accept: 'application/json' })).body) as { chains: { chain_id: string }[]; files_not_served: { file: string; error: string }[] };
      expect(list.chains.map((c) => c.chain_id)).to.deep.equal(['minimove-demo-1']);
      expect(list.files_not_served).to.deep.equal([{ file: bad, error: refused.error }]);
      const picker = (await get(`${s.url}/`, { accept: 'text/html' })).body;
      expect(picker).to.contain('Files not served').and.contain(`<code>${bad}</code>`).and.contain('failed its quick check');
      const ready = await get(`${s.url}/ready`);
      expect(ready.status).to.equal(200);
      expect(JSON.parse(ready.body).files_not_served).to.deep.equal([{ file: bad, error: refused.error }]);
      // the same file again, good: checked, then served; nothing listed any more
      copyFileSync(DEMO('wasm'), join(tmp, 'wasm.incoming'));
      renameSync(join(tmp, 'wasm.incoming'), bad);
      await s.line('the good one verified', (l) => l.msg === 'snapshot verified' && l.chain === WASM);
      expect((await get(`${s.url}/${WASM}/status`)).status).to.equal(200);
      expect(JSON.parse((await get(`${s.url}/`, { accept: 'application/json' })).body)).to.not.have.property('files_not_served');
    } finally {
      await s.stop();
    }
  });

  describe('indexer-api check FILE (the same check, offline)', () => {
    it('exit 0 and one line naming the chain for a good snapshot; several files, each checked', () => {
      const r = cli(['check', DEMO('move'), DEMO('evm')]);
      expect(r.status, r.stderr).to.equal(0);
      const lines = r.stdout.trim().split('\n');
      expect(lines).to.have.length(2);
      const mb = (statSync(DEMO('move')).size / 1e6).toFixed(1).replace('.', '\\.');
      expect(lines[0]).to.match(new RegExp(`^${DEMO('move')}: ok — chain minimove-demo-1 \\(move\\), height 400, ${mb} MB, checked in \\d+ ms$`));
      expect(lines[1]).to.contain('chain minievm-demo-1 (evm)');
    });

    it('exit 1 with the line serve prints for each kind of bad file (and the damage of the issue)', () => {
      const kinds = [...BAD_KINDS, 'damaged at 2 MiB'] as const;
      for (const kind of kinds) {
        const file = join(tmp, `check-${kind.replace(/\W+/g, '-')}.sqlite`);
        if (kind === 'damaged at 2 MiB') { copyFileSync(DEMO('wasm'), file); damage(file); } else makeBad(kind, DEMO('wasm'), file);
        const served = cli(['serve', '--workers', '1', '--port', '0', '--db', file]);
        const r = cli(['check', file]);
        expect(r.status, `${kind}: ${r.stderr}`).to.equal(1);
        expect(r.stdout, kind).to.equal('');
        expect(r.stderr, kind).to.equal(served.stderr.replace(/^indexer-api: /, 'indexer-api check: '));
        rmSync(file);
      }
    });

    it('a path that is no snapshot file: check and serve say it in the same words (serve puts its option first)', () => {
      const missing = join(tmp, 'missing.sqlite');
      const dir = join(tmp, 'a-directory.sqlite');
      mkdirSync(dir, { recursive: true });
      for (const [file, words] of [[missing, 'no such snapshot file'], [dir, 'is a directory, not a snapshot file']]) {
        for (const workers of ['1', '2']) {
          const served = cli(['serve', '--workers', workers, '--port', '0', '--db', file]);
          expect(served.status, served.stderr).to.equal(1);
          expect(served.stderr).to.equal(`indexer-api: --db ${file}: ${words}\n`);
        }
        const checked = cli(['check', file]);
        expect(checked.status).to.equal(1);
        expect(checked.stderr).to.equal(`indexer-api check: ${file}: ${words}\n`);
        const json = cli(['check', '--json', file]);
        expect(JSON.parse(json.stdout)).to.deep.equal({ file, ok: false, error: `${file}: ${words}` });
      }
    });

    it('--json: one object per file; --expect-chain-id: a file of another chain fails', () => {
      const r = cli(['check', '--json', '--expect-chain-id', 'minimove-demo-1', DEMO('move'), DEMO('wasm')]);
      expect(r.status).to.equal(1);
      const [ok, other] = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(ok).to.include({ file: DEMO('move'), ok: true, chain_id: 'minimove-demo-1', vm_type: 'move', height: 400 });
      expect(other).to.deep.equal({ file: DEMO('wasm'), ok: false, error: `snapshot is chain "miniwasm-demo-1", not "minimove-demo-1" (--expect-chain-id): ${DEMO('wasm')}` });
    });

    it('usage errors exit 2 (no file, an unknown option); --help says what it checks', () => {
      const none = cli(['check']);
      expect(none.status).to.equal(2);
      expect(none.stderr).to.equal("indexer-api: name the snapshot file(s) to check: indexer-api check FILE [FILE…]\nRun 'indexer-api check --help' for usage.\n");
      const typo = cli(['check', '--jsn', DEMO('move')]);
      expect(typo.status).to.equal(2);
      expect(typo.stderr.split('\n')[0]).to.equal('indexer-api: unknown option --jsn (did you mean --json?)');
      const help = cli(['check', '--help']);
      expect(help.status).to.equal(0);
      expect(help.stdout).to.contain('quick check of').and.contain('--expect-chain-id').and.contain('--json');
    });
  });
});
