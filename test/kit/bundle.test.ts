/**
 * Start-up (bench/README.md, cold start): `node bin/indexer-api` runs build/bundle/indexer-api.js
 * with its V8 code cache (scripts/build-bundle.js), commands are loaded only when they run, and
 * a cluster primary loads no HTTP stack. The bundle must be the same program as build/src.
 */
import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandModule } from 'yargs';
import { COMMANDS } from '../../src/cli';
import { checkCommand } from '../../src/commands/check';
import { followCommand } from '../../src/commands/follow';
import { generateCommand } from '../../src/commands/generate';
import { importCommand } from '../../src/commands/import';
import { serveCommand } from '../../src/commands/serve';
import { publishCommand } from '../../src/commands/publish';
import { cleanEnv, CLI, DEMO, get, ROOT, serveTmp } from '../helpers/serve';

const BUNDLE = join(ROOT, 'build', 'bundle', 'indexer-api.js');
const UNBUNDLED = { INDEXER_NO_BUNDLE: '1' };

function run(args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: ROOT, encoding: 'utf8', env: { ...cleanEnv(), LANG: 'C', ...env }, timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** `serve --db DEMO(wasm) --workers 1` with `env`; resolves with its URL and a stop function. */
async function serve(env: Record<string, string>): Promise<{ url: string; stop(): Promise<number | null> }> {
  const proc = spawn(process.execPath, [CLI, 'serve', '--db', DEMO('wasm'), '--port', '0', '--workers', '1', '--log-level', 'warn'], {
    cwd: ROOT, env: { ...cleanEnv(), ...env }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    proc.stderr.setEncoding('utf8').on('data', (s: string) => {
      stderr += s;
      const m = /serving .* on (http:\/\/\S+)/.exec(stderr);
      if (m) resolve(m[1]);
    });
    proc.once('exit', () => reject(new Error(`serve exited: ${stderr}`)));
  });
  return { url, stop: async () => { proc.kill('SIGTERM'); return exited; } };
}

describe('start-up: the bundled entry, lazy commands, a light cluster primary', function () {
  this.timeout(120_000);

  it('make build made a current bundle (and make fixtures its code cache), which bin/indexer-api runs', () => {
    expect(existsSync(BUNDLE), `${BUNDLE} (run \`make build\`)`).to.equal(true);
    expect(statSync(BUNDLE).mtimeMs).to.be.at.least(statSync(join(ROOT, 'build', 'src', 'cli.js')).mtimeMs);
    const r = run(['--version'], { INDEXER_CODE_CACHE_CHECK: '1' });
    expect(r.status).to.equal(0);
    expect(r.stderr).to.equal('indexer-api: code cache accepted\n');
    // not the bundle: nothing to check
    expect(run(['--version'], { ...UNBUNDLED, INDEXER_CODE_CACHE_CHECK: '1' }).stderr).to.equal('');
  });

  it('the bundle prints the same help, version and errors as build/src (English whatever LANG says)', () => {
    for (const args of [['--help'], ['--version'], ['serve', '--help'], ['import', '--help'], ['generate', '--help'], ['serve', '--no-such-flag'], []]) {
      for (const lang of ['C', 'de_DE.UTF-8']) {
        const a = run(args, { LANG: lang });
        const b = run(args, { LANG: lang, ...UNBUNDLED });
        expect(a, `${args.join(' ')} LANG=${lang}`).to.deep.equal(b);
      }
    }
    // src/cli.ts rewords yargs' messages to quote what was typed: it reads them in English
    expect(run(['serve', '--no-such-flag'], { LANG: 'de_DE.UTF-8' }).stderr).to.match(/^indexer-api: unknown option --no-such-flag$/m);
  });

  it('the bundle serves the same answers as build/src', async () => {
    const bundled = await serve({});
    const plain = await serve(UNBUNDLED);
    try {
      for (const path of [
        '/status', '/indexer/block/v1/blocks?pagination.limit=3', '/indexer/block/v1/blocks/7', '/indexer/block/v1/blocks/abc',
        '/indexer/tx/v1/txs?pagination.limit=2', '/indexer/tx/v1/txs?pagination.limit=x', '/indexer/nft/v1/collections',
        '/swagger/doc.json', '/swagger', '/no/such/route', '/metrics/nope',
      ]) {
        const a = await get(bundled.url + path);
        const b = await get(plain.url + path);
        expect(a.status, path).to.equal(b.status);
        expect(a.headers['content-type'], path).to.equal(b.headers['content-type']);
        expect(a.body, path).to.equal(b.body);
      }
    } finally {
      expect(await bundled.stop()).to.equal(0);
      expect(await plain.stop()).to.equal(0);
    }
  });

  it('the bundle runs import with its parser threads (the worker script is found)', () => {
    const report = join(serveTmp(), 'import-workers.json');
    const preload = join(serveTmp(), 'import-workers.js');
    writeFileSync(preload, `const wt = require('node:worker_threads');
const started = [];
const W = wt.Worker;
wt.Worker = class extends W { constructor(file, o) { started.push(String(file)); super(file, o); } };
process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(report)}, JSON.stringify(started)));`);
    const dump = join(ROOT, 'fixtures', 'demo', 'dumps', 'wasm');
    const summary = (env: Record<string, string>, out: string): unknown => {
      const r = spawnSync(process.execPath, ['-r', preload, CLI, 'import', '--from-dump', dump, '--out', out, '--force', '--quiet', '--json', '--parse-threads', '2'], {
        cwd: ROOT, encoding: 'utf8', env: { ...cleanEnv(), ...env }, timeout: 120_000,
      });
      expect(r.status, r.stderr).to.equal(0);
      const workers = JSON.parse(readFileSync(report, 'utf8')) as string[];
      expect(workers).to.deep.equal([join(ROOT, 'build', 'src', 'records', 'parse', 'worker.js'), join(ROOT, 'build', 'src', 'records', 'parse', 'worker.js')]);
      const j = JSON.parse(r.stdout) as Record<string, unknown>;
      for (const k of ['out', 'seconds', 'stages']) delete j[k];
      return j;
    };
    const bundled = summary({}, join(serveTmp(), 'bundle-import.sqlite'));
    expect(bundled).to.deep.equal(summary(UNBUNDLED, join(serveTmp(), 'plain-import.sqlite')));
  });

  it('the top-level help lists each command as its module describes it', () => {
    const modules: Record<string, CommandModule<object, never>> = {
      serve: serveCommand as CommandModule<object, never>,
      publish: publishCommand as CommandModule<object, never>,
      import: importCommand as CommandModule<object, never>,
      follow: followCommand as CommandModule<object, never>,
      check: checkCommand as CommandModule<object, never>,
      generate: generateCommand as CommandModule<object, never>,
    };
    expect(COMMANDS.map((c) => c.name)).to.deep.equal(Object.keys(modules));
    for (const c of COMMANDS) {
      expect(c.describe, c.name).to.equal(modules[c.name].describe);
      // the command and its positionals as the module declares them (`check [file..]`)
      expect(c.signature ?? c.name, c.name).to.equal(modules[c.name].command);
      expect(c.load(), c.name).to.equal(modules[c.name]);
    }
  });

  it('serve loads neither import, generate nor pg', () => {
    const script = `require(${JSON.stringify(join(ROOT, 'build', 'src', 'cli.js'))}).main(['node', 'x', 'serve', '--db', ${JSON.stringify(DEMO('wasm'))}, '--get', '/status'])
      .then(() => { process.stderr.write(JSON.stringify(Object.keys(require.cache))); });`;
    const r = spawnSync(process.execPath, ['-e', script], { cwd: ROOT, encoding: 'utf8', env: cleanEnv() });
    expect(r.status, r.stderr).to.equal(0);
    const loaded = JSON.parse(r.stderr) as string[];
    expect(loaded.some((f) => f.includes(join('src', 'commands', 'serve.js')))).to.equal(true);
    const unwanted = [join('src', 'commands', 'import.js'), join('src', 'commands', 'generate.js'), join('src', 'import', ''),
      ...['pg', 'pg-cursor', 'js-yaml'].map((m) => join(ROOT, 'node_modules', m, ''))];
    expect(loaded.filter((f) => unwanted.some((u) => f.includes(u)))).to.deep.equal([]);
  });

  it('a cluster primary loads neither Express, the validator nor better-sqlite3', async () => {
    const report = join(serveTmp(), 'primary-modules.json');
    const preload = join(serveTmp(), 'primary-modules.js');
    writeFileSync(preload, `const cluster = require('node:cluster');
if (cluster.isPrimary) process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(report)}, JSON.stringify(Object.keys(require.cache))));`);
    const proc = spawn(process.execPath, ['-r', preload, CLI, 'serve', '--db', DEMO('wasm'), '--port', '0', '--workers', '2'], {
      cwd: ROOT, env: { ...cleanEnv(), ...UNBUNDLED }, stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
    const url = await new Promise<string>((resolve, reject) => {
      proc.stderr.setEncoding('utf8').on('data', (s: string) => {
        stderr += s;
        const m = /serving .* \(miniwasm-demo-1, wasm, height \d+; [^)]*\) on (http:\/\/\S+) \(2 workers\)/.exec(stderr);
        if (m) resolve(m[1]);
      });
      proc.once('exit', () => reject(new Error(`serve exited: ${stderr}`)));
    });
    expect((await get(`${url}/indexer/block/v1/blocks?pagination.limit=1`)).status).to.equal(200);
    proc.kill('SIGTERM');
    expect(await exited).to.equal(0);
    const loaded = JSON.parse(readFileSync(report, 'utf8')) as string[];
    expect(loaded.some((f) => f.endsWith(join('src', 'serve', 'cluster.js')))).to.equal(true);
    expect(loaded.filter((f) => /node_modules[\\/](express|express-openapi-validator|better-sqlite3|prom-client|ajv)[\\/]/.test(f))).to.deep.equal([]);
  });
});
