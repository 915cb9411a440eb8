/**
 * A GET that sends the request target exactly as given (supertest / WHATWG URL would re-encode
 * it), with a hard deadline. Characters Node refuses in a request line are percent-encoded; every
 * other byte — `%` escapes, malformed or not, `?`, `&`, `+`, `/` — goes out as written.
 */
import { Agent, request } from 'node:http';
import { atRunEnd } from './run-end';

export interface RawResponse { status: number; headers: Record<string, string | string[] | undefined>; body: string; ms: number }

const agent = new Agent({ keepAlive: true, maxSockets: 4 });

/** Percent-encodes what cannot appear raw in an HTTP request line (and `#`, which ends a URL). */
export function requestSafe(target: string): string {
  let out = '';
  for (const ch of target) {
    const c = ch.codePointAt(0) as number;
    if (c > 0x20 && c < 0x7f && ch !== '#') out += ch;
    else if (c >= 0xd800 && c <= 0xdfff) out += '%EF%BF%BD'; // a lone surrogate has no UTF-8 form
    else out += encodeURIComponent(ch);
  }
  return out;
}

export function rawGet(baseUrl: string, target: string, timeoutMs = 5000, method = 'GET'): Promise<RawResponse> {
  const url = new URL(baseUrl);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: requestSafe(target), method, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({
        status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8'), ms: Date.now() - started,
      }));
      res.on('error', reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms: ${method} ${target.slice(0, 200)}`)));
    req.on('error', reject);
    req.end();
  });
}

// its kept-alive sockets would hold the process open after the run (test/support/run-end.ts)
atRunEnd(() => agent.destroy());
