import { expect } from 'chai';
import { ChildProcess, spawn, spawnSync, SpawnSyncReturns } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadAll } from 'js-yaml';
import { freePort } from '../support/net';
import { eventually, get, ServeProcess } from '../helpers/serve';

/**
 * The container image of deploy/Containerfile, as `make image` (scripts/build-image.sh) leaves it
 * in the OCI layout dist/image: its config, its one layer, and the image run — unpacked by umoci
 * and started with chroot as its user on a read-only root (needs root), and by podman where this
 * machine can run containers. Skipped without dist/image unless TEST_REQUIRE_IMAGE=1 (CI:
 * scripts/ci-container.sh installs buildah, umoci, podman and runc; .ci/run runs `make image`).
 */

const ROOT = resolve(__dirname, '..', '..', '..'); // compiled into build/test/deploy/
const LAYOUT = join(ROOT, 'dist', 'image');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const CONTAINERFILE = readFileSync(join(ROOT, 'deploy', 'Containerfile'), 'utf8');
const REQUIRED = process.env.TEST_REQUIRE_IMAGE === '1';
const EXE = '/usr/local/bin/indexer-api';

interface Descriptor { mediaType: string; digest: string; size: number; annotations?: Record<string, string> }
interface Manifest { config: Descriptor; layers: Descriptor[] }
interface ImageConfig {
  architecture: string;
  os: string;
  config: {
    User?: string; Env?: string[]; Entrypoint?: string[]; Cmd?: string[]; WorkingDir?: string;
    ExposedPorts?: Record<string, object>; Volumes?: Record<string, object>; Labels?: Record<string, string>;
  };
}
/** The parts of the runtime spec (config.json) `umoci unpack` writes that the chroot run uses. */
interface RuntimeSpec { process: { user: { uid: number; gid: number }; args: string[]; env: string[]; cwd: string } }

/** The Containerfile's USER uid:gid and ENV XDG_CACHE_HOME: what deploy/k8s.yaml must agree with. */
const [, USER_UID, USER_GID] = /^USER\s+(\d+):(\d+)\s*$/m.exec(CONTAINERFILE) ?? [];
const CACHE_DIR = /\bXDG_CACHE_HOME=(\S+)/.exec(CONTAINERFILE)?.[1];

function missing(what: string, ctx: Mocha.Context): never {
  if (REQUIRED) throw new Error(`TEST_REQUIRE_IMAGE=1 but ${what}`);
  ctx.skip();
}

function run(cmd: string, args: string[], timeout = 120_000): SpawnSyncReturns<string> {
  return spawnSync(cmd, args, { encoding: 'utf8', timeout, maxBuffer: 64 << 20 });
}

function has(cmd: string): boolean {
  return run('sh', ['-c', `command -v ${cmd}`]).status === 0;
}

/** A blob of the layout, checked against its descriptor's size and digest. */
function blob(d: Descriptor): Buffer {
  const [alg, hex] = d.digest.split(':');
  const bytes = readFileSync(join(LAYOUT, 'blobs', alg, hex));
  expect(bytes.length, `size of ${d.digest}`).to.equal(d.size);
  expect(createHash(alg).update(bytes).digest('hex'), `digest of blobs/${alg}/${hex}`).to.equal(hex);
  return bytes;
}

/** The value after `flag` in `args`, once: a repeated option would become an array. */
function optionOf(args: string[], flag: string): string | undefined {
  expect(args.filter((a) => a === flag), `${flag} in ${args.join(' ')}`).to.have.length.at.most(1);
  const i = args.indexOf(flag);
  return i < 0 ? undefined : args[i + 1];
}

/** `args` with the values of `--host` and `--port` replaced (both must be there). */
function listenOn(args: string[], host: string, port: number): string[] {
  const out = [...args];
  for (const [flag, value] of [['--host', host], ['--port', String(port)]]) {
    expect(optionOf(out, flag), `${flag} in ${args.join(' ')}`).to.be.a('string');
    out[out.indexOf(flag) + 1] = value;
  }
  return out;
}

