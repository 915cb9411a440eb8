import { fsReason } from '../lib/paths';
import cluster from 'node:cluster';
import { readFileSync, readdirSync } from 'node:fs';
import { createServer, IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { defaultServeSettings } from '../settings/serve';
import { answerWhatNodeWould, Limits, NODE_SERVER_OPTIONS, nodeHeaderLimit, requestTimedOut, withHeaderLimit, withHostRequired } from '../http/limits';

export interface RunningServer {
  server: Server;
  url: string;
  /**
   * Stop accepting (after DRAIN_GRACE_MS, which empties the accept queue), answer every request
   * already sent (bytes still in the kernel's buffers are waited for, DRAIN_GRACE_MS) and let
   * in-flight ones finish; connections with nothing to answer are
   * closed. After `forceAfterMs` the listener closes and the remaining connections are cut;
   * resolves true if everything finished in time, false if requests were cut.
   * `quick` (the library's close(), src/index.ts: a test closes its server after its requests
   * were answered): no grace — idle connections close and the listener stops at the first check.
   */
  close(forceAfterMs?: number, quick?: boolean): Promise<boolean>;
}

export interface ServerEvents {
  /** sockets closed to stay under the file-descriptor limit (at most one call a second) */
  shed?(info: { closed: number; open: number; limit: number }): void;
}

/**
 * After SIGTERM, how long a connection that has sent nothing new may still deliver a request
 * (already sent, still in the kernel's buffers) before it is treated as idle and closed.
 */
export const DRAIN_GRACE_MS = 250;
/**
 * After SIGTERM, how long without a new request before the listener closes: in a cluster
 * the primary hands connections over one at a time, each waiting for the previous one's
 * acknowledgement, so on a loaded machine they arrive further apart than the kernel's.
 */
const ACCEPT_QUIET_MS = cluster.isWorker ? 1_000 : DRAIN_GRACE_MS;
/** File descriptors kept free beside the sockets: the snapshot, its quick check, logs, the accept itself. */
const FD_RESERVE = 32;

interface Conn {
  /** requests started and not yet answered (their response's 'close' not yet emitted) */
  inFlight: number;
  /** requests started on this connection */
  requests: number;
  /** when the connection began waiting for its next request (connect, or last response out) */
  idleSince: number;
  /** socket.bytesRead then: more means a request is arriving */
  bytesAtIdle: number;
}

/** The soft RLIMIT_NOFILE and the descriptors already open (Linux /proc); undefined elsewhere. */
export function fdBudget(): { limit: number; open: number } | undefined {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (!m || m[1] === 'unlimited') return undefined;
    return { limit: Number(m[1]), open: readdirSync('/proc/self/fd').length };
  } catch {
    return undefined;
  }
}

/**
 * Why host:port cannot be listened on, in words, naming the setting at fault: `names` are how
 * the caller calls host and port (`--host` / `--port` on the command line).
 */
export function listenErrorText(e: NodeJS.ErrnoException, host: string, port: number, names = { host: 'host', port: 'port' }): string {
  switch (e.code) {
    case 'EADDRINUSE':
      return `${names.port} ${port}: address ${host}:${port} is already in use`;
    case 'EACCES':
      return `${names.port} ${port}: not allowed to listen on ${host}:${port} (a port below 1024 needs privileges)`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EADDRNOTAVAIL':
      return `${names.host} ${host}: not an address of this machine (127.0.0.1 for this machine only, 0.0.0.0 for every interface)`;
    default:
      return `cannot listen on ${host}:${port} (${names.host}, ${names.port}): ${fsReason(e)}`;
  }
}

/** listen() could not listen: `error` is the system's, the message names host and port. */
export class ListenError extends Error {
  constructor(
    readonly error: NodeJS.ErrnoException,
    readonly host: string,
    readonly port: number,
  ) {
    super(listenErrorText(error, host, port));
  }

  /** the system's code (EADDRINUSE …), as on the error it wraps */
  get code(): string | undefined {
    return this.error.code;
  }
}

/**
 * Node's HTTP server with every socket bounded in time and number (docs/reliability.md):
 * Node enforces the header, request and keep-alive timeouts once a request has begun; a
 * connection that sends nothing at all is closed here after the header timeout; and near the
 * file-descriptor limit the oldest idle connections are closed so new ones can still be
 * accepted (at the limit itself the kernel's connection would be reset unanswered).
 */
