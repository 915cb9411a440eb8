/**
 * Several "machines" on one host, for the scale-out test and bench: network namespaces on one
 * bridge (`ip netns`, needs root and iproute2). Each namespace gets eth0 with 10.A.B.<n>/24 on a
 * bridge that lives in its own hub namespace; the host (the test process, HAProxy) reaches them
 * through one more veth with 10.A.B.1. Names are unique per run (prefix from pid + random) so
 * parallel runs do not collide; `destroy()` deletes every namespace and link it made.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';

export const IP = ['/usr/sbin/ip', '/sbin/ip', '/usr/bin/ip', '/bin/ip'].find((p) => existsSync(p));

/** Why netns tests cannot run here, or undefined when they can. */
export function netnsUnavailable(): string | undefined {
  if (!IP) return 'iproute2 (ip) is not installed';
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  const probe = `iaprobe${randomBytes(3).toString('hex')}`;
  const r = spawnSync(IP, ['netns', 'add', probe], { encoding: 'utf8' });
  if (r.status !== 0) return `ip netns add failed: ${r.stderr.trim()}`;
  spawnSync(IP, ['netns', 'del', probe]);
  return undefined;
}

function ip(...args: string[]): void {
  execFileSync(IP ?? 'ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

export interface Host { name: string; netns: string; addr: string; eth: string }

export class NetnsLab {
  readonly prefix = `ia${randomBytes(3).toString('hex')}`;
  /** 10.A.B.0/24 with random A (100–199) and B */
  readonly subnet = `10.${100 + (randomBytes(1)[0] % 100)}.${randomBytes(1)[0]}`;
  readonly hostAddr = `${this.subnet}.1`;
  private readonly namespaces: string[] = [];
  private readonly rootLinks: string[] = [];
  private readonly hub = `${this.prefix}-hub`;
  private hosts = 0;

  constructor() {
    this.addNamespace(this.hub);
    ip('netns', 'exec', this.hub, 'ip', 'link', 'add', 'br0', 'type', 'bridge');
    ip('netns', 'exec', this.hub, 'ip', 'link', 'set', 'br0', 'up');
    // The host's own leg: <prefix>h (root) ↔ <prefix>H (hub, on the bridge).
    const h = `${this.prefix}h`;
    ip('link', 'add', h, 'type', 'veth', 'peer', 'name', `${this.prefix}H`, 'netns', this.hub);
    this.rootLinks.push(h);
    ip('netns', 'exec', this.hub, 'ip', 'link', 'set', `${this.prefix}H`, 'master', 'br0', 'up');
    ip('addr', 'add', `${this.hostAddr}/24`, 'dev', h);
    ip('link', 'set', h, 'up');
  }

  private addNamespace(name: string): void {
    ip('netns', 'add', name);
    this.namespaces.push(name);
    ip('netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up');
  }

  /** A namespace with eth0 on the bridge at 10.A.B.(10 + n). */
  addHost(name: string): Host {
    const n = ++this.hosts;
    const netns = `${this.prefix}-${name}`;
    this.addNamespace(netns);
    const a = `${this.prefix}${n}a`;
    const b = `${this.prefix}${n}b`;
    ip('link', 'add', a, 'type', 'veth', 'peer', 'name', b, 'netns', this.hub);
    ip('link', 'set', a, 'netns', netns);
    ip('netns', 'exec', netns, 'ip', 'link', 'set', a, 'name', 'eth0');
    ip('netns', 'exec', this.hub, 'ip', 'link', 'set', b, 'master', 'br0', 'up');
    const addr = `${this.subnet}.${10 + n}`;
    ip('netns', 'exec', netns, 'ip', 'addr', 'add', `${addr}/24`, 'dev', 'eth0');
    ip('netns', 'exec', netns, 'ip', 'link', 'set', 'eth0', 'up');
    return { name, netns, addr, eth: 'eth0' };
  }

  /** Cuts a host off the network (its link down) or puts it back. */
  setLink(h: Host, up: boolean): void {
    ip('netns', 'exec', h.netns, 'ip', 'link', 'set', h.eth, up ? 'up' : 'down');
  }

  /** The command prefix that runs a program inside a host's namespace. */
  exec(h: Host): string[] {
    return [IP ?? 'ip', 'netns', 'exec', h.netns];
  }

  destroy(): void {
    for (const l of this.rootLinks.splice(0)) spawnSync(IP ?? 'ip', ['link', 'del', l]);
    for (const ns of this.namespaces.splice(0).reverse()) spawnSync(IP ?? 'ip', ['netns', 'del', ns]);
  }
}
