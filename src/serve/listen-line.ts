import cluster from 'node:cluster';

/**
 * `serve --port 0`: the kernel picks a free port, and the FIRST line of stdout says which —
 * `listening http://127.0.0.1:PORT` — so a shell script can read it (`head -n1`) before the
 * JSON log lines that follow. Log lines written before the server listens are held back until
 * that line is out. In a cluster the primary prints it when the first worker listens (all
 * workers share the one port) and then tells every worker, present and future, to let its
 * held lines through (docs/ci.md).
 */

const OPEN = 'indexer-api:stdout-open';

export interface StdoutGate {
  /** what the logger writes through */
  write(text: string): void;
  /** prints `listening URL` (unless undefined: a cluster worker, whose primary prints it) and releases held lines */
  open(url: string | undefined): void;
}

/**
 * Writes to stdout until its reader goes away: `serve --port 0 | head -n1` reads the line and
 * closes the pipe, and a server whose log reader left keeps serving (its logs are dropped).
 */
function stdoutWriter(): (text: string) => void {
  let gone = false;
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE') throw e;
    gone = true;
  });
  return (t) => {
    if (!gone) process.stdout.write(t);
  };
}

export function stdoutGate(write: (text: string) => void = stdoutWriter()): StdoutGate {
  let held: string[] | undefined = [];
  // never listened (e.g. every cluster worker failed to start): the held lines still go out
  process.once('exit', () => {
    if (held?.length) write(held.join(''));
    held = undefined;
  });
  return {
    write(text) {
      if (held) held.push(text);
      else write(text);
    },
    open(url) {
      if (!held) return;
      const lines = held;
      held = undefined;
      write((url === undefined ? '' : `listening ${url}\n`) + lines.join(''));
    },
  };
}

/** Primary of `--port 0 --workers N`: the line (ending with --base-url, as a single process's) once the first worker listens, then every worker may log. */
export function announceFromPrimary(gate: StdoutGate, baseUrl = ''): void {
  let url: string | undefined;
  const release = (w: { send(m: unknown): boolean; isConnected(): boolean }): void => {
    if (w.isConnected()) w.send(OPEN);
  };
  cluster.on('listening', (_w, addr) => {
    if (url !== undefined) return;
    const host = addr.addressType === 6 || String(addr.address).includes(':') ? `[${addr.address}]` : addr.address;
    url = `http://${host}:${addr.port}${baseUrl}`;
    gate.open(url);
    for (const w of Object.values(cluster.workers ?? {})) if (w) release(w);
  });
  // a worker restarted after a crash holds its lines until told, like the first ones
  cluster.on('listening', (w) => {
    if (url !== undefined) release(w);
  });
}

/** Worker of `--port 0 --workers N`: held lines go out once the primary printed the line. */
export function awaitPrimaryAnnouncement(gate: StdoutGate): void {
  const onMessage = (m: unknown): void => {
    if (m !== OPEN) return;
    process.off('message', onMessage);
    gate.open(undefined);
  };
  process.on('message', onMessage);
}