export function listen(
  app: RequestListener,
  host: string,
  port: number,
  limits: Limits = defaultServeSettings().limits,
  events: ServerEvents = {},
): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    const headersTimeout = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs);
    const checkEvery = Math.max(100, Math.min(1_000, Math.floor(headersTimeout / 4)));
    const server = createServer({
      // answers Node would write with an empty body are ours, in the JSON error shape (answerWhatNodeWould)
      ...NODE_SERVER_OPTIONS,
      // Node's head limit, with room for the target as well (withHeaderLimit applies ours to the rest)
      ...nodeHeaderLimit(limits),
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout,
      // Node checks the two timeouts on this interval (default 30 s, too coarse for them).
      connectionsCheckingInterval: checkEvery,
    });
    server.keepAliveTimeout = limits.keepAliveTimeoutMs;
    answerWhatNodeWould(server, limits);

    // Open connections, oldest first. Node's own closeIdleConnections (which server.close()
    // calls) destroys a connection whose response has called end() but is still being written,
    // and one whose request has arrived but not started: "idle" is decided here instead, from
    // the response's 'close' (its last byte is out) and the bytes read since.
    const conns = new Map<Socket, Conn>();
    let closing = false;
    let closed: Promise<boolean> | undefined;
    const budget = fdBudget();
    const maxSockets = budget ? Math.max(16, budget.limit - budget.open - FD_RESERVE) : Infinity;
    let shedCount = 0;
    let shedReported = 0;

    const idle = (socket: Socket, c: Conn): boolean => c.inFlight === 0 && socket.bytesRead === c.bytesAtIdle;
    const shed = (): void => {
      let excess = conns.size - maxSockets;
      for (const [socket, c] of conns) {
        if (excess <= 0) break;
        if (c.inFlight === 0) {
          socket.destroy();
          conns.delete(socket);
          excess--;
          shedCount++;
        }
      }
      const now = Date.now();
      if (shedCount > 0 && now - shedReported >= 1_000) {
        events.shed?.({ closed: shedCount, open: conns.size, limit: budget?.limit ?? 0 });
        shedCount = 0;
        shedReported = now;
      }
    };

    server.on('connection', (socket: Socket) => {
      conns.set(socket, { inFlight: 0, requests: 0, idleSince: Date.now(), bytesAtIdle: 0 });
      socket.once('close', () => conns.delete(socket));
      if (conns.size > maxSockets) shed();
    });
    let requestsSeen = 0;
    // one listener shared by every response (no closure per request): a response's 'close' fires once
    function responseClosed(this: ServerResponse): void {
      const socket = this.req.socket;
      const c = conns.get(socket);
      if (!c) return;
      c.inFlight--;
      if (c.inFlight > 0) return;
      c.idleSince = Date.now();
      c.bytesAtIdle = socket.bytesRead;
      if (closing) socket.destroy();
    }
    // Node's header limit counts the target too (nodeHeaderLimit): --max-header-size is applied here to the rest
    const serveApp = withHostRequired(withHeaderLimit(limits, app));
    // one 'request' listener: with two, Node copies its listener array on every request
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      requestsSeen++;
      const c = conns.get(req.socket);
      if (c) {
        c.inFlight++;
        c.requests++;
        res.on('close', responseClosed);
      }
      serveApp(req, res);
    });
    server.closeIdleConnections = (): void => {
      // while closing, the drain check below decides (after its grace)
      if (closing) return;
      for (const [socket, c] of conns) if (idle(socket, c)) socket.destroy();
    };

    // A connection that never sent a byte is not in Node's header-timeout check (it starts at
    // the first byte): closed here, with the same 408, once the header timeout has passed.
    const sweep = setInterval(() => {
      const now = Date.now();
      for (const [socket, c] of conns) {
        if (c.requests === 0 && c.inFlight === 0 && socket.bytesRead === 0 && now - c.idleSince >= headersTimeout) {
          requestTimedOut(socket);
        }
      }
    }, checkEvery);
    sweep.unref();
    server.once('close', () => clearInterval(sweep));

    const refuse = (e: NodeJS.ErrnoException): void => reject(new ListenError(e, host, port));
    server.once('error', refuse);
    server.listen(port, host, () => {
      server.off('error', refuse);
      const addr = server.address() as AddressInfo;
      const h = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      resolve({
        server,
        url: `http://${h}:${addr.port}`,
        close: (forceAfterMs: number, quick = false) =>
          (closed ??= new Promise<boolean>((done) => {
            const graceMs = quick ? 0 : DRAIN_GRACE_MS;
            const acceptQuietMsNeeded = quick ? 0 : ACCEPT_QUIET_MS;
            closing = true;
            let listening = true;
            // Past the timeout the listener closes too: an open listener would keep the process
            // alive (and answering /ready 503) after everything else has stopped.
            const force = setTimeout(() => {
              clearInterval(drainCheck);
              if (listening) {
                listening = false;
                server.close();
              }
              for (const socket of conns.keys()) socket.destroy();
              server.closeAllConnections();
              done(false);
            }, forceAfterMs);
            // Requests already sent may still be in the kernel's buffers: connections are closed
            // as idle only once they have delivered nothing new for DRAIN_GRACE_MS.
            // Both decisions below are taken in setImmediate, i.e. after the event loop's poll phase:
            // a timer can fire after the loop was busy for longer than the grace, before the poll
            // phase has read the bytes and accepted the connections the kernel got meanwhile.
            const quietSince = new Map<Socket, number>();
            // time without a new request, counted only while this process could run (a tick adds
            // at most 100 ms: a starved process does not see its accept queue as quiet); a bare
            // connect (a TCP health check) is not a request
            let acceptQuietMs = 0;
            let seen = requestsSeen;
            let lastTick = Date.now();
            const drainCheck = setInterval(
              () =>
                setImmediate(() => {
                  const now = Date.now();
                  acceptQuietMs = seen === requestsSeen ? acceptQuietMs + Math.min(now - lastTick, 100) : 0;
                  seen = requestsSeen;
                  lastTick = now;
                  for (const [socket, c] of conns) {
                    if (!idle(socket, c)) {
                      quietSince.delete(socket);
                      continue;
                    }
                    const since = quietSince.get(socket) ?? now;
                    quietSince.set(socket, since);
                    if (now - since >= graceMs) socket.destroy();
                  }
                  // Stops listening once no request has come for ACCEPT_QUIET_MS: a connection the kernel has
                  // accepted but Node not yet (the accept queue), or that a cluster's primary has yet to
                  // hand over, was sent before the signal, and closing the listener would reset it.
                  // Connections close through the check above.
                  if (listening && acceptQuietMs >= acceptQuietMsNeeded) {
                    listening = false;
                    server.close(() => {
                      clearTimeout(force);
                      clearInterval(drainCheck);
                      done(true);
                    });
                  }
                }),
              50,
            );
          })),
      });
    });
  });
}
