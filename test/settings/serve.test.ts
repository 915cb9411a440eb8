/**
 * `serve`'s settings module (src/settings/serve.ts): each option declared once with its default
 * and help, the checks between options made while parsing, and one resolve step that the command
 * line and the library's startServer() both go through. Also the rule the module exists for: a
 * serve setting read in one place is named in at most three files — its declaration, its use and
 * this test (docs/architecture.md "Settings").
 */
import { expect } from 'chai';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Argv, Options } from 'yargs';
import yargs from 'yargs';
import { serveCommand } from '../../src/commands/serve';
import { checkServeArgs, defaultServeSettings, resolveServe, SERVE_OPTIONS, serveDefaults, ServeArgs } from '../../src/settings/serve';
import { ROOT } from '../helpers/serve';

/** The command line's own parse of `serve ARGS`, its defaults and checks applied. */
function parsed(args: string[]): ServeArgs {
  const y = yargs(args).locale('en').fail((msg, err) => { throw err ?? new Error(msg); });
  return (serveCommand.builder as (y: Argv) => Argv)(y).parseSync() as unknown as ServeArgs;
}

describe('serve settings, declared and resolved once (src/settings/serve.ts)', () => {
  it('fills every field from the defaults the help shows', () => {
    const c = resolveServe(parsed([]), (vm) => `demo-${vm}.sqlite`);
    expect(c.file).to.equal('demo-move.sqlite');
    expect(c.stack.host).to.equal('127.0.0.1');
    expect(c.stack.port).to.equal(8080);
    expect(c.stack.limits).to.deep.equal({ requestTimeoutMs: 30_000, headersTimeoutMs: 10_000, keepAliveTimeoutMs: 5_000, maxHeaderSize: 16_384, maxUrlLength: 8_192 });
    expect(c.stack.admission).to.deep.equal({ maxQueued: 256, maxQueuedPerClient: 64, maxWaitMs: 5_000, clientIpHeader: undefined });
    expect(c.stack.cacheMaxAge).to.equal(1);
    expect([c.stack.cacheBytes, c.stack.cacheEntries, c.stack.cacheValidatorBytes]).to.deep.equal([64 * 1024 * 1024, 100_000, 32 * 1024 * 1024]);
    expect([c.stack.watchPollMs, c.stack.commitPollMs, c.stack.slowRequestMs]).to.deep.equal([2_000, 100, 1_000]);
    expect([c.stack.verifyAtStart, c.stack.explorer, c.stack.validateResponses]).to.deep.equal([true, true, false]);
    expect(c.shutdownTimeoutMs).to.equal(10_000);
    expect(c.pull).to.equal(undefined);
    // what is off by default is off, and every other field of the stack's settings is decided
    for (const k of ['maxLagS', 'opsPort', 'growth', 'expectChainId'] as const) expect(c.stack[k], k).to.equal(undefined);
    for (const [k, v] of Object.entries(c.stack)) if (!['maxLagS', 'opsPort', 'growth', 'expectChainId'].includes(k)) expect(v, k).to.not.equal(undefined);
  });

  it('serveDefaults() is what yargs gives a bare `serve`: the library starts from the same values', () => {
    const cli = parsed([]) as unknown as Record<string, unknown>;
    const lib = serveDefaults() as unknown as Record<string, unknown>;
    for (const [k, v] of Object.entries(lib)) expect(cli[k], k).to.deep.equal(v);
    // every option yargs fills in (camelCase) has its default there
    for (const k of Object.keys(cli)) if (/^[a-z][A-Za-z]*$/.test(k) && cli[k] !== undefined) expect(lib, k).to.have.property(k);
    expect(resolveServe(serveDefaults(), (vm) => vm)).to.deep.equal(resolveServe(parsed([]), (vm) => vm));
    expect(defaultServeSettings()).to.deep.equal(resolveServe(parsed([]), (vm) => vm).stack);
    expect(lib.pullInterval).to.equal(30_000);
  });

  it('reads what was typed: durations in ms, --no-watch as no file watch, --get as one process', () => {
    const c = resolveServe(parsed(['--db', 'x.sqlite', '--pull', 'http://o/manifest.json', '--pull-interval', '2m', '--no-watch', '--workers', '4', '--get', '/status']), () => 'unused');
    expect(c.file).to.equal('x.sqlite');
    expect(c.pull).to.deep.equal({ url: 'http://o/manifest.json', intervalMs: 120_000 });
    expect(c.stack.watchPollMs).to.equal(undefined);
    expect(c.workers).to.equal(1);
  });

  it('--get: one request in-process, on a free loopback port, with nothing cached, watched or opened beside', () => {
    const c = resolveServe(parsed(['--get', '/status', '--port', '9000', '--host', '0.0.0.0', '--ops-port', '9001', '--cache-bytes', '1g']), (vm) => vm);
    expect([c.stack.host, c.stack.port, c.stack.opsPort]).to.deep.equal(['127.0.0.1', 0, undefined]);
    expect([c.stack.cacheBytes, c.stack.cacheEntries, c.stack.cacheValidatorBytes, c.stack.commitPollMs, c.stack.watchPollMs]).to.deep.equal([0, 0, 0, 0, undefined]);
    // what the answer depends on stays as given
    expect(resolveServe(parsed(['--get', '/status', '--cache-max-age', '7', '--max-url-length', '100']), (vm) => vm).stack).to.include({ cacheMaxAge: 7 })
      .and.to.have.nested.property('limits.maxUrlLength', 100);
  });

  it('a growing demo chain: --start-height and --block-ms become the stack\'s growth, in one process', () => {
    const c = resolveServe(parsed(['--start-height', '300', '--block-ms', '500', '--workers', '4']), (vm) => `demo-${vm}.sqlite`);
    expect(c.stack.growth).to.deep.equal({ startHeight: 300, blockMs: 500 });
    expect(c.workers).to.equal(1);
    expect(resolveServe(parsed(['--start-height', '300']), () => 'x').stack.growth).to.deep.equal({ startHeight: 300, blockMs: 1_000 });
  });

  /**
   * README's option list is written for people (grouped, with what a value means), so it is kept
   * by hand, and checked here against SERVE_OPTIONS: every option is named in the README's
   * "Command line" section, its list of serve options names no option serve lacks, and the value
   * in brackets after an option with a default is that default, read as the command line reads it.
   */
  it('README names every serve option, with the default SERVE_OPTIONS declares', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const start = readme.indexOf('## Command line');
    const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
    const listStart = section.indexOf('`serve` options (defaults in brackets):');
    expect(listStart).to.be.greaterThan(0);
    const list = section.slice(listStart, section.indexOf('\n\n', listStart));
    for (const typed of list.matchAll(/--(?:no-)?([a-z][a-z-]*)/g)) expect(SERVE_OPTIONS, `README's --${typed[1]}`).to.have.property(typed[1]);
    const table: Record<string, Options> = SERVE_OPTIONS;
    for (const [key, o] of Object.entries(table)) {
      // `--name` or `--name METAVAR`, then the first bracket after one of its mentions
      const mentions = [...section.matchAll(new RegExp(`\`--${key}(?: [^\`]*)?\`(?:\\s*\\[([^\\]]*))?`, 'g'))];
      expect(mentions, `--${key} is named in README's "Command line"`).to.not.have.length(0);
      if (o.default === undefined) continue;
      const bracket = mentions.map((m) => m[1]).find((b) => b !== undefined);
      expect(bracket, `README shows the default of --${key}`).to.be.a('string');
      const text = (bracket as string).replace(/\s+/g, ' ');
      if (o.defaultDescription !== undefined && text.startsWith(o.defaultDescription)) continue;
      // the bracket's first word: `on`/`off` for a switch, else the value as typed (64m, 30s, `*`)
      const word = text.split(/[\s;:,]/)[0].replace(/`/g, '');
      const shown = typeof o.default === 'boolean' ? (word === 'on' ? true : word === 'off' ? false : word) : o.coerce ? o.coerce(word) as unknown : word;
      const declared = typeof o.default === 'boolean' || !o.coerce ? o.default as unknown : o.coerce(o.default) as unknown;
      expect(String(shown), `README's default of --${key}: [${text}]`).to.equal(String(declared));
    }
  });

  it('refuses, while parsing, --ops-port equal to --port and --pull without --db, naming both options', () => {
    expect(() => parsed(['--port', '9000', '--ops-port', '9000'])).to.throw('--ops-port 9000 is --port 9000: the operations port must be another port');
    expect(() => checkServeArgs({ port: 0, opsPort: 0 })).to.not.throw();
    expect(() => parsed(['--pull', 'http://o/manifest.json'])).to.throw('--pull needs --db');
  });

  /**
   * The settings read in one place: in src/, named by their declaration (src/settings/serve.ts)
   * and their use only — no layer restates them on the way down — and tested here. (Not listed:
   * the library's public options — host, port, corsOrigin, baseUrl, validateResponses, watch —;
   * values threaded to several parts by design — the base URL, the chain a file must be, the
   * start-up check that --pull's download goes through too —; and src/index.ts, whose smaller
   * defaults for a test suite's server are the library's own declaration.) Tests that only turn
   * a setting off for their own setup are listed apart, not counted.
   */
  it('a setting read in one place is named in two src files (declaration, use) and tested here', () => {
    const files: string[] = [];
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const p = join(dir, name);
        if (statSync(p).isDirectory()) walk(p);
        else if (p.endsWith('.ts')) files.push(p);
      }
    };
    for (const d of ['src', 'test', 'bench']) walk(join(ROOT, d));
    const texts = new Map(files.filter((f) => !f.endsWith(join('src', 'index.ts'))).map((f) => [f, readFileSync(f, 'utf8')]));
    const settings = [
      'maxUrlLength', 'maxHeaderSize', 'requestTimeoutMs', 'headersTimeoutMs', 'keepAliveTimeoutMs',
      'cacheMaxAge', 'cacheValidatorBytes', 'commitPollMs', 'slowRequestMs', 'maxQueueWaitMs', 'clientIpHeader',
      'maxLagS', 'pullInterval',
    ];
    /** tests that turn these off (a free port, no commit watch) for their own setup */
    const setUp = new Set(['test/serve/chains.test.ts', 'test/serve/base-url.test.ts', 'test/helpers/app-options.ts']);
    for (const s of settings) {
      const word = new RegExp(`\\b${s}\\b`);
      const naming = [...texts].filter(([, t]) => word.test(t)).map(([f]) => f.slice(ROOT.length + 1));
      expect(naming, s).to.include('src/settings/serve.ts').and.to.include('test/settings/serve.test.ts');
      const counted = naming.filter((f) => !setUp.has(f));
      expect(counted.length, `${s} is named in ${counted.join(', ')}`).to.be.at.most(3);
      expect(counted.filter((f) => f.startsWith('src/')).length, `${s} is named in ${counted.join(', ')}`).to.be.at.most(2);
    }
  });
});
