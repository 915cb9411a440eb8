import { expect } from 'chai';
import { ChildProcess, spawn, spawnSync, SpawnSyncReturns } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../support/net';

/**
 * The single executable built by `make binary` (scripts/build-binary.js), run the way a user runs
 * it: copied alone into an empty directory, with no `node` on PATH and a fresh cache directory.
 * Skipped when dist/indexer-api does not exist, unless TEST_REQUIRE_BINARY is set.
 */

const ROOT = resolve(__dirname, '..', '..', '..'); // compiled into build/test/kit/
const BINARY = join(ROOT, 'dist', 'indexer-api');
const NODE_CLI = join(ROOT, 'bin', 'indexer-api');
const REQUIRED = (process.env.TEST_REQUIRE_BINARY ?? '') !== '';

interface Exit { code: number | null; signal: NodeJS.Signals | null }

/** Two distinct free ports (each found by listening on port 0 and closing). */
async function twoFreePorts(): Promise<[number, number]> {
  const a = await freePort();
  let b = await freePort();
  while (b === a) b = await freePort();
  return [a, b];
}


/** A started `serve`: resolves once it has printed its "serving … on http://…" line. */
class Server {
  readonly exited: Promise<Exit>;
  private stderr = '';
  private stdout = '';
  constructor(readonly name: string, readonly proc: ChildProcess, readonly url: string) {
    proc.stderr!.setEncoding('utf8').on('data', (s: string) => { this.stderr += s; });
    proc.stdout!.setEncoding('utf8').on('data', (s: string) => { this.stdout += s; });
    this.exited = new Promise((done) => proc.once('exit', (code, signal) => done({ code, signal })));
  }

