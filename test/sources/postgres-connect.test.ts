import { expect } from 'chai';
import { openFollowSource } from '../../src/sources/registry';
import { openPostgresSource } from '../../src/sources/postgres/source';
import { resolveHttp } from '../../src/sources/options';

/**
 * One PostgreSQL connector (src/sources/postgres/connect.ts connectPostgres) for import and follow: a
 * failed connect says where and why, never with the password, never with an empty reason.
 * Nothing listens on port 1; `localhost` makes Node try ::1 and 127.0.0.1 (an AggregateError
 * whose own message is empty); the password is a word the driver's message contains.
 */
describe('PostgreSQL connect errors (no server needed)', () => {
  const password = 'ECONNREFUSED';
  const dsn = `postgres://reader:${password}@localhost:1/rollytics`;

  const failure = async (p: Promise<unknown>): Promise<string> => {
    try { await p; } catch (e) { return (e as Error).message; }
    throw new Error('connected to port 1?');
  };

  for (const [what, attempt] of [
    ['import', () => openPostgresSource({ dsn, vmType: 'move', prefix: 'init', statusVersion: 'dev', statusCommit: 'unknown' })],
    ['follow (polls)', () => openFollowSource({ fromPostgres: dsn, vmType: 'move', bech32Prefix: 'init', db: 'x.sqlite', http: resolveHttp({}), statusVersion: 'dev', statusCommit: 'unknown' }).head()],
  ] as const) {
    it(`${what}: names the server without the password and gives a reason`, async () => {
      const msg = await failure(attempt());
      expect(msg).to.match(/^cannot connect to PostgreSQL at postgres:\/\/reader@localhost:1\/rollytics: \S/);
      expect(msg).not.to.contain(password);
      expect(msg.split(': ').slice(-1)[0].trim()).not.to.equal('');
    });
  }
});
