import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { load, loadAll } from 'js-yaml';
import { NGINX } from '../support/nginx';
import { freePort } from '../support/net';
import { DEMO, eventually, get, startServe } from '../helpers/serve';

const ROOT = resolve(__dirname, '..', '..', '..');
const DEPLOY = join(ROOT, 'deploy');
const CLI = join(ROOT, 'bin', 'indexer-api');
const HAPROXY = ['/usr/sbin/haproxy', '/usr/bin/haproxy'].find((p) => existsSync(p));
const SYSTEMD_ANALYZE = ['/usr/bin/systemd-analyze', '/bin/systemd-analyze'].find((p) => existsSync(p));
/** CI installs haproxy and nginx (.ci/run): there a missing one is a failure, not a skip (systemd-analyze stays optional). */
const REQUIRED = process.env.TEST_REQUIRE_SCALE === '1';

function itWith(tool: string | undefined, title: string, fn: (this: Mocha.Context) => void | Promise<void>, required = REQUIRED): void {
  if (tool || required) it(title, fn);
  else it.skip(`${title} (not installed here)`, fn);
}

/** The serve options a deploy file passes on a command line (`--name`). */
function flagsIn(text: string): string[] {
  return [...new Set([...text.matchAll(/(?:^|[\s,[])--([a-z][a-z-]+)/g)].map((m) => m[1]))];
}

/** The parts of deploy/k8s.yaml the test reads. */
interface K8s {
  deployment: {
    kind: string;
    spec: { template: { metadata: { labels: Record<string, string> }; spec: {
      containers: { args: string[]; ports: { name: string }[]; readinessProbe: { httpGet: unknown }; volumeMounts: { name: string; mountPath: string }[] }[];
      volumes: { name: string; emptyDir?: unknown }[];
    } } };
  };
  service: { kind: string; spec: { selector: Record<string, string>; ports: { targetPort: string }[] } };
}

function k8s(): K8s {
  const docs = loadAll(readFileSync(join(DEPLOY, 'k8s.yaml'), 'utf8')) as { kind: string }[];
  expect(docs.map((d) => d.kind)).to.deep.equal(['Deployment', 'Service']);
  return { deployment: docs[0], service: docs[1] } as K8s;
}

/** The commented alternative of a unit line for one replica of all chains: `# KEY=…` after the "One replica for all chains" note. */
function unitAlternative(text: string, key: string): string {
  const note = text.indexOf('# One replica for all chains');
  expect(note, 'the unit has the "One replica for all chains" lines').to.be.greaterThan(0);
  const line = new RegExp(`^# ${key}=(.*)$`, 'm').exec(text.slice(note))?.[1];
  expect(line, `a commented ${key}= for all chains`).to.be.a('string');
  return line as string;
}

/** k8s.yaml's commented `# args: [...]` for one replica of all chains, parsed as YAML. */
function k8sChainsArgs(): string[] {
  const text = readFileSync(join(DEPLOY, 'k8s.yaml'), 'utf8');
  const line = /^\s*# args: (\[.*\])$/m.exec(text.slice(text.indexOf('# One replica for all chains')))?.[1];
  expect(line, 'a commented args: for all chains').to.be.a('string');
  return (load(line as string) as unknown[]).map(String);
}

let tmp: string;
before(() => { tmp = mkdtempSync(join(tmpdir(), 'indexer-api-deploy-test-')); });
after(() => rmSync(tmp, { recursive: true, force: true }));

describe('deploy/', () => {
  itWith(HAPROXY, 'haproxy.cfg passes `haproxy -c` with the replica addresses set', () => {
    const r = spawnSync(HAPROXY ?? 'haproxy', ['-c', '-f', join(DEPLOY, 'haproxy.cfg')], {
      encoding: 'utf8', env: { ...process.env, LISTEN: '127.0.0.1:18080', REPLICA1: '10.0.0.11:8080', REPLICA2: '10.0.0.12:8080', REPLICA3: '10.0.0.13:8080' },
    });
    expect(r.stdout + r.stderr).to.contain('Configuration file is valid');
    expect(r.status).to.equal(0);
  });

  itWith(HAPROXY, 'haproxy.cfg passes `haproxy -c` with its rate-limit knobs set (several trusted proxy ranges)', () => {
    const text = readFileSync(join(DEPLOY, 'haproxy.cfg'), 'utf8');
    for (const knob of ['RATE_LIMIT', 'RATE_LIMIT_PERIOD_S', 'TRUSTED_PROXIES']) expect(text).to.match(new RegExp(`presetenv ${knob} \\S`));
    const r = spawnSync(HAPROXY ?? 'haproxy', ['-c', '-f', join(DEPLOY, 'haproxy.cfg')], {
      encoding: 'utf8',
      env: {
        ...process.env, LISTEN: '127.0.0.1:18080', REPLICA1: '10.0.0.11:8080', REPLICA2: '10.0.0.12:8080', REPLICA3: '10.0.0.13:8080',
        RATE_LIMIT: '50', RATE_LIMIT_PERIOD_S: '30', TRUSTED_PROXIES: '192.0.2.0/24 198.51.100.7 2001:db8::/32',
      },
    });
    expect(r.stdout + r.stderr).to.contain('Configuration file is valid');
    expect(r.status).to.equal(0);
  });

  itWith(HAPROXY, 'haproxy.cfg in front of a replica: past RATE_LIMIT a client gets 429 in the API error shape with Retry-After', async function () {
    this.timeout(60_000);
    // the health check asks /ready on the replica's operations port (deploy/haproxy.cfg OPS_PORT)
    const opsPort = await freePort();
    const a = await startServe(['--db', DEMO('wasm'), '--ops-port', String(opsPort)]);
    const port = await freePort();
    const replica = new URL(a.url).host;
    const lb = spawn(HAPROXY ?? 'haproxy', ['-db', '-f', join(DEPLOY, 'haproxy.cfg')], {
      stdio: 'ignore', env: { ...process.env, LISTEN: `127.0.0.1:${port}`, STATS_SOCKET: join(tmp, `haproxy-${port}.sock`), OPS_PORT: String(opsPort), REPLICA1: replica, REPLICA2: replica, REPLICA3: replica, RATE_LIMIT: '20', RATE_LIMIT_PERIOD_S: '30' },
    });
    try {
      const url = `http://127.0.0.1:${port}`;
      // every request HAProxy answers counts, the 503s while its first check is pending too
      let sent = 0;
      for (let tries = 0, up = false; !up; tries++) {
        if (tries > 40) throw new Error('haproxy did not forward to the replica');
        const status = (await get(`${url}/status`).catch(() => ({ status: 0 }))).status;
        if (status !== 0) sent++;
        up = status === 200;
        if (!up) await new Promise((r) => setTimeout(r, 250));
      }
      const statuses: number[] = [];
      let refused: Awaited<ReturnType<typeof get>> | undefined;
      for (; sent < 25; sent++) {
        const r = await get(`${url}/indexer/block/v1/blocks?pagination.limit=2`);
        statuses.push(r.status);
        refused ??= r.status === 429 ? r : undefined;
      }
      expect(statuses, `after ${25 - statuses.length} probes`).to.deep.equal([...Array(statuses.length - 5).fill(200), ...Array(5).fill(429)]);
      expect(refused?.headers['retry-after']).to.equal('30');
      expect(refused?.headers['content-type']).to.match(/^application\/json/);
      expect(JSON.parse(refused?.body ?? '')).to.deep.equal({ code: 8, message: 'too many requests from this client: more than 20 in 30 s; retry after 30 s', details: [] });
    } finally {
      lb.kill('SIGKILL');
      await a.stop();
    }
  });

  itWith(HAPROXY, 'haproxy.cfg with `accept-proxy`: the limit keys on the client address the PROXY protocol header names', async function () {
    this.timeout(60_000);
    // the health check asks /ready on the replica's operations port (deploy/haproxy.cfg OPS_PORT)
    const opsPort = await freePort();
    const a = await startServe(['--db', DEMO('wasm'), '--ops-port', String(opsPort)]);
    const port = await freePort();
    const replica = new URL(a.url).host;
    const cfg = join(tmp, 'haproxy-accept-proxy.cfg');
    const text = readFileSync(join(DEPLOY, 'haproxy.cfg'), 'utf8');
    expect(text).to.contain('bind "${LISTEN}"\n');
    writeFileSync(cfg, text.replace('bind "${LISTEN}"\n', 'bind "${LISTEN}" accept-proxy\n'));
    const lb = spawn(HAPROXY ?? 'haproxy', ['-db', '-f', cfg], {
      stdio: 'ignore', env: { ...process.env, LISTEN: `127.0.0.1:${port}`, STATS_SOCKET: join(tmp, `haproxy-${port}.sock`), OPS_PORT: String(opsPort), REPLICA1: replica, REPLICA2: replica, REPLICA3: replica, RATE_LIMIT: '3', RATE_LIMIT_PERIOD_S: '30' },
    });
    // one connection per request, all from 127.0.0.1, each saying which client it carries
    const viaProxy = (client: string): Promise<number> => new Promise((done) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.end(`PROXY TCP4 ${client} 127.0.0.1 40000 ${port}\r\nGET /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      });
      let head = '';
      socket.setEncoding('utf8').on('data', (d: string) => { head += d; });
      socket.on('close', () => done(Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0)));
      socket.on('error', () => done(0));
    });
    try {
      for (let tries = 0; (await viaProxy(`192.0.2.${1 + (tries % 200)}`)) !== 200; tries++) {
        if (tries > 40) throw new Error('haproxy did not forward to the replica');
        await new Promise((r) => setTimeout(r, 250));
      }
      const first: number[] = [];
      for (let i = 0; i < 5; i++) first.push(await viaProxy('203.0.113.9'));
      expect(first).to.deep.equal([200, 200, 200, 429, 429]);
      expect(await viaProxy('203.0.113.10')).to.equal(200);
    } finally {
      lb.kill('SIGKILL');
      await a.stop();
    }
  });

  itWith(NGINX, 'nginx-upstream.conf passes `nginx -t` included in an http block', () => {
    for (const d of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) spawnSync('mkdir', ['-p', join(tmp, d)]);
    const conf = join(tmp, 'nginx.conf');
    writeFileSync(conf, `pid ${tmp}/nginx.pid;\nerror_log ${tmp}/error.log;\nevents {}\nhttp {\n  access_log off;\n`
      + ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((d) => `  ${d}_temp_path ${tmp}/${d};\n`).join('')
      + `  include ${join(DEPLOY, 'nginx-upstream.conf')};\n}\n`);
    const r = spawnSync(NGINX ?? 'nginx', ['-t', '-c', conf, '-e', join(tmp, 'error.log')], { encoding: 'utf8' });
    expect(r.stderr).to.contain('test is successful');
    expect(r.status).to.equal(0);
  });

  itWith(SYSTEMD_ANALYZE, 'indexer-api.service passes `systemd-analyze verify` (ExecStart pointed at this checkout)', () => {
    const unit = join(tmp, 'indexer-api.service');
    writeFileSync(unit, readFileSync(join(DEPLOY, 'indexer-api.service'), 'utf8').replace(/^ExecStart=\/usr\/local\/bin\/indexer-api/m, `ExecStart=${CLI}`));
    const r = spawnSync(SYSTEMD_ANALYZE ?? 'systemd-analyze', ['verify', unit], { encoding: 'utf8' });
    expect(r.stderr.split('\n').filter((l) => l.includes('indexer-api.service'))).to.deep.equal([]);
    expect(r.status).to.equal(0);
  }, false);

  itWith(NGINX, 'nginx-upstream.conf, run in front of two replicas: every request answered while one is killed', async function () {
    this.timeout(60_000);
    const a = await startServe(['--db', DEMO('wasm')]);
    const b = await startServe(['--db', DEMO('wasm')]);
    const port = await freePort();
    const hostPort = (u: string): string => new URL(u).host;
    const upstream = readFileSync(join(DEPLOY, 'nginx-upstream.conf'), 'utf8')
      .replace(/server 10\.0\.0\.11:8080/, `server ${hostPort(a.url)}`)
      .replace(/server 10\.0\.0\.12:8080/, `server ${hostPort(b.url)}`)
      .replace(/^\s*server 10\.0\.0\.13:8080.*\n/m, '')
      .replace('listen 8080;', `listen 127.0.0.1:${port};`)
      // one client sends all 60 requests at once: above the per-client limit, which this test is not about
      .replace('rate=10r/s', 'rate=1000r/s');
    const dir = mkdtempSync(join(tmp, 'lb-'));
    writeFileSync(join(dir, 'upstream.conf'), upstream);
    const conf = join(dir, 'nginx.conf');
    writeFileSync(conf, `daemon off;\nmaster_process off;\npid ${dir}/nginx.pid;\nerror_log ${dir}/error.log;\nevents {}\nhttp {\n  access_log off;\n`
      + ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((d) => `  ${d}_temp_path ${dir}/${d};\n`).join('')
      + `  include ${join(dir, 'upstream.conf')};\n}\n`);
    const lb = spawn(NGINX ?? 'nginx', ['-c', conf, '-e', join(dir, 'error.log')], { stdio: 'ignore' });
    try {
      const url = `http://127.0.0.1:${port}`;
      await eventually('nginx listening', async () => (await get(`${url}/status`).catch(() => ({ status: 0 }))).status === 200 || undefined);
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) statuses.push((await get(`${url}/indexer/block/v1/blocks?pagination.limit=2`)).status);
      await a.stop('SIGKILL');
      for (let i = 0; i < 40; i++) statuses.push((await get(`${url}/indexer/block/v1/blocks?pagination.limit=2`)).status);
      expect(statuses.filter((s) => s !== 200)).to.deep.equal([]);
    } finally {
      lb.kill('SIGKILL');
      await b.stop();
    }
  });

  it('k8s.yaml: a Deployment ready on /ready with --db on an emptyDir filled by --pull, and a Service selecting it', () => {
    const { deployment, service } = k8s();
    const pod = deployment.spec.template.spec;
    const [c] = pod.containers;
    const db = c.args[c.args.indexOf('--db') + 1];
    expect(c.args).to.include('--pull');
    // probed on the operations port, answered where no query runs (docs/reliability.md#overload)
    expect(c.readinessProbe.httpGet).to.deep.equal({ path: '/ready', port: 'ops' });
    expect(Number(c.args[c.args.indexOf('--ops-port') + 1])).to.equal((c.ports.find((p) => p.name === 'ops') as unknown as { containerPort: number }).containerPort);
    const mount = c.volumeMounts.find((m) => m.mountPath === dirname(db));
    expect(pod.volumes.find((v) => v.name === mount?.name)).to.have.property('emptyDir');
    expect(service.spec.selector).to.deep.equal(deployment.spec.template.metadata.labels);
    expect(service.spec.ports[0].targetPort).to.equal(c.ports[0].name);
  });

  describe('the second layout: one replica for all chains (docs/scaling.md#many-chains-one-replica)', () => {
    it('indexer-api.service: the commented ExecStart serves --db-dir (not --pull, not --db) of a directory the commented StateDirectory creates, on the ops port the balancer checks', () => {
      const text = readFileSync(join(DEPLOY, 'indexer-api.service'), 'utf8');
      const execStart = unitAlternative(text, 'ExecStart');
      const args = execStart.split(/\s+/);
      const dir = args[args.indexOf('--db-dir') + 1];
      expect(args.indexOf('--db-dir'), execStart).to.be.greaterThan(0);
      expect(flagsIn(execStart)).to.not.include.members(['pull']);
      expect(flagsIn(execStart)).to.not.include('db');
      const stateDirs = unitAlternative(text, 'StateDirectory').split(/\s+/).map((d) => `/var/lib/${d}`);
      expect(stateDirs, 'StateDirectory= creates the --db-dir').to.include(dir);
      // the same ports as the one-chain ExecStart: the balancer's config does not change
      const single = /^ExecStart=(.*)$/m.exec(text)?.[1] ?? '';
      for (const flag of ['--port', '--ops-port', '--host']) {
        const at = (line: string): string | undefined => { const a = line.split(/\s+/); return a.includes(flag) ? a[a.indexOf(flag) + 1] : undefined; };
        expect(at(execStart), flag).to.equal(at(single)).and.not.equal(undefined);
      }
    });

    itWith(SYSTEMD_ANALYZE, 'indexer-api.service with the all-chains lines in place passes `systemd-analyze verify`', () => {
      const text = readFileSync(join(DEPLOY, 'indexer-api.service'), 'utf8');
      const unit = join(tmp, 'indexer-api-chains.service');
      writeFileSync(unit, text
        .replace(/^StateDirectory=.*$/m, `StateDirectory=${unitAlternative(text, 'StateDirectory')}`)
        .replace(/^ExecStart=.*$/m, `ExecStart=${unitAlternative(text, 'ExecStart').replace(/^\/usr\/local\/bin\/indexer-api/, CLI)}`));
      const r = spawnSync(SYSTEMD_ANALYZE ?? 'systemd-analyze', ['verify', unit], { encoding: 'utf8' });
      expect(r.stderr.split('\n').filter((l) => l.includes('indexer-api-chains.service'))).to.deep.equal([]);
      expect(r.status).to.equal(0);
    }, false);

    it('k8s.yaml: the commented args serve --db-dir under a volume mount, no --pull, the ops port the readiness probe asks', () => {
      const args = k8sChainsArgs();
      const c = k8s().deployment.spec.template.spec.containers[0];
      expect(args[0]).to.equal('serve');
      expect(args).to.include('--db-dir').and.not.include('--pull').and.not.include('--db');
      const dir = args[args.indexOf('--db-dir') + 1];
      expect(c.volumeMounts.some((m) => dir.startsWith(`${m.mountPath}/`)), `${dir} under a volume mount`).to.equal(true);
      expect(c.readinessProbe.httpGet).to.deep.equal({ path: '/ready', port: 'ops' });
      expect(args[args.indexOf('--ops-port') + 1]).to.equal(c.args[c.args.indexOf('--ops-port') + 1]);
      expect(args[args.indexOf('--port') + 1]).to.equal(c.args[c.args.indexOf('--port') + 1]);
    });

    it('the proxies pass every path as it is: nginx `location /` proxy_pass has no URI part, haproxy.cfg rewrites no path', () => {
      const nginx = readFileSync(join(DEPLOY, 'nginx-upstream.conf'), 'utf8');
      const root = /^ {4}location \/ \{([\s\S]*?)^ {4}\}/m.exec(nginx)?.[1] ?? '';
      expect(root).to.match(/^\s*proxy_pass http:\/\/indexer_api_replicas;$/m);
      expect(nginx).to.contain('# One replica for all chains');
      const haproxy = readFileSync(join(DEPLOY, 'haproxy.cfg'), 'utf8');
      const live = haproxy.split('\n').filter((l) => !/^\s*#/.test(l)).join('\n');
      expect(live).to.not.match(/\b(set-path|replace-path|set-uri|replace-uri|set-pathq)\b/);
      expect(live).to.match(/^\s*default_backend replicas$/m);
      expect(haproxy).to.contain('# One replica for all chains');
    });

    itWith(HAPROXY, 'haproxy.cfg in front of the unit\'s all-chains replica: each chain under /{chain_id}/ and the list at / passed as they are, checked on the ops /ready', async function () {
      this.timeout(60_000);
      // the unit's --db-dir, here a directory of two demo chains
      const text = readFileSync(join(DEPLOY, 'indexer-api.service'), 'utf8');
      const args = unitAlternative(text, 'ExecStart').split(/\s+/);
      const dir = join(tmp, 'chains');
      mkdirSync(dir, { recursive: true });
      for (const vm of ['wasm', 'evm'] as const) copyFileSync(DEMO(vm), join(dir, `${vm}.sqlite`));
      const opsPort = await freePort();
      const a = await startServe(['--db-dir', args[args.indexOf('--db-dir') + 1].replace('/var/lib/indexer-api/chains', dir), '--ops-port', String(opsPort)]);
      const port = await freePort();
      const replica = new URL(a.url).host;
      const lb = spawn(HAPROXY ?? 'haproxy', ['-db', '-f', join(DEPLOY, 'haproxy.cfg')], {
        stdio: 'ignore', env: { ...process.env, LISTEN: `127.0.0.1:${port}`, STATS_SOCKET: join(tmp, `haproxy-${port}.sock`), OPS_PORT: String(opsPort), REPLICA1: replica, REPLICA2: replica, REPLICA3: replica },
      });
      try {
        const url = `http://127.0.0.1:${port}`;
        const listed = await eventually('haproxy forwarding /', async () => {
          const r = await get(`${url}/`, { accept: 'application/json' }).catch(() => undefined);
          return r?.status === 200 ? JSON.parse(r.body) as { chains: { chain_id: string; path: string }[] } : undefined;
        }, 200);
        const ids = listed.chains.map((c) => c.chain_id).sort();
        expect(ids).to.deep.equal(['minievm-demo-1', 'miniwasm-demo-1']);
        for (const c of listed.chains) {
          const status = await get(`${url}${c.path.replace(/\/$/, '')}/indexer/block/v1/blocks?pagination.limit=1`);
          expect(status.status, c.path).to.equal(200);
          expect((await get(`${url}/${c.chain_id}/ready`)).status).to.equal(200);
        }
        // the balancer's check: the ops port's /ready names each chain
        const ready = JSON.parse((await get(`http://127.0.0.1:${opsPort}/ready`)).body) as { chains: Record<string, unknown> };
        expect(Object.keys(ready.chains).sort()).to.deep.equal(ids);
      } finally {
        lb.kill('SIGKILL');
        await a.stop();
      }
    });
  });

  it('every serve option the deploy files use exists (serve --help)', () => {
    const help = spawnSync(process.execPath, [CLI, 'serve', '--help'], { encoding: 'utf8' }).stdout;
    const execStart = /^ExecStart=(.*)$/m.exec(readFileSync(join(DEPLOY, 'indexer-api.service'), 'utf8'))?.[1] ?? '';
    const chains = [...flagsIn(unitAlternative(readFileSync(join(DEPLOY, 'indexer-api.service'), 'utf8'), 'ExecStart')), ...flagsIn(k8sChainsArgs().join(' '))];
    const used = [...flagsIn(execStart), ...flagsIn(k8s().deployment.spec.template.spec.containers[0].args.join(' ')), ...chains];
    expect(used).to.include.members(['pull', 'db', 'db-dir', 'host', 'port']);
    for (const flag of used) expect(help, `--${flag}`).to.contain(`--${flag}`);
    // The unit sets --pull through the environment: serve reads INDEXER_API_PULL as --pull (src/settings/command-line.ts).
    expect(readFileSync(join(DEPLOY, 'indexer-api.service'), 'utf8')).to.contain('INDEXER_API_PULL');
  });
});
