import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, cleanEnv, DEMO, ROOT } from '../helpers/serve';
import { DEMO_DUMPS } from '../helpers/app';

/**
 * Every command, every path it takes, given missing, of the wrong type (a file for a directory,
 * a directory for a file) and unreadable or unwritable (issue #37): one line on stderr naming the
 * path as typed, in words (no ENOENT, EISDIR, EACCES…, no SQLite's "unable to open database
 * file"), exit 1 — 2 for a usage error — before any work (`serve --workers 2` forks no worker,
 * `import --out DIR` reads no record). Real processes; as root, the permission cases run as
 * nobody (setpriv), for whom the permission bits count.
 */

/** Raw system or SQLite text a person cannot act on. */
const RAW = /\b(E[A-Z]{3,}|SQLITE_[A-Z_]+)\b|unable to open database file|illegal operation|no such file or directory, /;

const asRoot = process.getuid?.() === 0;
const setpriv = asRoot && spawnSync('setpriv', ['--version']).status === 0;

interface Case {
  /** the command line after `indexer-api` */
  args: string[];
  /** the path the message must name, as typed */
  names: string;
  /** 1: a failure; 2: a usage error */
  exit?: 1 | 2;
  /** run as an unprivileged user (the permission cases) */
  unprivileged?: boolean;
  /** more the message must say */
  says?: RegExp;
}