  async ready(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.stderr.includes(`on ${this.url}`)) {
      if (this.proc.exitCode !== null || this.proc.signalCode !== null) throw new Error(`${this.name} exited early: ${this.stderr}`);
      if (Date.now() > deadline) throw new Error(`${this.name} did not start in ${timeoutMs} ms: ${this.stderr}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async get(path: string): Promise<{ status: number; type: string | null; body: Buffer }> {
    const res = await fetch(this.url + path);
    return { status: res.status, type: res.headers.get('content-type'), body: Buffer.from(await res.arrayBuffer()) };
  }

  /** SIGTERM, then the exit status (SIGKILL after 10 s so a hung server cannot hang the suite). */
  async stop(): Promise<Exit> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 10_000);
    try { return await this.exited; } finally { clearTimeout(timer); }
  }

  output(): string { return `${this.stderr}${this.stdout.slice(-4000)}`; }
  logs(): string { return this.stdout; }
}

describe('single executable (dist/indexer-api)', function () {
  this.timeout(120_000);

  let tmp: string;
  let exe: string;
  /** what the binary runs with: no node on PATH, HOME and the cache inside tmp */
  let binEnv: NodeJS.ProcessEnv;
  /** what `node bin/indexer-api` runs with: this environment minus INDEXER_API_*, same locale */
  let nodeEnv: NodeJS.ProcessEnv;
  let info: { version: string; commit: string };
  /** `--workers 1` when `serve` has that option (node:cluster): one process, so a SIGTERM can never
   *  land on a worker that is still starting; the cluster gets its own test below */
  let oneProcess: string[] = [];
  const servers: Server[] = [];

  function run(args: string[], env: NodeJS.ProcessEnv = binEnv): SpawnSyncReturns<string> {
    return spawnSync(exe, args, { cwd: tmp, env, encoding: 'utf8', timeout: 90_000 });
  }

  function runNode(args: string[]): SpawnSyncReturns<string> {
    return spawnSync(process.execPath, [NODE_CLI, ...args], { cwd: ROOT, env: nodeEnv, encoding: 'utf8', timeout: 90_000 });
  }

  function serveBinary(args: string[], port: number, env: NodeJS.ProcessEnv = binEnv): Server {
    const proc = spawn(exe, ['serve', ...args, '--port', String(port)], { cwd: tmp, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const s = new Server('binary', proc, `http://127.0.0.1:${port}`);
    servers.push(s);
    return s;
  }

  function serveNode(args: string[], port: number): Server {
    const proc = spawn(process.execPath, [NODE_CLI, 'serve', ...args, '--port', String(port)], { cwd: ROOT, env: nodeEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    const s = new Server('node bin/indexer-api', proc, `http://127.0.0.1:${port}`);
    servers.push(s);
    return s;
  }

  function cacheEnv(cache: string): NodeJS.ProcessEnv {
    return { ...binEnv, XDG_CACHE_HOME: cache };
  }

  before(function () {
    if (!existsSync(BINARY)) {
      if (REQUIRED) throw new Error('dist/indexer-api does not exist but TEST_REQUIRE_BINARY is set: run `make binary` first');
      process.stderr.write('      (skipping the single-executable tests: dist/indexer-api is not built — run `make binary`; '
        + 'set TEST_REQUIRE_BINARY=1 to make a missing binary a failure)\n');
      this.skip();
    }
    info = JSON.parse(readFileSync(join(ROOT, 'build', 'build-info.json'), 'utf8')) as typeof info;
    tmp = mkdtempSync(join(tmpdir(), 'indexer-api-binary-'));
    exe = join(tmp, 'indexer-api');
    copyFileSync(BINARY, exe);
    chmodSync(exe, 0o755);
    cpSync(join(ROOT, 'fixtures', 'demo', 'dumps', 'wasm'), join(tmp, 'dump'), { recursive: true });

    // PATH = /usr/bin:/bin minus every directory holding a node (all of them on a merged-/usr
    // system with node in /usr/bin); an empty directory if nothing is left.
    const emptyBin = join(tmp, 'empty-bin');
    mkdirSync(emptyBin);
    const dirs = ['/usr/bin', '/bin'].filter((d) => !existsSync(join(d, 'node')));
    const locale = { LANG: 'C', LC_ALL: 'C' };
    binEnv = { PATH: dirs.length ? dirs.join(':') : emptyBin, HOME: join(tmp, 'home'), XDG_CACHE_HOME: join(tmp, 'cache'), ...locale };
    mkdirSync(binEnv.HOME!);
    nodeEnv = { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('INDEXER_API_'))), ...locale };
    const serveHelp = spawnSync(exe, ['serve', '--help'], { cwd: tmp, env: binEnv, encoding: 'utf8', timeout: 90_000 });
    if (/--workers\b/.test(serveHelp.stdout)) oneProcess = ['--workers', '1'];
  });

  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('runs in an environment where `node` is not on PATH', () => {
    const r = spawnSync('/bin/sh', ['-c', 'command -v node'], { env: binEnv, encoding: 'utf8' });
    expect(r.status, `node found on PATH=${binEnv.PATH}: ${r.stdout}`).to.not.equal(0);
    expect(readdirSync(tmp).sort()).to.deep.equal(['dump', 'empty-bin', 'home', 'indexer-api']);
  });

  it('--version prints the embedded build info', () => {
    const r = run(['--version']);
    expect(r.status, r.stderr).to.equal(0);
    expect(r.stdout).to.equal(`${info.version} (commit ${info.commit})\n`);
    expect(r.stderr).to.equal('');
  });

  it('--help is byte-identical to `node bin/indexer-api --help` (yargs bundled as CommonJS)', () => {
    const b = run(['--help']);
    const n = runNode(['--help']);
    expect(b.status, b.stderr).to.equal(0);
    expect(b.stdout).to.contain('indexer-api serve').and.contain('indexer-api import').and.contain('indexer-api generate');
    expect(b.stdout).to.equal(n.stdout);
    expect(b.stderr).to.equal('');
  });

  it('rejects an unknown command like the Node-run CLI (exit 2, same message)', () => {
    const b = run(['frobnicate']);
    const n = runNode(['frobnicate']);
    expect(b.status).to.equal(2);
    expect(n.status).to.equal(2);
    expect(b.stderr).to.equal(n.stderr);
  });

  it('imports a dump directory into chain.sqlite (embedded SQL, addon written to the cache)', () => {
    const r = run(['import', '--from-dump', 'dump', '--out', 'chain.sqlite']);
    expect(r.status, r.stderr).to.equal(0);
    expect(r.stderr).to.not.match(/warning/i);
    expect(statSync(join(tmp, 'chain.sqlite')).size).to.be.greaterThan(0);
    const cache = join(binEnv.XDG_CACHE_HOME!, 'indexer-api');
    expect(statSync(cache).mode & 0o777).to.equal(0o700);
    const files = readdirSync(cache);
    expect(files).to.have.length(1);
    expect(files[0]).to.match(/^[0-9a-f]{32}-better_sqlite3\.node$/);
  });

  describe('serve, side by side with `node bin/indexer-api serve`', () => {
    let bin: Server;
    let node: Server;
    let account: string;
    let owner: string;

    before(async () => {
      const db = join(tmp, 'chain.sqlite');
      if (!existsSync(db)) throw new Error('chain.sqlite was not imported (see the previous test)');
      const [p1, p2] = await twoFreePorts();
      bin = serveBinary(['--db', 'chain.sqlite', ...oneProcess], p1);
      node = serveNode(['--db', db, ...oneProcess], p2);
      await Promise.all([bin.ready(), node.ready()]);
      const firstTx = JSON.parse(readFileSync(join(tmp, 'dump', 'txs.ndjson'), 'utf8').split('\n')[0]) as
        { tx: { tx: { body: { messages: { sender?: string }[] } } } };
      account = firstTx.tx.tx.body.messages.find((m) => m.sender)!.sender!;
      owner = (JSON.parse(readFileSync(join(tmp, 'dump', 'tokens.ndjson'), 'utf8').split('\n')[0]) as { owner: string }).owner;
    });

    /** [path or title, 0 = the path itself | 1 = txs by_account | 2 = nft tokens by_account, status] */
    const routes: [string, 0 | 1 | 2, number][] = [
      ['/status', 0, 200],
      ['/indexer/block/v1/blocks?pagination.limit=3', 0, 200],
      ['/indexer/tx/v1/txs?pagination.limit=5', 0, 200],
      ['/indexer/nft/v1/collections', 0, 200],
      ['by_account (txs)', 1, 200],
      ['by_account (nft tokens)', 2, 200],
      ['/swagger/doc.json', 0, 200],
      ['/swagger', 0, 200],
      ['/swagger/swagger-ui.css', 0, 200],
      ['/swagger/swagger-ui-bundle.js', 0, 200],
      // the explorer's shell, script and stylesheet are assets of the executable too
      ['/', 0, 200],
      ['/nft-collections/0x1/a%2Fb', 0, 200],
      ['/explorer/explorer.js', 0, 200],
      ['/explorer/explorer.css', 0, 200],
      ['/indexer/no/such/route', 0, 404],
      ['/indexer/block/v1/blocks?pagination.limit=abc', 0, 400],
    ];
    for (const [title, kind, status] of routes) {
      it(`GET ${title} → ${status}, byte-identical body`, async () => {
        const path = kind === 1 ? `/indexer/tx/v1/txs/by_account/${account}?pagination.limit=5`
          : kind === 2 ? `/indexer/nft/v1/tokens/by_account/${owner}` : title;
        const [a, b] = await Promise.all([bin.get(path), node.get(path)]);
        expect(a.status, `${path}: ${a.body.toString().slice(0, 300)}`).to.equal(status);
        expect(b.status).to.equal(a.status);
        expect(a.type).to.equal(b.type);
        expect(a.body.length).to.be.greaterThan(0);
        expect(a.body.equals(b.body), `${path}: bodies differ\nbinary: ${a.body.toString().slice(0, 300)}\nnode:   ${b.body.toString().slice(0, 300)}`).to.equal(true);
      });
    }

    it('both stop on SIGTERM with exit status 0', async () => {
      const [a, b] = await Promise.all([bin.stop(), node.stop()]);
      expect(a, bin.output()).to.deep.equal({ code: 0, signal: null });
      expect(b, node.output()).to.deep.equal({ code: 0, signal: null });
    });
  });

  it('`serve --get /status` with no --db serves the embedded Move demo, like the Node-run CLI', () => {
    const b = run(['serve', '--get', '/status']);
    expect(b.status, b.stderr).to.equal(0);
    const status = JSON.parse(b.stdout) as { chain_id: string; height: number };
    expect(status.chain_id).to.match(/move/);
    expect(status.height).to.be.greaterThan(0);
    expect(b.stdout).to.equal(runNode(['serve', '--get', '/status']).stdout);
    for (const vm of ['wasm', 'evm']) {
      const r = run(['serve', '--demo', vm, '--get', '/status']);
      expect(r.status, r.stderr).to.equal(0);
      expect(r.stdout).to.equal(runNode(['serve', '--demo', vm, '--get', '/status']).stdout);
    }
  });

  it('two binaries started at the same time on an empty cache both work', async () => {
    const cache = join(tmp, 'race-cache');
    const env = cacheEnv(cache);
    const [p1, p2] = await twoFreePorts();
    const a = serveBinary(['--demo', 'evm', ...oneProcess], p1, env);
    const b = serveBinary(['--demo', 'evm', ...oneProcess], p2, env);
    await Promise.all([a.ready(), b.ready()]);
    const [ra, rb] = await Promise.all([a.get('/status'), b.get('/status')]);
    expect(ra.status).to.equal(200);
    expect(rb.status).to.equal(200);
    expect(ra.body.equals(rb.body)).to.equal(true);
    const [ea, eb] = await Promise.all([a.stop(), b.stop()]);
    expect(ea, a.output()).to.deep.equal({ code: 0, signal: null });
    expect(eb, b.output()).to.deep.equal({ code: 0, signal: null });
    // content-addressed, renamed into place: one file each, no temp files left behind — and the
    // demo file's recorded check beside it (docs/reliability.md#a-check-once-per-file), itself
    // written by rename: records only, no temp file
    const all = readdirSync(join(cache, 'indexer-api')).sort();
    const files = all.filter((f) => f !== '.indexer-api-checked');
    expect(files).to.have.length(2);
    if (all.includes('.indexer-api-checked')) {
      for (const f of readdirSync(join(cache, 'indexer-api', '.indexer-api-checked'))) expect(f).to.match(/^\d+-\d+\.json$/);
    }
    expect(files.some((f) => /^[0-9a-f]{32}-better_sqlite3\.node$/.test(f))).to.equal(true);
    expect(files.some((f) => /^[0-9a-f]{32}-demo-evm\.sqlite$/.test(f))).to.equal(true);
  });

  it('serve --workers 2: node:cluster re-executes the binary as its workers', async function () {
    if (oneProcess.length === 0) this.skip(); // this build has no --workers
    const port = await freePort();
    const s = serveBinary(['--db', 'chain.sqlite', '--workers', '2'], port);
    await s.ready();
    const [r, expected] = [await s.get('/status'), runNode(['serve', '--db', join(tmp, 'chain.sqlite'), '--get', '/status']).stdout];
    expect(r.status, r.body.toString()).to.equal(200);
    expect(`${r.body.toString()}\n`).to.equal(expected);
    // both workers up (each logs "listening") before the SIGTERM, so it is a clean shutdown
    const deadline = Date.now() + 30_000;
    while ((s.logs().match(/listening/g) ?? []).length < 2 && Date.now() < deadline) await new Promise((d) => setTimeout(d, 50));
    expect(s.proc.exitCode, s.output()).to.equal(null);
    expect(await s.stop(), s.output()).to.deep.equal({ code: 0, signal: null });
  });
});
