/**
 * The scale-out setup of docs/scaling.md on one machine, for test/scale and bench/scale: an
 * origin (nginx serving a `publish` directory) and N replicas (`serve --pull`), each in its own
 * network namespace (test/support/netns.ts), and HAProxy on the host running deploy/haproxy.cfg
 * itself in front of them. Plus a client that keeps requests going through HAProxy and records
 * every failure, and a monitor that records what each replica's /ready says over time.
 */
import { ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { publishSnapshot, PublishResult } from '../../src/publish/publish';
import { cleanEnv, ServeProcess } from '../helpers/serve';
import { freePort } from './net';
import type { Outcome, Plan } from './burst-client';
import { NetnsLab, Host } from './netns';
import { Nginx, NGINX, startNginx } from './nginx';

const ROOT = resolve(__dirname, '..', '..', '..');
const CLI = join(ROOT, 'bin', 'indexer-api');
export const HAPROXY = ['/usr/sbin/haproxy', '/usr/bin/haproxy'].find((p) => existsSync(p));
const REPLICA_PORT = 8080;
/** every replica's --ops-port, where deploy/haproxy.cfg checks /ready (its OPS_PORT default) */
const REPLICA_OPS_PORT = 9101;

export interface LabOptions {
  replicas: number;
  pullIntervalMs: number;
  /** serve --workers per replica (default 1) */
  workers?: number;
  /** extra serve options */
  serveArgs?: string[];
}

export interface Replica { host: Host; db: string; proc?: ServeProcess }

export interface Ready { status: number; height?: number; snapshotId?: string }

export interface BalancerOptions {
  /** address to listen on: 127.0.0.1 (default), or the lab's host address to be reachable from its namespaces */
  host?: string;
  /** extra environment (HAProxy's knobs: RATE_LIMIT, TRUSTED_PROXIES, …) */
  env?: NodeJS.ProcessEnv;
  /** rewrites deploy/nginx-upstream.conf before nginx runs it (its knobs are literals) */
  edit?: (conf: string) => string;
}

export interface Balancer { url: string; stop(): Promise<void> }

/** GET with a timeout; resolves with status and body, rejects on a network error. */
export function httpGet(url: string, timeoutMs: number, agent?: Agent): Promise<{ status: number; body: string }> {
  return new Promise((done, fail) => {
    const req = request(url, { agent: agent ?? false, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (s: string) => { body += s; });
      res.on('end', () => done({ status: res.statusCode ?? 0, body }));
      res.on('error', fail);
    });
    req.on('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
    req.on('error', fail);
    req.end();
  });
}

export class ScaleLab {
  readonly net = new NetnsLab();
  readonly tmp = mkdtempSync(join(tmpdir(), 'indexer-api-scale-'));
  readonly dir = join(this.tmp, 'origin');
  readonly replicas: Replica[] = [];
  origin!: Host;
  originHttp!: Nginx;
  haproxy?: ChildProcess;
  haproxyLog = '';
  /** HAProxy's runtime API (deploy/haproxy.cfg STATS_SOCKET), in the lab's directory */
  readonly haproxySocket = join(this.tmp, 'haproxy-admin.sock');
  /** which replica each of deploy/haproxy.cfg's server lines (replica1..3) points at */
  private serverReplica: number[] = [];
  url = '';
  private readonly balancers: Balancer[] = [];

  private constructor(readonly o: LabOptions) {}

  get manifestUrl(): string { return `http://${this.origin.addr}:8080/manifest.json`; }

  static async start(o: LabOptions): Promise<ScaleLab> {
    const lab = new ScaleLab(o);
    try {
      mkdirSync(lab.dir);
      lab.origin = lab.net.addHost('origin');
      lab.originHttp = await startNginx(lab.dir, lab.origin.addr, 8080, lab.origin.netns);
      for (let i = 0; i < o.replicas; i++) {
        const host = lab.net.addHost(`r${i + 1}`);
        const data = join(lab.tmp, host.name);
        mkdirSync(data);
        lab.replicas.push({ host, db: join(data, 'local.sqlite') });
      }
      return lab;
    } catch (e) {
      await lab.stop();
      throw e;
    }
  }

  publish(db: string): Promise<PublishResult> {
    return publishSnapshot({ db, to: this.dir, keep: 3, compress: 'auto' });
  }

  /** Starts (or restarts) replica i: `serve --pull` inside its namespace on :8080. */
  async startReplica(i: number): Promise<ServeProcess> {
    const r = this.replicas[i];
    const args = [CLI, 'serve', '--pull', this.manifestUrl, '--pull-interval', `${this.o.pullIntervalMs}ms`, '--db', r.db,
      '--host', '0.0.0.0', '--port', String(REPLICA_PORT), '--ops-port', String(REPLICA_OPS_PORT), '--workers', String(this.o.workers ?? 1), '--log-level', 'warn', ...(this.o.serveArgs ?? [])];
    const [cmd, ...pre] = this.net.exec(r.host);
    const proc = new ServeProcess(spawn(cmd, [...pre, process.execPath, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: cleanEnv() }));
    r.proc = proc;
    proc.url = await proc.until('the serving line', () => /serving .* on (http:\/\/\S+)/.exec(proc.stderr)?.[1]);
    return proc;
  }

  replicaUrl(i: number): string { return `http://${this.replicas[i].host.addr}:${REPLICA_PORT}`; }

  async ready(i: number): Promise<Ready> {
    try {
      const r = await httpGet(`${this.replicaUrl(i)}/ready`, 1_000);
      const b = r.status === 200 ? JSON.parse(r.body) as { height: number; snapshot_id: string } : undefined;
      return { status: r.status, height: b?.height, snapshotId: b?.snapshot_id };
    } catch {
      return { status: 0 };
    }
  }

  /** HAProxy on the host with deploy/haproxy.cfg, the replicas as its servers. */
  async startHaproxy(count = this.replicas.length, o: BalancerOptions = {}): Promise<void> {
    if (!HAPROXY) throw new Error('haproxy is not installed (apt-get install haproxy)');
    const port = await freePort();
    const host = o.host ?? '127.0.0.1';
    // the lab's load (clientLoad) is one address sending thousands of requests a minute: far over
    // the shipped per-client limit, which only test/scale/rate-limit.test.ts is about
    const env: NodeJS.ProcessEnv = { ...process.env, RATE_LIMIT: '1000000000', STATS_SOCKET: this.haproxySocket, ...o.env, LISTEN: `${host}:${port}` };
    this.serverReplica = [];
    for (let i = 0; i < 3; i++) {
      // deploy/haproxy.cfg names three servers; behind fewer (bench: 1, 2) the lines repeat them.
      env[`REPLICA${i + 1}`] = `${this.replicas[i % count].host.addr}:${REPLICA_PORT}`;
      this.serverReplica.push(i % count);
    }
    this.haproxy = spawn(HAPROXY, ['-db', '-f', join(ROOT, 'deploy', 'haproxy.cfg')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.haproxy.stdout!.on('data', (d: Buffer) => { this.haproxyLog += d.toString(); });
    this.haproxy.stderr!.on('data', (d: Buffer) => { this.haproxyLog += d.toString(); });
    this.url = `http://${host}:${port}`;
    for (let i = 0; ; i++) {
      if (this.haproxy.exitCode !== null) throw new Error(`haproxy exited: ${this.haproxyLog}`);
      try { await httpGet(`${this.url}/health`, 1_000); return; } catch { /* not listening yet */ }
      if (i > 100) throw new Error(`haproxy did not start: ${this.haproxyLog}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** deploy/haproxy.cfg's server lines (`replicas/replicaN`) that point at replica i: behind fewer than 3 replicas, more than one */
  serverLines(i: number): string[] {
    return this.serverReplica.flatMap((r, k) => (r === i ? [`replica${k + 1}`] : []));
  }

  /** One command to HAProxy's runtime API (its stats socket); resolves with the answer. */
  haproxyCommand(cmd: string): Promise<string> {
    return new Promise((done, fail) => {
      let out = '';
      const s = connect(this.haproxySocket, () => s.end(`${cmd}\n`));
      s.setEncoding('utf8').on('data', (d: string) => { out += d; });
      s.on('close', () => done(out));
      s.on('error', fail);
      s.setTimeout(5_000, () => s.destroy(new Error(`haproxy runtime API: no answer to ${cmd}`)));
    });
  }

  /** `show stat` of the replicas backend: each server line's status (UP, DOWN, DRAIN, …) and current sessions. */
  async haproxyServers(): Promise<Map<string, { status: string; sessions: number }>> {
    const csv = await this.haproxyCommand('show stat');
    const head = csv.split('\n')[0].replace(/^# /, '').split(',');
    const [px, sv, scur, status] = ['pxname', 'svname', 'scur', 'status'].map((f) => head.indexOf(f));
    const m = new Map<string, { status: string; sessions: number }>();
    for (const line of csv.split('\n').slice(1)) {
      const f = line.split(',');
      if (f[px] === 'replicas' && f[sv] !== 'BACKEND' && f[sv] !== 'FRONTEND') m.set(f[sv], { status: f[status], sessions: Number(f[scur]) });
    }
    return m;
  }

  async stopHaproxy(): Promise<void> {
    if (this.haproxy && this.haproxy.exitCode === null && this.haproxy.signalCode === null) {
      const exited = new Promise((r) => this.haproxy?.once('exit', r));
      this.haproxy.kill('SIGKILL');
      await exited;
    }
  }

  /** nginx on the host running deploy/nginx-upstream.conf (after `o.edit`), the replicas as its upstream. */
  async startNginxBalancer(o: BalancerOptions = {}): Promise<Balancer> {
    if (!NGINX) throw new Error('nginx is not installed (apt-get install nginx)');
    const port = await freePort();
    const host = o.host ?? '127.0.0.1';
    const dir = mkdtempSync(join(this.tmp, 'nginx-lb-'));
    let conf = readFileSync(join(ROOT, 'deploy', 'nginx-upstream.conf'), 'utf8')
      .replace(/^(\s*)server 10\.0\.0\.11:8080(.*)$/m, (_m, indent: string, rest: string) =>
        this.replicas.map((_r, i) => `${indent}server ${this.replicas[i].host.addr}:${REPLICA_PORT}${rest}`).join('\n'))
      .replace(/^\s*server 10\.0\.0\.1[23]:8080.*\n/gm, '')
      .replace('listen 8080;', `listen ${host}:${port};`);
    conf = o.edit ? o.edit(conf) : conf;
    writeFileSync(join(dir, 'upstream.conf'), conf);
    for (const d of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, d));
    writeFileSync(join(dir, 'nginx.conf'), `daemon off;\nmaster_process off;\npid ${dir}/nginx.pid;\nerror_log ${dir}/error.log;\nevents {}\nhttp {\n  access_log off;\n`
      + ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((d) => `  ${d}_temp_path ${dir}/${d};\n`).join('')
      + `  include ${join(dir, 'upstream.conf')};\n}\n`);
    const proc = spawn(NGINX, ['-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    proc.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
    const exited = new Promise<void>((r) => proc.once('exit', () => r()));
    const b: Balancer = {
      url: `http://${host}:${port}`,
      async stop() {
        if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
        await exited;
      },
    };
    this.balancers.push(b);
    for (let i = 0; ; i++) {
      if (proc.exitCode !== null) throw new Error(`nginx exited: ${stderr}`);
      try { await httpGet(`${b.url}/health`, 1_000); return b; } catch { /* not listening yet */ }
      if (i > 100) throw new Error(`nginx did not start: ${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Runs one client (test/support/burst-client.ts) inside `h`'s namespace, so its requests come from h's address. */
  client(h: Host, plan: Plan): Promise<Outcome> {
    const [cmd, ...pre] = this.net.exec(h);
    return new Promise((done, fail) => {
      execFile(cmd, [...pre, process.execPath, join(__dirname, 'burst-client.js'), JSON.stringify(plan)], { timeout: 120_000 }, (err, stdout, stderr) => {
        if (err) fail(new Error(`client in ${h.name}: ${err.message} ${stderr}`));
        else done(JSON.parse(stdout) as Outcome);
      });
    });
  }

  async stop(): Promise<void> {
    await Promise.all(this.replicas.map((r) => r.proc?.stop('SIGKILL')));
    await Promise.all(this.balancers.splice(0).map((b) => b.stop()));
    await this.stopHaproxy();
    await this.originHttp?.stop();
    this.net.destroy();
    rmSync(this.tmp, { recursive: true, force: true });
  }
}

export interface LoadReport { ok: number; failures: { at: number; path: string; error: string }[]; heights: Map<number, number> }

/**
 * `concurrency` loops of keep-alive GETs through `url` until stop(): every answer that is not
 * 200 (or no answer) is a failure. /status answers also count which heights were served.
 */
export function clientLoad(url: string, concurrency: number, paths: string[]): { stop(): Promise<LoadReport> } {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const report: LoadReport = { ok: 0, failures: [], heights: new Map() };
  let running = true;
  let n = 0;
  const loop = async (): Promise<void> => {
    while (running) {
      const path = paths[n++ % paths.length];
      try {
        const r = await httpGet(url + path, 10_000, agent);
        if (r.status !== 200) report.failures.push({ at: Date.now(), path, error: `HTTP ${r.status} ${r.body.slice(0, 200)}` });
        else {
          report.ok++;
          if (path === '/status') {
            const h = (JSON.parse(r.body) as { height: number }).height;
            report.heights.set(h, (report.heights.get(h) ?? 0) + 1);
          }
        }
      } catch (e) {
        report.failures.push({ at: Date.now(), path, error: (e as Error).message });
      }
    }
  };
  const loops = Array.from({ length: concurrency }, loop);
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      agent.destroy();
      return report;
    },
  };
}

/** Polls every replica's /ready every `everyMs` and keeps what it saw, with the time. */
export function monitorReplicas(lab: ScaleLab, everyMs: number): { samples: { at: number; replica: number; ready: Ready }[]; stop(): void } {
  const samples: { at: number; replica: number; ready: Ready }[] = [];
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    void Promise.all(lab.replicas.map(async (_r, i) => samples.push({ at: Date.now(), replica: i, ready: await lab.ready(i) })))
      .finally(() => { busy = false; });
  }, everyMs);
  return { samples, stop: () => clearInterval(timer) };
}

/** Resolves with the ms from `since` until every replica's /ready reports `height`; rejects after `timeoutMs`. */
export async function converged(lab: ScaleLab, height: number, since: number, timeoutMs: number): Promise<number> {
  for (;;) {
    const all = await Promise.all(lab.replicas.map((_r, i) => lab.ready(i)));
    if (all.every((r) => r.status === 200 && r.height === height)) return Date.now() - since;
    if (Date.now() - since > timeoutMs) {
      throw new Error(`replicas did not all reach height ${height} within ${timeoutMs} ms: ${JSON.stringify(all)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