function run(args: string[], unprivileged: boolean): Promise<{ code: number | null; stderr: string; stdout: string; ms: number }> {
  const cmd = unprivileged && asRoot ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, CLI, ...args] : [process.execPath, CLI, ...args];
  const started = Date.now();
  return new Promise((done, fail) => {
    const p = spawn(cmd[0], cmd.slice(1), { cwd: ROOT, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let stdout = '';
    p.stderr.setEncoding('utf8').on('data', (t: string) => { stderr += t; });
    p.stdout.setEncoding('utf8').on('data', (t: string) => { stdout += t; });
    const timer = setTimeout(() => p.kill('SIGKILL'), 30_000);
    p.on('error', fail);
    p.on('close', (code) => { clearTimeout(timer); done({ code, stderr, stdout, ms: Date.now() - started }); });
  });
}

describe('errors: every command refuses a bad path in words, naming it, before any work', function () {
  this.timeout(300_000);
  const w = mkdtempSync(join(tmpdir(), 'indexer-api-paths-'));
  const p = (name: string): string => join(w, name);
  const source = 'http://127.0.0.1:1';
  const account = 'init1mm5essl2gfmq2cwht9t4st8w0avd23jgzu8vwv';

  before(() => {
    chmodSync(w, 0o777);
    writeFileSync(p('afile'), 'not a snapshot, not a directory\n');
    mkdirSync(p('adir'));
    copyFileSync(DEMO('move'), p('good.sqlite'));
    copyFileSync(DEMO('move'), p('noread.sqlite'));
    chmodSync(p('noread.sqlite'), 0o000);
    mkdirSync(p('ro-dir'));
    copyFileSync(DEMO('move'), p('ro-dir/s.sqlite'));
    chmodSync(p('ro-dir/s.sqlite'), 0o644);
    chmodSync(p('ro-dir'), 0o555);
    mkdirSync(p('noread-dir'));
    chmodSync(p('noread-dir'), 0o000);
    cpSync(join(DEMO_DUMPS, 'move'), p('dump'), { recursive: true });
    for (const f of readdirSync(p('dump'))) chmodSync(join(p('dump'), f), 0o644);
  });
  after(() => {
    for (const d of ['ro-dir', 'noread-dir']) chmodSync(p(d), 0o755);
    rmSync(w, { recursive: true, force: true });
  });

  const cases: Case[] = [
    // serve: --db, --db-dir, --pull's --db (with a cluster: refused before any worker is forked)
    { args: ['serve', '--db', p('nope.sqlite'), '--port', '0', '--workers', '2'], names: p('nope.sqlite') },
    { args: ['serve', '--db', p('adir'), '--port', '0', '--workers', '2'], names: p('adir') },
    { args: ['serve', '--db', p('noread.sqlite'), '--port', '0', '--workers', '2'], names: p('noread.sqlite'), unprivileged: true },
    { args: ['serve', '--db-dir', p('nodir'), '--port', '0', '--workers', '2'], names: p('nodir'), says: /--db-dir .*: no such directory/ },
    { args: ['serve', '--db-dir', p('afile'), '--port', '0', '--workers', '2'], names: p('afile'), says: /is a file, not a directory/ },
    { args: ['serve', '--db-dir', p('nodir'), '--port', '0', '--workers', '1'], names: p('nodir'), says: /--db-dir .*: no such directory/ },
    { args: ['serve', '--db-dir', p('noread-dir'), '--port', '0', '--workers', '2'], names: p('noread-dir'), unprivileged: true, says: /permission denied/ },
    { args: ['serve', '--pull', `${source}/manifest.json`, '--db', p('adir'), '--port', '0', '--workers', '1'], names: p('adir'), says: /is a directory/ },
    { args: ['serve', '--pull', `${source}/manifest.json`, '--db', p('afile/local.sqlite'), '--port', '0', '--workers', '1'], names: p('afile') },
    { args: ['serve', '--pull', `${source}/manifest.json`, '--db', p('ro-dir/local.sqlite'), '--port', '0', '--workers', '1'], names: p('ro-dir'), unprivileged: true, says: /permission denied/ },
    // publish: --db, --to
    { args: ['publish', '--db', p('nope.sqlite'), '--to', p('out1')], names: p('nope.sqlite') },
    { args: ['publish', '--db', p('adir'), '--to', p('out2')], names: p('adir') },
    { args: ['publish', '--db', p('noread.sqlite'), '--to', p('out3')], names: p('noread.sqlite'), unprivileged: true },
    { args: ['publish', '--db', p('good.sqlite'), '--to', p('good.sqlite')], names: p('good.sqlite'), exit: 2, says: /is the snapshot file itself/ },
    { args: ['publish', '--db', p('good.sqlite'), '--to', p('afile')], names: p('afile'), says: /is a file, not a directory/ },
    { args: ['publish', '--db', p('good.sqlite'), '--to', p('afile/sub')], names: p('afile') },
    { args: ['publish', '--db', p('good.sqlite'), '--to', p('ro-dir')], names: p('ro-dir'), unprivileged: true, says: /permission denied/ },
    { args: ['publish', '--db', p('good.sqlite'), '--to', p('ro-dir/sub')], names: p('ro-dir'), unprivileged: true, says: /permission denied/ },
    // import: --from-dump, --out, --base, --from-snapshot, --validators, --denom-contracts
    { args: ['import', '--from-dump', p('nodir'), '--out', p('i1.sqlite')], names: p('nodir') },
    { args: ['import', '--from-dump', p('afile'), '--out', p('i2.sqlite')], names: p('afile') },
    { args: ['import', '--from-dump', p('noread-dir'), '--out', p('i3.sqlite')], names: p('noread-dir'), unprivileged: true },
    { args: ['import', '--from-dump', p('dump'), '--out', p('adir'), '--force'], names: p('adir'), says: /is a directory: name the file to write/ },
    { args: ['import', '--from-dump', p('dump'), '--out', p('afile/x.sqlite')], names: p('afile') },
    { args: ['import', '--from-dump', p('dump'), '--out', p('ro-dir/x.sqlite')], names: p('ro-dir'), unprivileged: true, says: /permission denied/ },
    { args: ['import', '--from-dump', p('dump'), '--out', p('good.sqlite')], names: p('good.sqlite'), says: /pass --force/ },
    { args: ['import', '--base', p('nope.sqlite'), '--from-dump', p('dump'), '--out', p('i4.sqlite')], names: p('nope.sqlite') },
    { args: ['import', '--base', p('adir'), '--from-dump', p('dump'), '--out', p('i5.sqlite')], names: p('adir') },
    { args: ['import', '--from-snapshot', p('nope.sqlite'), '--accounts', account, '--out', p('i6.sqlite')], names: p('nope.sqlite') },
    { args: ['import', '--from-snapshot', p('adir'), '--accounts', account, '--out', p('i7.sqlite')], names: p('adir') },
    { args: ['import', '--from-snapshot', p('good.sqlite'), '--accounts', account, '--out', p('adir')], names: p('adir') },
    { args: ['import', '--from-api', source, '--validators', p('nope.ndjson'), '--out', p('i8.sqlite')], names: p('nope.ndjson') },
    { args: ['import', '--from-api', source, '--denom-contracts', p('adir'), '--out', p('i9.sqlite')], names: p('adir') },
    // follow: --db (a file it writes in place, or creates), --validators, --denom-contracts
    { args: ['follow', '--db', p('adir'), '--from-api', source], names: p('adir'), says: /is a directory/ },
    { args: ['follow', '--db', p('afile/x.sqlite'), '--from-api', source], names: p('afile') },
    { args: ['follow', '--db', p('ro-dir/s.sqlite'), '--from-api', source], names: p('ro-dir/s.sqlite'), unprivileged: true, says: /permission denied/ },
    { args: ['follow', '--db', p('ro-dir/new.sqlite'), '--from-api', source], names: p('ro-dir'), unprivileged: true, says: /permission denied/ },
    { args: ['follow', '--db', p('noread.sqlite'), '--from-api', source], names: p('noread.sqlite'), unprivileged: true },
    { args: ['follow', '--db', p('f1.sqlite'), '--from-api', source, '--denom-contracts', p('nope.ndjson')], names: p('nope.ndjson') },
    // generate: --out
    { args: ['generate', '--vm', 'move', '--out', p('afile')], names: p('afile'), says: /is a file, not a directory/ },
    { args: ['generate', '--vm', 'move', '--out', p('afile/sub')], names: p('afile') },
    { args: ['generate', '--vm', 'move', '--out', p('ro-dir/g')], names: p('ro-dir'), unprivileged: true, says: /permission denied/ },
  ];

  for (const c of cases) {
    const title = `${c.unprivileged ? '(unprivileged) ' : ''}${c.args.join(' ').replaceAll(w, 'W')}`;
    it(title, async function () {
      if (c.unprivileged && asRoot && !setpriv) this.skip();
      const r = await run(c.args, c.unprivileged === true);
      const lines = r.stderr.split('\n').filter((l) => l !== '');
      expect(r.code, r.stderr).to.equal(c.exit ?? 1);
      expect(lines.length, r.stderr).to.be.within(1, 2);
      const line = lines[0];
      expect(line).to.match(/^indexer-api( [a-z]+)?: /);
      expect(line, 'names the path as typed').to.contain(c.names);
      expect(line, 'no raw system text').to.not.match(RAW);
      if (c.says) expect(line).to.match(c.says);
      // before any work: no worker forked, nothing logged on stdout
      expect(r.stdout.split('\n').filter((l) => /worker started|listening/.test(l)), r.stdout).to.deep.equal([]);
    });
  }

  // free space, where the system says: a 256 KiB tmpfs in a mount namespace of its own (root, util-linux unshare)
  const canMount = asRoot && spawnSync('unshare', ['-m', 'sh', '-c', `mount -t tmpfs -o size=256k tmpfs ${JSON.stringify(tmpdir())}`]).status === 0;
  for (const [what, args, says] of [
    ['publish --to', (dev: string) => ['publish', '--db', p('good.sqlite'), '--to', join(dev, 'pub')], /a copy of .*good\.sqlite and its gzip needs about \d/],
    ['import --base … --out', (dev: string) => ['import', '--base', p('good.sqlite'), '--from-dump', p('adir'), '--out', join(dev, 'x.sqlite')], /the copy of --base .*good\.sqlite needs about \d/],
  ] as [string, (dev: string) => string[], RegExp][]) {
    it(`${what} on a device without room for the copy: refused at once, saying what is free and what is needed`, function () {
      if (!canMount) this.skip();
      const dev = p(`small-${what.split(' ')[0]}`);
      mkdirSync(dev);
      const cmd = [process.execPath, CLI, ...args(dev)].map((a) => `'${a}'`).join(' ');
      const r = spawnSync('unshare', ['-m', 'sh', '-c', `mount -t tmpfs -o size=256k tmpfs '${dev}' && exec ${cmd}`], { cwd: ROOT, env: cleanEnv(), encoding: 'utf8' });
      expect(r.status, r.stderr).to.equal(1);
      const line = r.stderr.split('\n')[0];
      expect(line).to.match(/MB free on the device of /).and.match(says);
      expect(line).to.contain(dev);
      expect(line).to.not.match(RAW);
    });
  }

  it('import --out DIR --force is refused before a record is read: no temporary file, in well under the import\'s time', async () => {
    const r = await run(['import', '--from-dump', p('dump'), '--out', p('adir'), '--force'], false);
    expect(r.code).to.equal(1);
    expect(readdirSync(w).filter((n) => n.includes('.tmp-'))).to.deep.equal([]);
    expect(r.ms).to.be.below(5_000);
  });
});
