/**
 * A throwaway nginx serving a directory as static files (the `publish` origin): one process
 * (master_process off, daemon off), its config, logs and temp dirs in a fresh temp directory,
 * optionally inside a network namespace (`ip netns exec NAME nginx …`). Access log lines are
 * `status bytes_sent "request" "range"` so tests can count bytes and see Range requests.
 */
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => existsSync(p));

export interface Nginx {
  url: string;
  /** parsed access log lines so far */
  access(): { status: number; bytes: number; request: string; range: string }[];
  stop(): Promise<void>;
}

/** Writes an nginx.conf serving `root` on host:port; returns the config path. */
export function originConfig(dir: string, root: string, host: string, port: number): string {
  for (const d of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, d), { recursive: true });
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, `daemon off;
master_process off;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
events { worker_connections 256; }
http {
  log_format origin '$status $body_bytes_sent "$request" "$http_range"';
  access_log ${join(dir, 'access.log')} origin;
  client_body_temp_path ${join(dir, 'client_body')};
  proxy_temp_path ${join(dir, 'proxy')};
  fastcgi_temp_path ${join(dir, 'fastcgi')};
  uwsgi_temp_path ${join(dir, 'uwsgi')};
  scgi_temp_path ${join(dir, 'scgi')};
  types { application/json json; }
  default_type application/octet-stream;
  server {
    listen ${host}:${port};
    root ${root};
    location = /manifest.json { add_header Cache-Control no-cache; }
  }
}
`);
  return conf;
}

export async function startNginx(root: string, host: string, port: number, netns?: string): Promise<Nginx> {
  if (!NGINX) throw new Error('nginx is not installed (apt-get install nginx)');
  const dir = mkdtempSync(join(tmpdir(), 'indexer-api-nginx-'));
  const conf = originConfig(dir, root, host, port);
  const cmd = netns ? ['ip', 'netns', 'exec', netns, NGINX] : [NGINX];
  const t = spawnSync(cmd[0], [...cmd.slice(1), '-t', '-c', conf, '-e', join(dir, 'error.log')], { encoding: 'utf8' });
  if (t.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`nginx -t: ${t.stderr}`);
  }
  const proc: ChildProcess = spawn(cmd[0], [...cmd.slice(1), '-c', conf, '-e', join(dir, 'error.log')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
  const url = `http://${host}:${port}`;
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  for (let i = 0; ; i++) {
    if (proc.exitCode !== null) throw new Error(`nginx exited: ${stderr} ${readFileSync(join(dir, 'error.log'), 'utf8')}`);
    if (existsSync(join(dir, 'nginx.pid'))) break;
    if (i > 200) throw new Error('nginx did not start');
    await new Promise((r) => setTimeout(r, 25));
  }
  return {
    url,
    access() {
      const log = existsSync(join(dir, 'access.log')) ? readFileSync(join(dir, 'access.log'), 'utf8') : '';
      return log.split('\n').filter(Boolean).map((l) => {
        const m = /^(\d+) (\d+) "([^"]*)" "([^"]*)"$/.exec(l);
        return m ? { status: Number(m[1]), bytes: Number(m[2]), request: m[3], range: m[4] === '-' ? '' : m[4] } : { status: 0, bytes: 0, request: l, range: '' };
      });
    },
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      const t2 = setTimeout(() => proc.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(t2);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