function envOf(env: string[] | undefined): Record<string, string> {
  return Object.fromEntries((env ?? []).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
}

describe('container image (deploy/Containerfile, make image)', () => {
  it('deploy/k8s.yaml runs the image make image builds: its user, a read-only root, emptyDirs at the cache, /data and /tmp', () => {
    interface Container {
      image: string; ports: { containerPort: number }[]; volumeMounts: { name: string; mountPath: string }[];
      securityContext?: Record<string, unknown>;
    }
    const [deployment] = loadAll(readFileSync(join(ROOT, 'deploy', 'k8s.yaml'), 'utf8')) as {
      spec: { template: { spec: { securityContext?: Record<string, unknown>; containers: Container[]; volumes: { name: string; emptyDir?: unknown }[] } } };
    }[];
    const pod = deployment.spec.template.spec;
    const [c] = pod.containers;
    expect(c.image, 'the image name and tag make image writes').to.match(new RegExp(`(^|/)indexer-api:${VERSION.replace(/\./g, '\\.')}$`));
    expect(USER_UID, 'USER uid:gid in deploy/Containerfile').to.match(/^[1-9]\d*$/);
    expect(pod.securityContext).to.include({ runAsNonRoot: true, runAsUser: Number(USER_UID), runAsGroup: Number(USER_GID) });
    expect(c.securityContext).to.include({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    expect(CACHE_DIR, 'ENV XDG_CACHE_HOME in deploy/Containerfile').to.be.a('string');
    for (const dir of [CACHE_DIR, '/data', '/tmp']) {
      const mount = c.volumeMounts.find((m) => m.mountPath === dir);
      expect(mount, `a volume mounted at ${dir}`).to.not.equal(undefined);
      expect(pod.volumes.find((v) => v.name === mount?.name), `volume ${mount?.name}`).to.have.property('emptyDir');
    }
    expect(c.ports[0].containerPort).to.equal(Number(/^EXPOSE\s+(\d+)/m.exec(CONTAINERFILE)?.[1]));
  });

  describe('dist/image', () => {
    let manifest: Manifest;
    let config: ImageConfig;
    let uid: number;
    let gid: number;

    before(function () {
      if (!existsSync(join(LAYOUT, 'index.json'))) missing(`${LAYOUT} does not exist: run \`make image\``, this);
      const index = JSON.parse(readFileSync(join(LAYOUT, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
      const d = index.manifests.find((m) => m.annotations?.['org.opencontainers.image.ref.name'] === VERSION);
      if (!d) throw new Error(`${LAYOUT}/index.json has no image tagged ${VERSION} (package.json version): run \`make image\``);
      manifest = JSON.parse(blob(d).toString('utf8')) as Manifest;
      config = JSON.parse(blob(manifest.config).toString('utf8')) as ImageConfig;
      [uid, gid] = (config.config.User ?? '').split(':').map(Number);
    });

    it('config: the executable as entrypoint, a numeric non-root user, port 8080, serve on 0.0.0.0, the cache a volume', () => {
      const c = config.config;
      expect([config.os, config.architecture]).to.deep.equal(['linux', 'amd64']);
      expect(c.User).to.match(/^\d+:\d+$/); // Kubernetes' runAsNonRoot can only check a number
      expect(uid).to.be.above(0);
      expect(gid).to.be.above(0);
      expect(c.Entrypoint).to.deep.equal([EXE]);
      expect(c.Cmd?.[0]).to.equal('serve');
      expect(optionOf(c.Cmd ?? [], '--host'), 'serve --host in the default command').to.equal('0.0.0.0');
      expect(optionOf(c.Cmd ?? [], '--port')).to.equal('8080');
      expect(Object.keys(c.ExposedPorts ?? {})).to.deep.equal(['8080/tcp']);
      const env = envOf(c.Env);
      // no INDEXER_API_<OPTION> in the image: the default command says its options where they are seen
      expect(Object.keys(env).filter((k) => k.startsWith('INDEXER_API_'))).to.deep.equal([]);
      expect(env.XDG_CACHE_HOME).to.equal(CACHE_DIR);
      expect(Object.keys(c.Volumes ?? {})).to.have.members([env.XDG_CACHE_HOME, '/data']);
      expect(c.Labels?.['org.opencontainers.image.version']).to.equal(VERSION);
    });

    it('layer: the executable, its shared libraries and loader, passwd/group; the volumes owned by the user; no shell', () => {
      expect(manifest.layers).to.have.length(1); // FROM scratch: nothing under our one layer
      const [layer] = manifest.layers;
      expect(layer.mediaType).to.equal('application/vnd.oci.image.layer.v1.tar+gzip');
      const list = run('tar', ['--numeric-owner', '-tvzf', join(LAYOUT, 'blobs', ...layer.digest.split(':'))]);
      expect(list.status, list.stderr).to.equal(0);
      // "drwxr-xr-x 10001/10001 0 2026-11-26 04:10 cache/"
      const entries = list.stdout.trim().split('\n').map((l) => {
        const [mode, owner, , , , ...name] = l.split(/\s+/);
        return { mode, owner, name: name.join(' ') };
      });
      const files = entries.filter((e) => !e.mode.startsWith('d')).map((e) => e.name).sort();
      // where ldd found them: /lib/x86_64-linux-gnu on Debian, /usr/lib/… elsewhere
      const libs = files.filter((f) => /^(usr\/)?lib\/x86_64-linux-gnu\/[^/]+\.so(\.\d+)*$/.test(f));
      expect(files).to.deep.equal(['etc/group', 'etc/passwd', ...libs, 'lib64/ld-linux-x86-64.so.2', EXE.slice(1)].sort());
      expect(libs.map((f) => f.slice(f.lastIndexOf('/') + 1))).to.include.members(['libc.so.6', 'libstdc++.so.6']);
      for (const dir of ['cache/', 'data/']) expect(entries.find((e) => e.name === dir)?.owner, dir).to.equal(`${uid}/${gid}`);
      expect(entries.find((e) => e.name === 'tmp/')?.mode).to.equal('drwxrwxrwt');
    });

    describe('unpacked by umoci, run with chroot as its user on a read-only root', () => {
      let dir: string;
      let spec: RuntimeSpec;

      before(function () {
        this.timeout(180_000);
        if (process.getuid?.() !== 0) missing('chroot and mount need root', this);
        for (const tool of ['umoci', 'unshare', 'mount']) if (!has(tool)) missing(`${tool} is not installed (scripts/ci-container.sh)`, this);
        dir = mkdtempSync(join(tmpdir(), 'indexer-api-image-'));
        const r = run('umoci', ['unpack', '--image', `${LAYOUT}:${VERSION}`, join(dir, 'bundle')], 170_000);
        expect(r.status, `umoci unpack: ${r.stderr}`).to.equal(0);
        spec = JSON.parse(readFileSync(join(dir, 'bundle', 'config.json'), 'utf8')) as RuntimeSpec;
      });
      after(() => { if (dir) rmSync(dir, { recursive: true, force: true }); });

      /**
       * The image's entrypoint with its user, environment and working directory from umoci's
       * runtime spec, chrooted into the rootfs bind-mounted read-only in a private mount namespace;
       * the cache volume is `cache` (a host directory, mode 0777 like an emptyDir), a noexec tmpfs,
       * or nothing (then only the read-only root is there).
       */
      function start(cache: string | 'noexec' | undefined, args: string[]): ChildProcess {
        const rootfs = join(dir, 'bundle', 'rootfs');
        const mountCache = cache === undefined ? ':'
          : cache === 'noexec' ? `mount -t tmpfs -o noexec,mode=1777 tmpfs "$R${CACHE_DIR}"`
            : `mount --bind "$C" "$R${CACHE_DIR}"`;
        const script = `set -e; R=$1; C=$2; shift 2; mount --bind "$R" "$R"; mount -o remount,bind,ro "$R"; ${mountCache}; `
          + 'mount -t proc proc "$R/proc"; exec /usr/bin/env -i "$@"';
        const { user, env, cwd } = spec.process;
        return spawn('unshare', ['--mount', '--propagation', 'private', '--', '/bin/sh', '-c', script, 'sh', rootfs, cache ?? '',
          ...env, '/usr/bin/unshare', '--root', rootfs, '--wd', cwd, '--setgid', String(user.gid), '--setuid', String(user.uid), '--', ...args],
        { stdio: ['ignore', 'pipe', 'pipe'] });
      }

      it('runs as the image user from its directory with its environment', () => {
        expect(spec.process.user).to.deep.equal({ uid, gid });
        expect(spec.process.args).to.deep.equal([...(config.config.Entrypoint ?? []), ...(config.config.Cmd ?? [])]);
        expect(spec.process.cwd).to.equal(config.config.WorkingDir);
      });

      it('the default command serves the embedded demo (only the cache volume writable); the addon lands in the cache', async function () {
        this.timeout(120_000);
        const cache = mkdtempSync(join(dir, 'cache-'));
        chmodSync(cache, 0o777);
        const port = await freePort();
        // the image's own command (serve --demo move), on this machine's loopback instead of 0.0.0.0:8080
        const p = new ServeProcess(start(cache, [...listenOn(spec.process.args, '127.0.0.1', port), '--workers', '1']));
        try {
          const url = await p.until('the "serving … on URL" line', () => /serving .* on (http:\/\/\S+)/.exec(p.stderr)?.[1]);
          expect(url).to.equal(`http://127.0.0.1:${port}`);
          const status = await get(`${url}/status`);
          expect(status.status, status.body).to.equal(200);
          expect((JSON.parse(status.body) as { chain_id: string }).chain_id).to.match(/move/);
          const blocks = await get(`${url}/indexer/block/v1/blocks?pagination.limit=1`);
          expect(blocks.status, blocks.body).to.equal(200);
        } finally {
          expect(await p.stop(), p.stderr).to.deep.equal({ code: 0, signal: null });
        }
        const cached = readdirSync(join(cache, 'indexer-api'));
        expect(cached.filter((f) => /^[0-9a-f]{32}-better_sqlite3\.node$/.test(f)), cached.join(' ')).to.have.length(1);
      });

      it('without a writable cache: exits 1 naming the cache directory and XDG_CACHE_HOME', async function () {
        this.timeout(60_000);
        const p = new ServeProcess(start(undefined, [EXE, 'serve', '--demo', 'wasm', '--get', '/status']));
        const exit = await p.exited;
        expect(exit.code, p.stderr).to.equal(1);
        // the demo snapshot is the first file it writes there
        expect(p.stderr).to.contain(`cannot write demo-wasm.sqlite into the cache directory ${CACHE_DIR}/indexer-api`).and.contain('set XDG_CACHE_HOME');
      });

      it('with the cache on a noexec mount: exits 1 saying so', async function () {
        this.timeout(60_000);
        const p = new ServeProcess(start('noexec', [EXE, 'serve', '--demo', 'wasm', '--get', '/status']));
        const exit = await p.exited;
        expect(exit.code, p.stderr).to.equal(1);
        expect(p.stderr).to.match(/cannot load the SQLite addon \S+better_sqlite3\.node .*noexec mount.*XDG_CACHE_HOME/);
      });
    });

    describe('run by podman', () => {
      const image = `localhost/indexer-api:${VERSION}`;
      /**
       * podman's default limits (1048576 open files) exceed the hard limit of some machines, where
       * raising it needs CAP_SYS_RESOURCE: ask for limits any machine allows.
       */
      const LIMITS = ['--ulimit', 'nofile=4096:4096', '--ulimit', 'nproc=4096:4096'];
      let runtime: string[] = [];

      before(function () {
        this.timeout(120_000);
        if (!has('podman')) missing('podman is not installed (scripts/ci-container.sh)', this);
        const id = run('podman', ['image', 'inspect', '--format', '{{.Id}}', image]);
        if (id.status !== 0) missing(`podman has no ${image}: run \`make image\` (${id.stderr.trim()})`, this);
        expect(`sha256:${id.stdout.trim()}`, `${image} is the image in ${LAYOUT} (run \`make image\`)`).to.equal(manifest.config.digest);
        // Where the machine cannot run containers at all, the chroot run above is the test.
        const tried: string[] = [];
        for (const r of [[], ...(has('runc') ? [['--runtime', 'runc']] : [])]) {
          const v = run('podman', [...r, 'run', '--rm', '--network', 'none', ...LIMITS, image, '--version'], 60_000);
          if (v.status === 0 && v.stdout.startsWith(`${VERSION} `)) { runtime = r; return; }
          tried.push(`${r.join(' ') || 'default runtime'}: ${(v.stderr || v.stdout).trim().split('\n').pop()}`);
        }
        console.warn(`    (podman cannot run a container on this machine, skipped: ${tried.join('; ')})`);
        this.skip();
      });

      it('--read-only without tmpfs, port 8080 published: the default command answers /status as the image user, stops on SIGTERM', async function () {
        this.timeout(120_000);
        const name = `indexer-api-test-${process.pid}-${randomBytes(3).toString('hex')}`;
        const port = await freePort();
        const p = new ServeProcess(spawn('podman', [...runtime, 'run', '--rm', '--name', name, '--read-only', '--read-only-tmpfs=false',
          ...LIMITS, '-p', `127.0.0.1:${port}:8080`, image], { stdio: ['ignore', 'pipe', 'pipe'] }));
        try {
          await p.until('"serving … on http://0.0.0.0:8080"', () => p.stderr.includes('on http://0.0.0.0:8080') || undefined);
          const status = await eventually('/status through the published port', async () => {
            const r = await get(`http://127.0.0.1:${port}/status`).catch(() => undefined);
            return r?.status === 200 ? r : undefined;
          });
          expect((JSON.parse(status.body) as { chain_id: string }).chain_id).to.match(/move/);
          const top = run('podman', [...runtime, 'top', name, 'huser', 'args']);
          expect(top.status, top.stderr).to.equal(0);
          const procs = top.stdout.trim().split('\n').slice(1);
          expect(procs.length).to.be.above(0);
          for (const l of procs) expect(l, top.stdout).to.match(new RegExp(`^${uid}\\s+${EXE}`));
          const stop = run('podman', [...runtime, 'stop', '-t', '20', name]);
          expect(stop.status, stop.stderr).to.equal(0);
          expect(await p.exited, p.stderr).to.deep.equal({ code: 0, signal: null });
        } finally {
          run('podman', [...runtime, 'rm', '-f', '--time', '0', name]);
          await p.stop('SIGKILL');
        }
      });
    });
  });
});
