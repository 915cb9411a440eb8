/**
 * The executable as an operator uses it: `node bin/indexer-api …` in a child process.
 */
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, truncateSync, writeFileSync,
} from 'node:fs';
import { get } from 'node:http';
import { join } from 'node:path';
import yargs, { Argv, CommandModule } from 'yargs';
import { importCommand } from '../src/commands/import';
import { serveCommand } from '../src/commands/serve';
import { ROOT, testChain, testTmp } from './helpers/app';
import { freePort } from './support/net';

const BIN = join(ROOT, 'bin', 'indexer-api');

interface Run { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }

/** The environment without INDEXER_API_* (every option can come from there). */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('INDEXER_API'))) as NodeJS.ProcessEnv;
}

function cli(args: string[], timeoutMs = 30_000, env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...cleanEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`indexer-api ${args.join(' ')} did not exit within ${timeoutMs} ms`)); }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => { clearTimeout(timer); resolve({ code, signal, stdout, stderr }); });
  });
}

function oneLine(text: string): string {
  const lines = text.trim().split('\n');
  expect(lines, `expected one line on stderr, got:\n${text}`).to.have.length(1);
  return lines[0];
}

/** `--name` → the help text of that option (its line and continuation lines). */
function optionBlocks(help: string): Map<string, string> {
  const blocks = new Map<string, string>();
  let current: string | undefined;
  let inOptions = false;
  for (const line of help.split('\n')) {
    if (/^\S/.test(line)) { inOptions = line.startsWith('Options:'); current = undefined; continue; }
    if (!inOptions) continue;
    // `  -h, --help` or `      --port` (the column of the long names is shifted by the short aliases)
    const m = /^ {2}(?:-\w, | {4})?--([a-z][\w-]*)\s/.exec(line + ' ');
    if (m) { current = m[1]; blocks.set(current, line); continue; }
    if (current && /^ {10,}\S/.test(line)) blocks.set(current, `${blocks.get(current) as string} ${line.trim()}`);
    else current = undefined;
  }
  return blocks;
}

/** The options a command module declares, with yargs' own view of their defaults. */
function declaredOptions(cmd: CommandModule<object, never>): { keys: string[]; defaults: Record<string, unknown>; descriptions: Record<string, string> } {
  const y = yargs([]);
  (cmd.builder as (y: Argv) => Argv)(y);
  const o = (y as unknown as { getOptions(): unknown }).getOptions() as { key: Record<string, boolean>; default: Record<string, unknown>; defaultDescription: Record<string, string> };
  return { keys: Object.keys(o.key).filter((k) => k !== 'help' && k !== 'version'), defaults: o.default, descriptions: o.defaultDescription };
}

function expectDocumented(help: string, cmd: CommandModule<object, never>): void {
  const blocks = optionBlocks(help);
  const { keys, defaults, descriptions } = declaredOptions(cmd);
  expect(keys.length).to.be.greaterThan(2);
  for (const key of keys) {
    const block = blocks.get(key);
    expect(block, `--${key} is listed`).to.be.a('string');
    const text = (block as string).replace(`--${key}`, '').replace(/\[[^\]]*\]/g, '').trim();
    expect(text, `--${key} has a description`).to.not.equal('');
    if (defaults[key] !== undefined) {
      const shown = descriptions[key] ?? (typeof defaults[key] === 'string' ? JSON.stringify(defaults[key]) : String(defaults[key]));
      expect(block, `--${key} shows its default`).to.contain(`[default: ${shown}]`);
    }
  }
}


function httpGet(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => { body += d.toString(); });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

function expectedStatus(meta: Record<string, unknown>, lastHeight: number): Record<string, unknown> {
  const s: Record<string, unknown> = {
    version: meta.version ?? 'dev', commit_hash: meta.commit_hash ?? 'unknown', chain_id: meta.chain_id, height: Number(meta.height ?? lastHeight),
  };
  if (Number(meta.internal_tx_height ?? 0) > 0) s.internal_tx_height = Number(meta.internal_tx_height);
  if (Number(meta.rich_list_height ?? 0) > 0) s.rich_list_height = Number(meta.rich_list_height);
  return s;
}

