/**
 * docs/ci.md, for real: the package as `npm pack` makes it, installed from its tarball into an
 * empty project with mocha and vitest from the npm registry (one tarball, one install, shared by
 * every example), and the page's examples written into it exactly as printed and run.
 */
import { expect } from 'chai';
import { spawnSync, SpawnSyncReturns } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import yaml from 'js-yaml';
import { cleanEnv, ROOT } from '../helpers/serve';

const DOC = readFileSync(join(ROOT, 'docs', 'ci.md'), 'utf8');
/** the `allowScripts` object docs/ci.md tells a project to write, used here as printed */
const DOC_ALLOW_SCRIPTS = JSON.parse(/"allowScripts": (\{[^}]*\})/.exec(DOC)?.[1] ?? 'null') as Record<string, boolean>;
/** the newest majors that install and run on Node 20 (vitest 4 brings vite 8) */
const MOCHA = 'mocha@12';
const VITEST = 'vitest@4';

/** `<!-- file: PATH -->` followed by a fenced block: the files the page tells you to write. */
function docFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const m of DOC.matchAll(/<!-- file: (\S+) -->\n```\w*\n([\s\S]*?)\n```/g)) files.set(m[1], `${m[2]}\n`);
  return files;
}

/** The fenced sh block holding `needle`. */
function shellBlock(needle: string): string {
  const block = [...DOC.matchAll(/```sh\n([\s\S]*?)\n```/g)].map((m) => m[1]).find((b) => b.includes(needle));
  if (!block) throw new Error(`docs/ci.md has no sh block with ${needle}`);
  return block;
}

/**
 * The steps of the page's examples left at a framework's default timeout, one line each: a
 * mocha `describe` that does not begin with `this.timeout(…)` (its hooks and tests then run at
 * mocha's 2 s) or a hook or test outside one; a vitest config without `testTimeout`,
 * `hookTimeout` and `teardownTimeout` (5 s, 10 s, 10 s) while a vitest test is there; a GitHub
 * Actions job without `timeout-minutes` (6 h). The default is what a loaded CI runner crosses.
 */
