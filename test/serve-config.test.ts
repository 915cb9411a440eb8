/**
 * `serve`'s one resolve step (src/commands/serve-config.ts): the options yargs checked become a
 * complete config, and the checks between options are made once, while parsing.
 */
import { expect } from 'chai';
import type { Argv } from 'yargs';
import yargs from 'yargs';
import { serveCommand } from '../src/commands/serve';
import { checkServeArgs, resolveServe, ServeArgs } from '../src/commands/serve-config';
import { SERVE_DEFAULTS } from '../src/lib/defaults';

/** The command line's own parse of `serve ARGS`, its defaults and checks applied. */
function parsed(args: string[]): ServeArgs {
  const y = yargs(args).locale('en').fail((msg, err) => { throw err ?? new Error(msg); });
  return (serveCommand.builder as (y: Argv) => Argv)(y).parseSync() as unknown as ServeArgs;
}

describe('serve options resolved once (src/commands/serve-config.ts)', () => {
  it('fills every field from the defaults the help shows', () => {
    const c = resolveServe(parsed([]), (vm) => `demo-${vm}.sqlite`);
    expect(c.file).to.equal('demo-move.sqlite');
    expect(c.stack.host).to.equal(SERVE_DEFAULTS.host);
    expect(c.stack.port).to.equal(SERVE_DEFAULTS.port);
    expect(c.stack.limits).to.deep.equal({
      requestTimeoutMs: SERVE_DEFAULTS.requestTimeoutMs, headersTimeoutMs: SERVE_DEFAULTS.headersTimeoutMs,
      keepAliveTimeoutMs: SERVE_DEFAULTS.keepAliveTimeoutMs, maxHeaderSize: SERVE_DEFAULTS.maxHeaderSize, maxUrlLength: SERVE_DEFAULTS.maxUrlLength,
    });
    expect(c.stack.admission).to.deep.equal({
      maxQueued: SERVE_DEFAULTS.maxQueued, maxQueuedPerClient: SERVE_DEFAULTS.maxQueuedPerClient, maxWaitMs: SERVE_DEFAULTS.maxQueueWaitMs, clientIpHeader: undefined,
    });
    expect(c.stack.watchPollMs).to.equal(SERVE_DEFAULTS.watchPollMs);
    expect(c.stack.slowRequestMs).to.equal(SERVE_DEFAULTS.slowRequestMs);
    expect(c.shutdownTimeoutMs).to.equal(SERVE_DEFAULTS.shutdownTimeoutMs);
    expect(c.pull).to.equal(undefined);
    // every field of the stack's settings is decided (maxLagS, opsPort, a growing chain and expectChainId are off by default)
    for (const [k, v] of Object.entries(c.stack)) if (!['maxLagS', 'opsPort', 'growth', 'expectChainId'].includes(k)) expect(v, k).to.not.equal(undefined);
  });

  it('reads what was typed: durations in ms, --no-watch as no file watch, --get as one process', () => {
    const c = resolveServe(parsed(['--db', 'x.sqlite', '--pull', 'http://o/manifest.json', '--pull-interval', '2m', '--no-watch', '--workers', '4', '--get', '/status']), () => 'unused');
    expect(c.file).to.equal('x.sqlite');
    expect(c.pull).to.deep.equal({ url: 'http://o/manifest.json', intervalMs: 120_000 });
    expect(c.stack.watchPollMs).to.equal(undefined);
    expect(c.workers).to.equal(1);
  });

  it('a growing demo chain: --start-height and --block-ms become the stack\'s growth, in one process', () => {
    const c = resolveServe(parsed(['--start-height', '300', '--block-ms', '500', '--workers', '4']), (vm) => `demo-${vm}.sqlite`);
    expect(c.stack.growth).to.deep.equal({ startHeight: 300, blockMs: 500 });
    expect(c.workers).to.equal(1);
    expect(resolveServe(parsed(['--start-height', '300']), () => 'x').stack.growth).to.deep.equal({ startHeight: 300, blockMs: SERVE_DEFAULTS.blockMs });
  });

  it('refuses, while parsing, --ops-port equal to --port and --pull without --db, naming both options', () => {
    expect(() => parsed(['--port', '9000', '--ops-port', '9000'])).to.throw('--ops-port 9000 is --port 9000: the operations port must be another port');
    expect(() => checkServeArgs({ port: 0, opsPort: 0 })).to.not.throw();
    expect(() => parsed(['--pull', 'http://o/manifest.json'])).to.throw('--pull needs --db');
  });
});