describe('indexer-api (the command line)', function () {
  this.timeout(60_000);
  const dir = (name: string): string => {
    const d = join(testTmp(), 'cli', name);
    mkdirSync(d, { recursive: true });
    return d;
  };

  describe('--help and --version', () => {
    it('each command\'s --help says how its options are read from the environment and which yes/no spellings they take', async () => {
      const { COMMANDS } = await import('../src/cli');
      const helps = await Promise.all(COMMANDS.map((c) => cli([c.name, '--help'])));
      COMMANDS.forEach((c, i) => {
        expect(helps[i].code, c.name).to.equal(0);
        const text = helps[i].stdout.replace(/\s+/g, ' ');
        expect(text, c.name).to.contain('Every option above can also be set as INDEXER_API_<OPTION>');
        expect(text, c.name).to.contain(`${c.name} ignores the variables of options it does not take`);
        expect(text, c.name).to.contain('A yes/no option takes true or false (or 1, t, T, TRUE, True / 0, f, F, FALSE, False), nothing else.');
      });
    });

    it('lists the serve, import and generate commands', async () => {
      const r = await cli(['--help']);
      expect(r.code).to.equal(0);
      for (const c of ['serve', 'import', 'generate']) expect(r.stdout).to.match(new RegExp(`indexer-api ${c}\\b`));
    });

    it('documents every serve option, with its default', async () => {
      const r = await cli(['serve', '--help']);
      expect(r.code).to.equal(0);
      expectDocumented(r.stdout, serveCommand as CommandModule<object, never>);
    });

    it('documents every import option, with its default', async () => {
      const r = await cli(['import', '--help']);
      expect(r.code).to.equal(0);
      expectDocumented(r.stdout, importCommand as CommandModule<object, never>);
    });

    it('-h, -v and `help [COMMAND]` are --help and --version', async () => {
      const [h, help, long, v, version] = await Promise.all([cli(['-h']), cli(['help']), cli(['--help']), cli(['-v']), cli(['--version'])]);
      for (const r of [h, help, long, v, version]) expect(r.code).to.equal(0);
      expect(h.stdout).to.equal(long.stdout);
      expect(help.stdout).to.equal(long.stdout);
      expect(v.stdout).to.equal(version.stdout);
      for (const c of ['serve', 'follow']) {
        const [a, b, d] = await Promise.all([cli(['help', c]), cli([c, '--help']), cli([c, '-h'])]);
        expect(a.code).to.equal(0);
        expect(a.stdout).to.equal(b.stdout).and.equal(d.stdout).and.contain(`indexer-api ${c}`);
      }
    });

    it('shows a default (or what its absence means) for every option of every command but the source-naming ones', async () => {
      // options that name what to do (a source, a mode, an output) have no default to show
      const modes = new Set(['get', 'pull', 'from-postgres', 'from-api', 'from-dump', 'from-snapshot', 'validators', 'rest-url',
        'denom-contracts', 'accounts', 'collections', 'base', 'out', 'db', 'to', 'help', 'version']);
      for (const c of ['serve', 'import', 'follow', 'publish', 'generate']) {
        const r = await cli([c, '--help']);
        for (const [key, block] of optionBlocks(r.stdout)) {
          if (modes.has(key) && !(c === 'serve' && key === 'db') || /\[required\]/.test(block)) continue;
          expect(block, `${c} --${key}`).to.match(/\[default: /);
        }
      }
    });

    it('prints the version and the commit it was built from', async () => {
      const r = await cli(['--version']);
      expect(r.code).to.equal(0);
      const line = r.stdout.trim();
      expect(line).to.match(/^\S+ \(commit \S+\)$/);
      const info = join(ROOT, 'build', 'build-info.json');
      if (existsSync(info)) {
        const { version, commit } = JSON.parse(readFileSync(info, 'utf8')) as { version: string; commit: string };
        expect(line).to.equal(`${version} (commit ${commit})`);
      }
    });
  });

  describe('usage errors: exit 2, one message quoting what was typed', () => {
    /** The message line (yargs' "Run 'indexer-api --help'" line follows it). */
    const usage = async (args: string[]): Promise<string> => {
      const r = await cli(args);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).to.equal(2);
      expect(r.stdout, `${args.join(' ')}: nothing on stdout`).to.equal('');
      const lines = r.stderr.trim().split('\n');
      expect(lines, r.stderr).to.have.length(2);
      // the hint names the help of the command typed
      const command = ['serve', 'import', 'follow', 'publish', 'generate'].includes(args[0]) ? `${args[0]} ` : '';
      expect(lines[1]).to.equal(`Run 'indexer-api ${command}--help' for usage.`);
      return lines[0];
    };

    const cases: [string[], string][] = [
      [['serve', '--port'], 'indexer-api: --port needs a value'],
      [['serve', '--port', 'abc'], 'indexer-api: --port must be a whole number from 0 to 65535, got "abc"'],
      [['serve', '--port', '99999'], 'indexer-api: --port must be a whole number from 0 to 65535, got "99999"'],
      [['serve', '--port=8080.5'], 'indexer-api: --port must be a whole number from 0 to 65535, got "8080.5"'],
      [['serve', '--workers', 'abc'], 'indexer-api: --workers must be a whole number ≥ 1, got "abc"'],
      [['serve', '--workers', '0'], 'indexer-api: --workers must be a whole number ≥ 1, got "0"'],
      [['serve', '--cache-max-age', 'abc'], 'indexer-api: --cache-max-age must be a whole number ≥ 0, got "abc"'],
      [['serve', '--cache-bytes', '-1'], 'indexer-api: --cache-bytes must be a size of at least 0 bytes: a whole number of bytes, or with a unit as in 64m, 1g, 512KiB (binary: 1k = 1024), got "-1"'],
      [['serve', '--cache-validator-bytes', '1q'], 'indexer-api: --cache-validator-bytes must be a size of at least 0 bytes: a whole number of bytes, or with a unit as in 64m, 1g, 512KiB (binary: 1k = 1024), got "1q"'],
      [['serve', '--max-lag-s', '0'], 'indexer-api: --max-lag-s must be a number > 0, got "0"'],
      [['serve', '--shutdown-timeout-ms', '5s'], 'indexer-api: --shutdown-timeout-ms must be a whole number ≥ 0, got "5s"'],
      [['serve', '--demo'], 'indexer-api: --demo needs a value'],
      [['serve', '--demo', 'cosmwasm'], 'indexer-api: --demo must be one of "move", "wasm", "evm", got "cosmwasm"'],
      [['serve', '--log-level', 'loud'], 'indexer-api: --log-level must be one of "error", "warn", "info", "debug", got "loud"'],
      [['import', '--out', 'x.sqlite'], 'indexer-api: name exactly one source: --from-dump DIR, --from-postgres DSN or --from-api URL (or, with --accounts, --from-snapshot FILE)'],
      [['import', '--from-dump', 'd', '--out', 'x.sqlite', '--rate', '0'], 'indexer-api: --rate must be a number > 0, got "0"'],
      [['import', '--from-dump', 'd', '--out', 'x.sqlite', '--concurrency', 'many'], 'indexer-api: --concurrency must be a whole number ≥ 1, got "many"'],
      [['import', '--from-dump', 'd', '--out', 'x.sqlite', '--timeout='], 'indexer-api: --timeout needs a value: a whole number ≥ 1'],
      [['import', '--from-dump', 'd', '--out', 'x.sqlite', '--check', 'full'], 'indexer-api: --check must be one of "integrity", "quick", "none", got "full"'],
      [['follow', '--db', 'x.sqlite'], 'indexer-api: name exactly one source: --from-api URL or --from-postgres DSN'],
      [['follow', '--db', 'x.sqlite', '--from-api', 'http://127.0.0.1:9', '--batch-blocks', '1k'], 'indexer-api: --batch-blocks must be a whole number ≥ 1, got "1k"'],
      [['follow', '--db', 'x.sqlite', '--from-api', 'http://127.0.0.1:9', '--metrics-port', '70000'], 'indexer-api: --metrics-port must be a whole number from 0 to 65535, got "70000"'],
      [['generate', '--vm', 'move', '--out', 'd', '--txs', 'ten'], 'indexer-api: --txs must be a whole number ≥ 0, got "ten"'],
      [['generate', '--vm', 'move', '--out', 'd', '--seed', '1.5'], `indexer-api: --seed must be a whole number ≥ ${Number.MIN_SAFE_INTEGER}, got "1.5"`],
      [['publish', '--db', 'a.sqlite', '--to', 'd', '--keep', '0'], 'indexer-api: --keep must be a whole number ≥ 1, got "0"'],
      [['publish', '--db', 'a.sqlite', '--to', 'd', '--compress', 'zstd'], 'indexer-api: --compress must be one of "auto", "gzip", "none", got "zstd"'],
      // checked while parsing, like every other option (they once failed in the run, exit 1)
      [['follow', '--db', 'x.sqlite', '--from-api', 'http://127.0.0.1:9', '--interval', '2x'], 'indexer-api: --interval must be a duration like 2s, 500ms, 2m or 1h, at least 50ms, got "2x"'],
      [['follow', '--db', 'x.sqlite', '--from-api', 'http://127.0.0.1:9', '--interval', '0'], 'indexer-api: --interval must be a duration like 2s, 500ms, 2m or 1h, at least 50ms, got "0"'],
      [['follow', '--db', 'x.sqlite', '--from-api', 'http://127.0.0.1:9', '--interval', '20ms'], 'indexer-api: --interval must be a duration like 2s, 500ms, 2m or 1h, at least 50ms, got "20ms"'],
      [['follow', '--db', 'x.sqlite', '--from-api', 'http://127.0.0.1:9', '--richlist-interval', '10ms'], 'indexer-api: --richlist-interval must be a duration like 2s, 500ms, 2m or 1h, at least 50ms (or 0: never), got "10ms"'],
      [['follow', '--db', 'x.sqlite', '--from-api', 'http://127.0.0.1:9', '--max-backoff', 'soon'], 'indexer-api: --max-backoff must be a duration like 2s, 500ms, 2m or 1h, at least 50ms, got "soon"'],
      [['follow', '--db', 'x.sqlite', '--from-api', 'notaurl'], 'indexer-api: --from-api must be an http:// or https:// URL, got "notaurl"'],
      [['serve', '--pull', 'http://o/manifest.json', '--db', 'x.sqlite', '--pull-interval', '0'], 'indexer-api: --pull-interval must be a duration like 2s, 500ms, 2m or 1h, at least 50ms, got "0"'],
      [['import', '--from-api', 'notaurl', '--out', 'x.sqlite'], 'indexer-api: --from-api must be an http:// or https:// URL, got "notaurl"'],
      [['import', '--from-postgres', 'postgres://h/db', '--rest-url', 'node:1317', '--out', 'x.sqlite'], 'indexer-api: --rest-url must be an http:// or https:// URL, got "node:1317"'],
      [['import', '--from-api', 'http://127.0.0.1:9', '--from-height', '100', '--to-height', '50', '--out', 'x.sqlite'], 'indexer-api: --to-height 50 is below --from-height 100: no height to crawl'],
      [['import', '--from-api', 'http://127.0.0.1:9', '--accounts', 'bogus', '--out', 'x.sqlite'], 'indexer-api: --accounts: "bogus" is not an address (not a bech32 or 0x address)'],
      [['import', '--from-dump', 'd', '--accounts', 'init1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqnrql8a', '--out', 'x.sqlite'], 'indexer-api: --accounts cuts from --from-api or --from-snapshot, not from a dump or PostgreSQL'],
      [['serve', '--port', '9000', '--ops-port', '9000'], 'indexer-api: --ops-port 9000 is --port 9000: the operations port must be another port'],
      [['serve', '--pull', 'http://o/manifest.json'], 'indexer-api: --pull needs --db: the local file the pulled snapshot is kept in'],
      // an unknown option: the nearest one of the command, when there is one
      [['follow', '--db', 'x.sqlite', '--from-api', 'http://127.0.0.1:9', '--intervl', '2s'], 'indexer-api: unknown option --intervl (did you mean --interval?)'],
      [['serve', '--prot', '9000'], 'indexer-api: unknown option --prot (did you mean --port?)'],
      [['import', '--from-dump', 'd', '--out', 'x.sqlite', '--zzzzzz'], 'indexer-api: unknown option --zzzzzz'],
      [['help', 'nope'], 'indexer-api: unknown command "nope" (commands: serve, publish, import, follow, check, generate)'],
    ];
    for (const [args, line] of cases) {
      it(args.join(' '), async () => {
        expect(await usage(args)).to.equal(line);
      });
    }

    it('an unknown command names itself, the commands, and for `pull` the serve option that pulls', async () => {
      expect(await usage(['pull'])).to.equal(
        'indexer-api: unknown command "pull": a replica pulls with \'indexer-api serve --pull URL/manifest.json --db FILE\' (commands: serve, publish, import, follow, check, generate)',
      );
      expect(await usage(['srve', '--db', 'x'])).to.equal('indexer-api: unknown command "srve" (commands: serve, publish, import, follow, check, generate)');
    });

    it('a bad value from the environment is a usage error too', async () => {
      const r = await new Promise<Run>((resolve, reject) => {
        const child = spawn(process.execPath, [BIN, 'serve'], { cwd: ROOT, env: { ...cleanEnv(), INDEXER_API_PORT: 'http' }, stdio: ['ignore', 'pipe', 'pipe'] });
        let stderr = '';
        child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
        child.on('error', reject);
        child.on('close', (code, signal) => resolve({ code, signal, stdout: '', stderr }));
      });
      expect(r.code).to.equal(2);
      // named by its variable: the command line has no --port to look for
      expect(r.stderr).to.contain('indexer-api: INDEXER_API_PORT (--port) must be a whole number from 0 to 65535, got "http"\n');
    });

    it('a yes/no option takes Go\'s spellings and refuses any other, typed or from its variable (exit 2, one line naming it)', async () => {
      const demo = join(ROOT, 'fixtures', 'demo', 'wasm.sqlite');
      const runs = await Promise.all([
        cli(['serve', '--db', demo, '--verify=yes', '--get', '/status']),
        cli(['serve', '--db', demo, '--get', '/status'], 30_000, { INDEXER_API_VERIFY: 'maybe' }),
        cli(['check', '--json=1', demo]),
        cli(['serve', '--db', demo, '--get', '/status'], 30_000, { INDEXER_API_VERIFY: 'TRUE' }),
      ]);
      expect(runs[0].code).to.equal(2);
      expect(runs[0].stderr.split('\n')[0]).to.equal('indexer-api: --verify must be true or false (or 1, t, T, TRUE, True / 0, f, F, FALSE, False), got "yes"');
      expect(runs[1].code).to.equal(2);
      expect(runs[1].stderr.split('\n')[0]).to.equal('indexer-api: INDEXER_API_VERIFY (--verify) must be true or false (or 1, t, T, TRUE, True / 0, f, F, FALSE, False), got "maybe"');
      expect(runs[2].code).to.equal(0);
      expect(JSON.parse(runs[2].stdout)).to.include({ ok: true, chain_id: 'miniwasm-demo-1' });
      expect(runs[3].code, runs[3].stderr).to.equal(0);
    });

    it('variables meant for other commands are ignored: serve\'s set for every command break none of the others', async () => {
      const demo = join(ROOT, 'fixtures', 'demo', 'move.sqlite');
      const env = { INDEXER_API_PORT: '9', INDEXER_API_HOST: '127.0.0.1', INDEXER_API_NO_VERIFY: '1', INDEXER_API_WORKERS: '1', INDEXER_API_TO: dir('env-to') };
      const [check, publish, serve, missing] = await Promise.all([
        cli(['check', demo], 30_000, env),
        cli(['publish', '--db', demo, '--quiet', '--compress', 'none'], 30_000, env),
        cli(['serve', '--db', demo, '--get', '/status'], 30_000, { ...env, INDEXER_API_PORT: '0' }),
        cli(['serve', '--get', '/status'], 30_000, { INDEXER_API_DB: join(dir('env-db'), 'missing.sqlite') }),
      ]);
      expect(check.code, check.stderr).to.equal(0);
      expect(check.stdout).to.match(/move\.sqlite: ok/);
      expect(publish.code, publish.stderr).to.equal(0);
      expect(publish.stdout).to.match(/^indexer-api: published height 400 as /);
      expect(serve.code, serve.stderr).to.equal(0);
      expect(JSON.parse(serve.stdout)).to.have.property('version');
      // a failure of the run about an option set by its variable names the variable
      expect(missing.code).to.equal(1);
      expect(oneLine(missing.stderr)).to.match(/^indexer-api: INDEXER_API_DB \(--db\) \S+missing\.sqlite: no such snapshot file$/);
    });

    it('the variable is named for every kind of check, and the flag when the flag was typed', async () => {
      const { usageMessage } = await import('../src/cli');
      const { nameEnvOrigin } = await import('../src/settings/command-line');
      // what prepareArgs gives: the options that came from a variable (a typed flag never does)
      const fromEnv = new Map([['port', 'INDEXER_API_PORT'], ['demo', 'INDEXER_API_DEMO'], ['interval', 'INDEXER_API_INTERVAL'], ['db', 'INDEXER_API_DB']]);
      expect(nameEnvOrigin('--port must be a whole number from 0 to 65535, got "abc"', fromEnv))
        .to.equal('INDEXER_API_PORT (--port) must be a whole number from 0 to 65535, got "abc"');
      expect(nameEnvOrigin('--port must be a whole number from 0 to 65535, got "x"', new Map()))
        .to.equal('--port must be a whole number from 0 to 65535, got "x"');
      expect(nameEnvOrigin('--interval must be a duration like 2s, got "0"', fromEnv)).to.match(/^INDEXER_API_INTERVAL \(--interval\) /);
      expect(nameEnvOrigin('--host must be …', fromEnv)).to.equal('--host must be …');
      // --db-dir is not --db
      expect(nameEnvOrigin('--db-dir x: no such directory', fromEnv)).to.equal('--db-dir x: no such directory');
      expect(usageMessage('Invalid values:\n  Argument: demo, Given: "foo", Choices: "move", "wasm", "evm"', [], ['serve', '--demo=foo'], fromEnv))
        .to.equal('INDEXER_API_DEMO (--demo) must be one of "move", "wasm", "evm", got "foo"');
      expect(usageMessage('Not enough arguments following: port', [], ['serve', '--port'], new Map())).to.equal('--port needs a value');
    });

    it('--help still labels the numeric options [number] (their text reaches the check unparsed)', async () => {
      const r = await cli(['serve', '--help']);
      const blocks = optionBlocks(r.stdout);
      for (const key of ['port', 'workers', 'cache-max-age', 'max-lag-s']) expect(blocks.get(key), key).to.contain('[number]');
    });

    it('a failure of the command itself (not its usage) still exits 1', async () => {
      const r = await cli(['serve', '--db', join(dir('usage'), 'missing.sqlite'), '--get', '/status']);
      expect(r.code).to.equal(1);
      expect(oneLine(r.stderr)).to.match(/missing\.sqlite/);
    });
  });

  it('`make serve PORT=9000` serves on that port: the three demos as one replica (DEMO picks one alone)', () => {
    // run from `make test` too: without the parent's MAKEFLAGS / MAKELEVEL (a sub-make prints "Leaving directory" last)
    const env: NodeJS.ProcessEnv = { ...cleanEnv(), PORT: '', DEMO: '' };
    for (const k of ['MAKEFLAGS', 'MFLAGS', 'MAKELEVEL', 'MAKEOVERRIDES']) delete env[k];
    const plan = (vars: string[]): string => execFileSync('make', ['--no-print-directory', '-n', 'serve', ...vars], { cwd: ROOT, env, encoding: 'utf8' }).trim().split('\n').pop() as string;
    expect(plan(['PORT=9000', 'DEMO=evm'])).to.equal('node bin/indexer-api serve --demo evm --port 9000');
    expect(plan([])).to.equal('node bin/indexer-api serve --db fixtures/demo/move.sqlite --db fixtures/demo/wasm.sqlite --db fixtures/demo/evm.sqlite');
    expect(plan(['PORT=9000'])).to.equal('node bin/indexer-api serve --db fixtures/demo/move.sqlite --db fixtures/demo/wasm.sqlite --db fixtures/demo/evm.sqlite --port 9000');
  });

  it('README: the two set-up commands first, then a quick start for each use, with no macOS-only `open`', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const first = /```sh\n([\s\S]*?)```/.exec(readme) as RegExpExecArray;
    expect(first[1].trim().split('\n').map((l) => l.split(/\s+/).slice(0, 2).join(' '))).to.deep.equal(['make serve', 'make test']);
    const headings = [...readme.matchAll(/^## (.*)$/gm)].map((m) => m[1]);
    expect(headings.slice(0, 3)).to.deep.equal(['Quick start: a demo', 'Quick start: an operator serving their chain', 'Quick start: a real API in CI']);
    expect(readme).to.not.match(/^open /m);
  });

  describe('errors that name the option and the value', () => {
    it('serve --host that is no address of this machine', async () => {
      const r = await cli(['serve', '--host', '999.1.1.1', '--workers', '1', '--port', '0']);
      expect(r.code).to.equal(1);
      expect(oneLine(r.stderr)).to.match(/^indexer-api: --host 999\.1\.1\.1: not an address of this machine \(/);
    });

    it('import --from-dump of a directory that is not there', async () => {
      const r = await cli(['import', '--from-dump', 'nope-no-such-dir', '--out', join(dir('from-dump'), 'x.sqlite')]);
      expect(r.code).to.equal(1);
      expect(oneLine(r.stderr)).to.equal('indexer-api import: --from-dump nope-no-such-dir: no such directory');
    });

    it('import --from-api of a Move chain with --vm-type wasm names the VM the source serves', async () => {
      const { startServer } = await import('../src/index');
      const api = await startServer({ demo: 'move' });
      try {
        const out = join(dir('vm-type'), 'x.sqlite');
        const r = await cli(['import', '--from-api', api.url, '--vm-type', 'wasm', '--out', out, '--quiet']);
        expect(r.code).to.equal(1);
        // what was crawled is kept (the VM decides only which steps run): the run with --vm-type move goes on from it
        expect(oneLine(r.stderr)).to.equal(`indexer-api import: --vm-type wasm, but ${api.url} serves a move chain (its NFTs are objects with an object_addr): pass --vm-type move, or leave it out (--from-api detects it)`
          + `; the crawl so far is kept in ${join(dir('vm-type'), '.x.sqlite.crawl')}: the next run of this import goes on from it`);
        const again = await cli(['import', '--from-api', api.url, '--vm-type', 'move', '--out', out, '--quiet']);
        expect(again.code, again.stderr).to.equal(0);
        expect(existsSync(join(dir('vm-type'), '.x.sqlite.crawl'))).to.equal(false);
      } finally {
        await api.close();
      }
    });

    it('in-words helpers: the nearest option, a swap of two letters included', async () => {
      const { closest, usageMessage } = await import('../src/cli');
      expect(closest('prot', ['port', 'host'])).to.equal('port');
      expect(closest('intervl', ['interval', 'max-backoff'])).to.equal('interval');
      expect(closest('xyz', ['port', 'host'])).to.equal(undefined);
      expect(usageMessage('Unknown arguments: prot, zzzzzz', ['port'])).to.equal('unknown option --prot (did you mean --port?); unknown option --zzzzzz');
      expect(usageMessage('Unknown argument: x', ['port'])).to.equal('unknown option -x');
      // yargs names --no-watc `watc`, and --two-wordz also `twoWordz`: what was typed is shown, once
      expect(usageMessage('Unknown arguments: watc', ['watch'], ['serve', '--no-watc'])).to.equal('unknown option --no-watc (did you mean --no-watch?)');
      expect(usageMessage('Unknown arguments: cors-orign, corsOrign', ['cors-origin'], ['serve', '--cors-orign=*'])).to.equal('unknown option --cors-orign (did you mean --cors-origin?)');
    });
  });

  describe('logs: one logger, --log-format, progress off a terminal', () => {
    it('follow logs JSON lines off a terminal, text with --log-format text', async () => {
      // two files: one writer per file (the second follow on one file is refused at once)
      const db = join(dir('follow-log'), 'new.sqlite');
      const db2 = join(dir('follow-log'), 'new-text.sqlite');
      const [json, text] = await Promise.all([
        cli(['follow', '--db', db, '--from-api', 'http://127.0.0.1:9', '--timeout', '500']),
        cli(['follow', '--db', db2, '--from-api', 'http://127.0.0.1:9', '--timeout', '500', '--log-format', 'text']),
      ]);
      const first = json.stderr.split('\n')[0];
      expect(JSON.parse(first)).to.include({ level: 'info', msg: `follow: ${db} does not exist; importing from the source first` });
      expect(text.stderr.split('\n')[0]).to.match(/^\d{4}-\d\d-\d\dT[\d:.]+Z info {2}follow: /).and.contain(`${db2} does not exist`);
    });

    it('a long import off a terminal says where it is every --progress-interval; --quiet says nothing', async () => {
      const dump = join(ROOT, 'fixtures', 'demo', 'dumps', 'move');
      if (!existsSync(dump)) return;
      const out = join(dir('progress'), 'p.sqlite');
      const [loud, quiet] = await Promise.all([
        cli(['import', '--from-dump', dump, '--out', out, '--force', '--progress-interval', '100ms']),
        cli(['import', '--from-dump', dump, '--out', `${out}.quiet`, '--force', '--progress-interval', '100ms', '--quiet']),
      ]);
      expect(loud.code, loud.stderr).to.equal(0);
      const lines = loud.stderr.trim().split('\n');
      // progress lines are JSON; the summary is the one `indexer-api: wrote …` line (under a loaded
      // machine a last progress tick may be written beside it)
      const progress = lines.filter((l) => !l.startsWith('indexer-api: ')).map((l) => JSON.parse(l) as { level: string; msg: string; seconds: number });
      expect(progress.length, loud.stderr).to.be.at.least(2);
      for (const p of progress) {
        expect(p.level).to.equal('info');
        expect(p.msg).to.match(/^import: \w/);
      }
      expect(lines.filter((l) => l.startsWith('indexer-api: ')), loud.stderr).to.have.length(1).and.satisfy((w: string[]) => /^indexer-api: wrote /.test(w[0]));
      expect(quiet.code).to.equal(0);
      expect(quiet.stderr).to.equal('');
    });
  });

  describe('import into a directory that does not exist yet', () => {
    it('creates the parent directories of --out (docs/ci.md: --out test/fixture.sqlite in a fresh project)', async () => {
      const chain = await testChain('wasm');
      const out = join(dir('fresh-project'), 'test', 'fixtures', 'chain.sqlite');
      const r = await cli(['import', '--from-dump', chain.dumpDir, '--out', out, '--quiet']);
      expect(r.code, r.stderr).to.equal(0);
      expect(statSync(out).size).to.be.greaterThan(0);
    });

    it('names the path when the directory cannot be made', async () => {
      const chain = await testChain('wasm');
      const blocker = join(dir('blocked'), 'test');
      writeFileSync(blocker, 'a file where the directory would be');
      const out = join(blocker, 'chain.sqlite');
      const r = await cli(['import', '--from-dump', chain.dumpDir, '--out', out, '--quiet']);
      expect(r.code).to.equal(1);
      expect(oneLine(r.stderr)).to.contain(out).and.contain(blocker);
    });
  });

  describe('import of a bad dump', () => {
    /** A dump directory: every file a symlink to the demo dump's, except `name`, rewritten. */
    async function corruptDump(label: string, name: string, edit: (lines: string[]) => string[]): Promise<string> {
      const source = (await testChain('move')).dumpDir;
      const d = dir(`bad-${label}`);
      for (const f of readdirSync(source)) {
        if (f === `${name}.ndjson`) {
          const lines = readFileSync(join(source, f), 'utf8').split('\n').filter((l) => l !== '');
          writeFileSync(join(d, f), edit(lines).join('\n') + '\n');
        } else if (!existsSync(join(d, f))) {
          symlinkSync(join(source, f), join(d, f));
        }
      }
      return d;
    }

    const editLine = (n: number, fn: (rec: Record<string, unknown>) => void) => (lines: string[]): string[] =>
      lines.map((l, i) => { if (i !== n - 1) return l; const rec = JSON.parse(l) as Record<string, unknown>; fn(rec); return JSON.stringify(rec); });

    const cases: { label: string; file: string; edit: (lines: string[]) => string[]; where: RegExp }[] = [
      { label: 'not-json', file: 'blocks', edit: (ls) => ls.map((l, i) => (i === 2 ? l.slice(0, 20) : l)), where: /blocks\.ndjson:3\b/ },
      { label: 'missing-field', file: 'blocks', edit: editLine(5, (r) => { delete r.hash; }), where: /blocks\.ndjson:5: hash\b/ },
      { label: 'wrong-type', file: 'txs', edit: editLine(2, (r) => { (r.tx as Record<string, unknown>).height = Number((r.tx as Record<string, unknown>).height); }), where: /txs\.ndjson:2: tx\.height\b/ },
      { label: 'unknown-field', file: 'collections', edit: editLine(1, (r) => { r.colour = 'red'; }), where: /collections\.ndjson:1: colour\b/ },
      { label: 'no-block', file: 'txs', edit: editLine(4, (r) => { (r.tx as Record<string, unknown>).height = '999999'; }), where: /txs\.ndjson:4: tx\.height\b/ },
      { label: 'duplicate-token', file: 'tokens', edit: (ls) => [...ls, ls[0]], where: /tokens\.ndjson:\d+: token_id\b/ },
    ];

    for (const c of cases) {
      it(`exits non-zero with one line naming file:line:field (${c.label}) and leaves --out untouched`, async () => {
        const dump = await corruptDump(c.label, c.file, c.edit);
        const outDir = dir(`out-${c.label}`);
        const out = join(outDir, 'chain.sqlite');
        const before = randomBytes(4096);
        writeFileSync(out, before);
        const listing = readdirSync(outDir).sort();
        const r = await cli(['import', '--from-dump', dump, '--out', out, '--force', '--quiet']);
        expect(r.code, r.stderr).to.not.equal(0);
        expect(oneLine(r.stderr)).to.match(c.where);
        if (c.label === 'duplicate-token') {
          const lines = readFileSync(join(dump, 'tokens.ndjson'), 'utf8').trim().split('\n').length;
          expect(r.stderr).to.contain(`tokens.ndjson:${lines}:`);
        }
        expect(readFileSync(out).equals(before), '--out is byte-identical').to.equal(true);
        expect(readdirSync(outDir).sort(), 'no temporary file is left behind').to.deep.equal(listing);
      });
    }

    it('refuses to overwrite an existing --out without --force', async () => {
      const chain = await testChain('wasm');
      const outDir = dir('no-force');
      const out = join(outDir, 'chain.sqlite');
      writeFileSync(out, 'previous snapshot');
      const r = await cli(['import', '--from-dump', chain.dumpDir, '--out', out, '--quiet']);
      expect(r.code).to.not.equal(0);
      expect(oneLine(r.stderr)).to.contain(out).and.match(/--force/);
      expect(readFileSync(out, 'utf8')).to.equal('previous snapshot');
      expect(readdirSync(outDir)).to.deep.equal(['chain.sqlite']);
    });
  });

  describe('serve', () => {
    /** In-process (--get) and as a cluster (--workers 2): one line, nothing on stdout, no worker forked. */
    const refuses = async (file: string, problem: RegExp): Promise<void> => {
      for (const how of [['--get', '/status'], ['--workers', '2', '--port', '0']]) {
        const r = await cli(['serve', '--db', file, ...how]);
        expect(r.code, r.stderr).to.not.equal(0);
        expect(r.stdout, `${how.join(' ')}: no worker log lines`).to.equal('');
        const line = oneLine(r.stderr);
        expect(line).to.contain(file).and.match(problem);
      }
    };

    it('refuses a port in use with one line before forking any worker', async () => {
      const port = await freePort();
      const { createServer } = await import('node:net');
      const taken = createServer();
      await new Promise<void>((done) => taken.listen(port, '127.0.0.1', done));
      try {
        const r = await cli(['serve', '--db', (await testChain('move')).file, '--workers', '2', '--port', String(port)]);
        expect(r.code, r.stderr).to.not.equal(0);
        expect(r.stdout).to.equal('');
        expect(oneLine(r.stderr)).to.contain(`--port ${port}: address 127.0.0.1:${port} is already in use`);
      } finally {
        taken.close();
      }
    });

    it('refuses a missing file with one line naming it', async () => {
      await refuses(join(dir('serve-missing'), 'nope.sqlite'), /not found|no such|missing|does not exist/i);
    });

    it('refuses a file that is not SQLite', async () => {
      const f = join(dir('serve-text'), 'notes.sqlite');
      writeFileSync(f, 'this is not a database\n'.repeat(50));
      await refuses(f, /not a SQLite/i);
    });

    it('refuses a truncated snapshot', async () => {
      const chain = await testChain('move');
      const f = join(dir('serve-truncated'), 'half.sqlite');
      copyFileSync(chain.file, f);
      truncateSync(f, Math.floor(statSync(f).size / 2));
      await refuses(f, /truncated|corrupt|malformed/i);
    });

    it('refuses a SQLite file that is not a snapshot (user_version 0)', async () => {
      const f = join(dir('serve-plain'), 'plain.sqlite');
      const db = new Database(f);
      db.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes (text) VALUES (\'hello\')');
      db.close();
      await refuses(f, /not an indexer-api snapshot|not a snapshot/i);
    });

    it('refuses a snapshot of another schema version', async () => {
      const chain = await testChain('move');
      const f = join(dir('serve-v99'), 'v99.sqlite');
      copyFileSync(chain.file, f);
      const db = new Database(f);
      db.pragma('user_version = 99');
      db.close();
      await refuses(f, /schema version|version 99/i);
    });

    it('prints the body of one GET with --get and exits 0', async () => {
      const chain = await testChain('evm');
      const r = await cli(['serve', '--db', chain.file, '--get', '/status']);
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stdout.endsWith('\n')).to.equal(true);
      expect(JSON.parse(r.stdout)).to.deep.equal(expectedStatus(chain.dump.meta, chain.dump.blocks[chain.dump.blocks.length - 1].height));
    });

    it('exits non-zero with --get on a path that is not 200, printing the JSON error', async () => {
      const chain = await testChain('move');
      const r = await cli(['serve', '--db', chain.file, '--get', '/indexer/block/v1/blocks/999999']);
      expect(r.code).to.not.equal(0);
      expect(JSON.parse(r.stdout)).to.have.keys('code', 'message', 'details');
    });

    it('serves over real HTTP on 127.0.0.1 and exits 0 on SIGTERM', async () => {
      const chain = await testChain('wasm');
      const help = (await cli(['serve', '--help'])).stdout;
      const port = await freePort();
      const args = [BIN, 'serve', '--db', chain.file, '--host', '127.0.0.1', '--port', String(port)];
      if (/--workers\b/.test(help)) args.push('--workers', '1');
      if (/--log-level\b/.test(help)) args.push('--log-level', 'error');
      const child = spawn(process.execPath, args, { cwd: ROOT, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
      child.stdout.resume();
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
      try {
        let res: { status: number; body: string } | undefined;
        for (let i = 0; i < 150 && !res; i++) {
          try { res = await httpGet(`http://127.0.0.1:${port}/status`); } catch { await new Promise((r) => setTimeout(r, 100)); }
        }
        expect(res, `server did not answer: ${stderr}`).to.not.equal(undefined);
        expect(res?.status).to.equal(200);
        expect(JSON.parse(res?.body as string)).to.deep.equal(expectedStatus(chain.dump.meta, chain.dump.blocks[chain.dump.blocks.length - 1].height));
      } finally {
        child.kill('SIGTERM');
      }
      const end = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 20_000))]);
      if (end === 'timeout') child.kill('SIGKILL');
      expect(end, stderr).to.deep.equal({ code: 0, signal: null });
    });
  });
});
