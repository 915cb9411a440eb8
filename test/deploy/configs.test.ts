import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { loadAll } from 'js-yaml';
import { NGINX } from '../support/nginx';
import { freePort } from '../support/net';
import { DEMO, eventually, get, startServe } from '../serve/helpers';

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
      stdio: 'ignore', env: { ...process.env, LISTEN: `127.0.0.1:${port}`, OPS_PORT: String(opsPort), REPLICA1: replica, REPLICA2: replica, REPLICA3: replica, RATE_LIMIT: '20', RATE_LIMIT_PERIOD_S: '30' },
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
      stdio: 'ignore', env: { ...process.env, LISTEN: `127.0.0.1:${port}`, OPS_PORT: String(opsPort), REPLICA1: replica, REPLICA2: replica, REPLICA3: replica, RATE_LIMIT: '3', RATE_LIMIT_PERIOD_S: '30' },
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

  it('every serve option the deploy files use exists (serve --help)', () => {
    const help = spawnSync(process.execPath, [CLI, 'serve', '--help'], { encoding: 'utf8' }).stdout;
    const execStart = /^ExecStart=(.*)$/m.exec(readFileSync(join(DEPLOY, 'indexer-api.service'), 'utf8'))?.[1] ?? '';
    const used = [...flagsIn(execStart), ...flagsIn(k8s().deployment.spec.template.spec.containers[0].args.join(' '))];
    expect(used).to.include.members(['pull', 'db', 'host', 'port']);
    for (const flag of used) expect(help, `--${flag}`).to.contain(`--${flag}`);
    // The unit sets --pull through the environment: yargs reads INDEXER_API_PULL as --pull.
    expect(readFileSync(join(DEPLOY, 'indexer-api.service'), 'utf8')).to.contain('INDEXER_API_PULL');
  });
});
