/**
 * One client of the rate-limit scale test, run inside a client's network namespace (so its
 * requests come from that host's address): `node burst-client.js '<json Plan>'`. Sends `count`
 * GETs to `url`, `concurrency` at a time, each loop pausing `pauseMs` between requests, with the
 * i-th request carrying `forwardedFor[i % n]` as X-Forwarded-For when given. Prints one JSON
 * Outcome on stdout: every status in order, and the first refused answer's headers and body.
 */
import { Agent, request } from 'node:http';

export interface Plan { url: string; count: number; concurrency: number; pauseMs: number; forwardedFor?: string[] }
export interface Refusal { status: number; headers: Record<string, string | string[] | undefined>; body: string }
export interface Outcome { statuses: number[]; errors: string[]; firstRefusal?: Refusal }

function get(url: string, agent: Agent, headers: Record<string, string>): Promise<Refusal> {
  return new Promise((done, fail) => {
    const req = request(url, { agent, headers, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (s: string) => { body += s; });
      res.on('end', () => done({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('error', fail);
    });
    req.on('timeout', () => req.destroy(new Error('timeout after 10 s')));
    req.on('error', fail);
    req.end();
  });
}

export async function run(plan: Plan): Promise<Outcome> {
  const agent = new Agent({ keepAlive: true, maxSockets: plan.concurrency });
  const out: Outcome = { statuses: new Array<number>(plan.count).fill(0), errors: [] };
  let next = 0;
  const loop = async (): Promise<void> => {
    for (let i = next++; i < plan.count; i = next++) {
      const xff = plan.forwardedFor?.[i % plan.forwardedFor.length];
      try {
        const r = await get(plan.url, agent, xff ? { 'X-Forwarded-For': xff } : {});
        out.statuses[i] = r.status;
        if (r.status !== 200 && !out.firstRefusal) out.firstRefusal = r;
      } catch (e) {
        out.errors.push((e as Error).message);
      }
      if (plan.pauseMs) await new Promise((r) => setTimeout(r, plan.pauseMs));
    }
  };
  await Promise.all(Array.from({ length: plan.concurrency }, loop));
  agent.destroy();
  return out;
}

if (require.main === module) {
  run(JSON.parse(process.argv[2]) as Plan).then(
    (o) => { process.stdout.write(`${JSON.stringify(o)}\n`); },
    (e: unknown) => { process.stderr.write(`${String(e)}\n`); process.exitCode = 1; },
  );
}