export function stepsAtDefaultTimeout(files: ReadonlyMap<string, string>): string[] {
  const problems: string[] = [];
  const vitestConfig = [...files.keys()].find((f) => /(^|\/)vitest\.config\.m?[jt]s$/.test(f));
  for (const [file, text] of files) {
    if (/\.github\/workflows\/.*\.ya?ml$/.test(file)) {
      const wf = yaml.load(text) as { jobs?: Record<string, Record<string, unknown>> };
      for (const [job, body] of Object.entries(wf.jobs ?? {})) {
        if (typeof body['timeout-minutes'] !== 'number') problems.push(`${file}: job ${job} has no timeout-minutes (GitHub's default: 6 hours)`);
      }
      continue;
    }
    if (!/\.(test|spec)\.m?[jt]s$/.test(file)) continue;
    if (/from ['"]vitest['"]/.test(text)) {
      if (vitestConfig === undefined) problems.push(`${file}: a vitest test without a vitest.config setting its timeouts (vitest's defaults)`);
      continue;
    }
    // mocha: every hook and test inside a describe whose first statement sets the timeout
    const calls = [...text.matchAll(/\b(describe|before|beforeEach|after|afterEach|it)\(/g)];
    if (calls.length > 0 && calls[0][1] !== 'describe') problems.push(`${file}: ${calls[0][1]}() outside a describe, at mocha's default timeout (2 s)`);
    for (const m of text.matchAll(/\bdescribe\((['"`])(.*?)\1,\s*(function\s*\(\)|(?:async\s*)?\(\)\s*=>)\s*\{/g)) {
      const body = text.slice((m.index ?? 0) + m[0].length).replace(/^(\s*\/\/[^\n]*\n)*\s*/, '');
      if (!m[3].startsWith('function') || !/^this\.timeout\(\s*[1-9][\d_]*\s*\)/.test(body)) {
        problems.push(`${file}: describe('${m[2]}') does not begin with this.timeout(…): its hooks and tests run at mocha's default (2 s)`);
      }
    }
  }
  if (vitestConfig !== undefined) {
    const config = files.get(vitestConfig) as string;
    for (const key of ['testTimeout', 'hookTimeout', 'teardownTimeout']) {
      if (!new RegExp(`\\b${key}\\s*:\\s*[1-9]`).test(config)) problems.push(`${vitestConfig}: no ${key} (vitest's default)`);
    }
  }
  return problems;
}

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}, timeout = 300_000): SpawnSyncReturns<string> {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env: { ...cleanEnv(), ...env }, timeout });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} (in ${cwd}) exited ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
  return r;
}

describe('docs/ci.md: no example step at a framework\'s default timeout', () => {
  it('every mocha describe sets its timeout first, the vitest config its three, the workflow job its timeout-minutes', () => {
    expect(stepsAtDefaultTimeout(docFiles())).to.deep.equal([]);
  });

  it('finds each kind of step left at its default (the check fails when it should)', () => {
    const files = docFiles();
    const mocha = files.get('test/api.test.mjs') as string;
    const config = files.get('vitest.config.mjs') as string;
    const workflow = files.get('.github/workflows/wallet.yml') as string;
    const broken = new Map(files);
    broken.set('test/api.test.mjs', mocha.replace(/^\s*this\.timeout\([^)]*\);\n/m, ''));
    broken.set('test/more.test.mjs', "before(() => {});\ndescribe('x', () => { it('y', () => {}); });\n");
    broken.set('vitest.config.mjs', config.replace(/^\s*hookTimeout:.*\n/m, ''));
    broken.set('.github/workflows/wallet.yml', workflow.replace(/^\s*timeout-minutes:.*\n/m, ''));
    expect(stepsAtDefaultTimeout(broken)).to.deep.equal([
      "test/api.test.mjs: describe('my wallet against a real indexer API') does not begin with this.timeout(…): its hooks and tests run at mocha's default (2 s)",
      '.github/workflows/wallet.yml: job wallet has no timeout-minutes (GitHub\'s default: 6 hours)',
      "test/more.test.mjs: before() outside a describe, at mocha's default timeout (2 s)",
      "test/more.test.mjs: describe('x') does not begin with this.timeout(…): its hooks and tests run at mocha's default (2 s)",
      "vitest.config.mjs: no hookTimeout (vitest's default)",
    ]);
    const noConfig = new Map(files);
    noConfig.delete('vitest.config.mjs');
    expect(stepsAtDefaultTimeout(noConfig)).to.deep.equal(["test/wallet.test.mjs: a vitest test without a vitest.config setting its timeouts (vitest's defaults)"]);
  });
});

