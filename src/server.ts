import { createServer, IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { DEFAULT_LIMITS, Limits, onClientError } from './http/limits';

export interface RunningServer {
  server: Server;
  url: string;
  /**
   * Stop accepting, let in-flight requests finish (idle keep-alive connections are closed at
   * once, busy ones after their response), then resolve. After `forceAfterMs` the remaining
   * connections are cut; resolves true if everything finished in time.
   */
  close(forceAfterMs?: number): Promise<boolean>;
}

export function startServer(app: RequestListener, host: string, port: number, limits: Limits = DEFAULT_LIMITS): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    const headersTimeout = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs);
    const server = createServer({
      maxHeaderSize: limits.maxHeaderSize,
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout,
      // Node checks the two timeouts on this interval (default 30 s, too coarse for them).
      connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(headersTimeout / 4))),
    });
    server.keepAliveTimeout = limits.keepAliveTimeoutMs;
    server.on('clientError', onClientError);

    // Open connections → responses not yet handed to the OS. Node's own closeIdleConnections
    // (which server.close() calls) also destroys a connection whose response has called end()
    // but is still being written — a large page to a slow client would be cut short — so
    // "idle" is decided here, from the response's 'close' (emitted once its last byte is out).
    const inFlight = new Map<Socket, number>();
    let closing = false;
    let closed: Promise<boolean> | undefined;
    server.on('connection', (socket: Socket) => {
      inFlight.set(socket, 0);
      socket.once('close', () => inFlight.delete(socket));
    });
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      const socket = req.socket;
      inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1);
      res.once('close', () => {
        const n = (inFlight.get(socket) ?? 1) - 1;
        if (!inFlight.has(socket)) return;
        inFlight.set(socket, n);
        if (closing && n === 0) socket.destroy();
      });
    });
    server.on('request', app);
    server.closeIdleConnections = (): void => {
      for (const [socket, n] of inFlight) if (n === 0) socket.destroy();
    };
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const addr = server.address() as AddressInfo;
      const h = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      resolve({
        server,
        url: `http://${h}:${addr.port}`,
        close: (forceAfterMs = 10_000) => closed ??= new Promise<boolean>((done) => {
          closing = true;
          const force = setTimeout(() => { server.closeAllConnections(); done(false); }, forceAfterMs);
          // stops listening and closes the idle connections (ours, above); busy ones close
          // once their response is out
          server.close(() => { clearTimeout(force); done(true); });
        }),
      });
    });
  });
}