describe('docs/ci.md: the packed package in an empty project, every example run', function () {
  this.timeout(1_200_000);
  let tmp: string;
  let project: string;
  let tarball: string;
  /** the job's server, killed here should its kill step not have run */
  let stopLater: number | undefined;

  before(() => {
    tmp = mkdtempSync(join(tmpdir(), 'indexer-api-package-'));
    run('npm', ['pack', '--pack-destination', tmp, '--silent'], ROOT);
    const packed = readdirSync(tmp).filter((f) => f.endsWith('.tgz'));
    expect(packed).to.have.length(1);
    tarball = join(tmp, packed[0]);
    project = join(tmp, 'project');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({
      name: 'wallet-tests', version: '1.0.0', private: true, type: 'module', allowScripts: DOC_ALLOW_SCRIPTS,
    }, null, 2));
    // better-sqlite3 compiles here: about a minute on an idle 2-core machine, several when it is shared
    run('npm', ['install', '--no-audit', '--no-fund', '--save-dev', tarball, MOCHA, VITEST], project, {}, 900_000);
    for (const [file, text] of docFiles()) {
      mkdirSync(dirname(join(project, file)), { recursive: true });
      writeFileSync(join(project, file), text);
    }
  });
  after(() => {
    if (stopLater) try { process.kill(stopLater, 'SIGKILL'); } catch { /* already stopped, as it should be */ }
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('ships the built program, its types, the schema and the demo snapshots — not sources, tests or dumps', () => {
    const list = run('tar', ['-tzf', tarball], tmp).stdout.split('\n').filter((l) => l !== '');
    for (const f of ['package/bin/indexer-api', 'package/bin/run-bundle.js', 'package/build/bundle/indexer-api.js', 'package/build/src/index.js', 'package/build/src/cli.js', 'package/build/types/src/index.d.ts',
      'package/build/types/src/lib/log.d.ts',
      'package/build/openapi.json', 'package/sql/001-tables.sql', 'package/openapi.yaml', 'package/fixtures/demo/evm.sqlite', 'package/docs/ci.md']) {
      expect(list).to.include(f);
    }
    expect(list.filter((f) => /^package\/(src|test|bench|build\/test|build\/bench|fixtures\/demo\/dumps)\//.test(f) || f.endsWith('.map'))).to.deep.equal([]);
    // a code cache is V8's for one Node.js build: made on the user's machine instead (next test)
    expect(list.filter((f) => f.endsWith('.cache'))).to.deep.equal([]);
  });

  it('starts from the shipped bundle; its code cache is made on the first run in the user cache directory', () => {
    const xdg = join(tmp, 'xdg-cache');
    const cli = (env: NodeJS.ProcessEnv, args = ['--version']): SpawnSyncReturns<string> => run('npx', ['indexer-api', ...args], project, { INDEXER_CODE_CACHE_CHECK: '1', LANG: 'C', ...env });
    const first = cli({ XDG_CACHE_HOME: xdg });
    expect(first.stderr).to.equal('indexer-api: code cache absent\n');
    const made = readdirSync(join(xdg, 'indexer-api', 'code-cache'));
    expect(made).to.have.length(1);
    expect(made[0].startsWith(`node${process.version}-v8-${process.versions.v8}-${process.arch}-`), made[0]).to.equal(true);
    expect(made[0]).to.match(/-[0-9a-f]{16}\.cache$/);
    const second = cli({ XDG_CACHE_HOME: xdg });
    expect(second.stderr).to.equal('indexer-api: code cache accepted\n');
    expect(second.stdout).to.equal(first.stdout);
    // --version cached little of what a server runs: a serve replaces it with a fuller cache
    const small = statSync(join(xdg, 'indexer-api', 'code-cache', made[0])).size;
    const served = cli({ XDG_CACHE_HOME: xdg }, ['serve', '--demo', 'wasm', '--get', '/indexer/block/v1/blocks?pagination.limit=1']);
    expect(served.stderr).to.equal('indexer-api: code cache accepted\n');
    expect(readdirSync(join(xdg, 'indexer-api', 'code-cache'))).to.deep.equal(made);
    expect(statSync(join(xdg, 'indexer-api', 'code-cache', made[0])).size).to.be.greaterThan(small * 2);
    expect(cli({ XDG_CACHE_HOME: xdg }, ['serve', '--demo', 'wasm', '--get', '/status']).stderr).to.equal('indexer-api: code cache accepted\n');
    // a cache directory that cannot be made (under a regular file) is no error: just no cache
    const blocked = cli({ XDG_CACHE_HOME: join(project, 'package.json', 'cache') });
    expect(blocked.stdout).to.equal(first.stdout);
    expect(blocked.stderr).to.equal('indexer-api: code cache absent\n');
    // ~/.cache without XDG_CACHE_HOME
    const home = join(tmp, 'home');
    mkdirSync(home);
    cli({ XDG_CACHE_HOME: '', HOME: home });
    expect(readdirSync(join(home, '.cache', 'indexer-api', 'code-cache'))).to.deep.equal(made);
    // the installed bundle runs yargs from the project's node_modules: its messages, English
    // whatever LANG says (src/cli.ts rewords them), a usage error exit 2
    const r = spawnSync('npx', ['indexer-api', 'serve', '--no-such-flag'], { cwd: project, encoding: 'utf8', env: { ...cleanEnv(), LANG: 'de_DE.UTF-8', XDG_CACHE_HOME: xdg } });
    expect(r.stderr).to.match(/^indexer-api: unknown option --no-such-flag$/m);
    expect(r.status).to.equal(2);
  });

  it('cuts the fixture with the command of "Cut a fixture"', () => {
    run('bash', ['-euo', 'pipefail', '-c', shellBlock('--from-snapshot')], project);
    const v = run('npx', ['indexer-api', 'serve', '--db', 'test/fixture.sqlite', '--get', '/status'], project);
    expect(JSON.parse(v.stdout)).to.include({ chain_id: 'miniwasm-demo-1' });
  });

  it('types startServer for TypeScript users (the shipped .d.ts)', () => {
    writeFileSync(join(project, 'typed.ts'), [
      "import { startServer, LogLevel, RunningIndexerApi } from 'indexer-api';",
      "export const ok: Promise<RunningIndexerApi> = startServer({ db: 'test/fixture.sqlite', port: 0 });",
      "// @ts-expect-error: not a demo",
      "startServer({ demo: 'cosmos' });",
      "export const port: Promise<number> = ok.then((s) => s.port);",
      "export const level: LogLevel = 'debug';",
      "// @ts-expect-error: not a log level",
      "startServer({ demo: 'move', logLevel: 'verbose' });",
    ].join('\n'));
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, module: 'node16', moduleResolution: 'node16', types: [] }, files: ['typed.ts'],
    }));
    run(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], project);
  });

  it('runs the mocha example; with mocha\'s default timeout at 1 ms it still passes (no step relies on the default)', () => {
    const r = run('npx', ['mocha', 'test/api.test.mjs'], project);
    expect(r.stdout).to.match(/2 passing/);
    // a step at the default would now time out: startServer alone takes hundreds of ms
    const strict = run('npx', ['mocha', '--timeout', '1', 'test/api.test.mjs'], project);
    expect(strict.stdout).to.match(/2 passing/);
  });

  it('runs the vitest example (globalSetup + inject)', () => {
    const r = run('npx', ['vitest', 'run', 'test/wallet.test.mjs'], project, { CI: '1' });
    expect(r.stdout).to.match(/1 passed/);
  });

  it("runs the GitHub Actions job's steps: serve --port 0 read from the first stdout line, curl, kill", async () => {
    const wf = yaml.load(docFiles().get('.github/workflows/wallet.yml') as string) as { jobs: Record<string, { steps: { run?: string }[] }> };
    const steps = Object.values(wf.jobs)[0].steps.filter((s) => s.run !== undefined && s.run.trim() !== 'npm ci');
    expect(steps).to.have.length(3);
    const githubEnv = join(tmp, 'github-env');
    writeFileSync(githubEnv, '');
    let env: NodeJS.ProcessEnv = { GITHUB_ENV: githubEnv };
    const outputs: string[] = [];
    for (const step of steps) {
      outputs.push(run('bash', ['-eo', 'pipefail', '-c', step.run as string], project, env, 60_000).stdout);
      const vars = readFileSync(githubEnv, 'utf8').split('\n').filter((l) => l.includes('=')).map((l) => l.split(/=(.*)/s).slice(0, 2));
      env = { ...env, ...Object.fromEntries(vars) };
      if (env.INDEXER_API_PID) stopLater = Number(env.INDEXER_API_PID);
    }
    expect(env.INDEXER_API_URL).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(JSON.parse(outputs[1])).to.include({ chain_id: 'miniwasm-demo-1' });
    // the kill step stopped the server: its process ends, its port no longer answers
    const alive = (): boolean => { try { process.kill(stopLater as number, 0); return true; } catch { return false; } };
    for (let i = 0; i < 100 && alive(); i++) await new Promise((r) => setTimeout(r, 100));
    expect(alive(), 'the server outlived the kill step').to.equal(false);
    const after = await fetch(`${env.INDEXER_API_URL}/status`).then(() => 'answered', () => 'refused');
    expect(after).to.equal('refused');
  });
});
