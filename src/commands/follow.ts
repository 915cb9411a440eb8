import { existsSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import type { CommandModule } from 'yargs';
import { VM_TYPES, VmType } from '../import/from-dump';
import { openSnapshot } from '../snapshot/open';
import { Follower, followMetricsText, SourceWentBackwards, StopFlag, useWal } from '../follow/follower';
import { openFollowSource } from '../follow/source';
import { cleanStaleTemps, runImport } from './import';
import { HTTP_CLIENT_DEFAULTS } from '../lib/defaults';
import { checked, choice, decimal, int } from './numbers';

export interface FollowOptions {
  db: string;
  fromApi?: string;
  fromPostgres?: string;
  /** poll interval: `2s`, `500ms`, or a number of seconds */
  interval: string;
  batchBlocks: number;
  metricsPort?: number;
  metricsHost: string;
  maxBackoff: string;
  vmType?: VmType;
  chainId?: string;
  bech32Prefix?: string;
  denoms?: string[];
  validators?: string;
  restUrl?: string;
  denomContracts?: string;
  statusVersion?: string;
  statusCommit?: string;
  concurrency?: number;
  rate?: number;
  timeout?: number;
  quiet: boolean;
}

/** `2s`, `250ms`, `1.5` (seconds) → ms; the message names the option and the value. */
export function parseDuration(name: string, text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(String(text).trim());
  if (!m) throw new Error(`${name} must be a duration like 2s, 500ms or 1m, got ${JSON.stringify(text)}`);
  const n = Number(m[1]);
  return Math.round(m[2] === 'ms' ? n : m[2] === 'm' ? n * 60_000 : n * 1000);
}

function listen(port: number, host: string, body: () => string): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.url !== '/metrics') { res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n'); return; }
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' }).end(body());
  });
  return new Promise((resolve, reject) => {
    server.once('error', (e) => reject(new Error(`--metrics-port ${port}: ${e.message}`)));
    server.listen(port, host, () => resolve(server));
  });
}

/**
 * Follows the source into --db until SIGINT/SIGTERM (exit 0) or a source that went backwards
 * (exit 1). A missing --db is first built by an ordinary import.
 */
export async function runFollow(o: FollowOptions): Promise<number> {
  const log = (line: string): void => { if (!o.quiet || !line.startsWith('follow: heights')) process.stderr.write(`indexer-api ${line}\n`); };
  const intervalMs = parseDuration('--interval', o.interval);
  const maxBackoffMs = parseDuration('--max-backoff', o.maxBackoff);
  if (!Number.isSafeInteger(o.batchBlocks) || o.batchBlocks < 1) throw new Error(`--batch-blocks must be a whole number ≥ 1, got ${o.batchBlocks}`);
  const stop = new StopFlag();
  const onSignal = (): void => stop.stop();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  let metrics: Server | undefined;
  let follower: Follower | undefined;
  try {
    cleanStaleTemps(o.db);
    if (!existsSync(o.db)) {
      log(`follow: ${o.db} does not exist; importing from the source first`);
      const r = await runImport({
        out: o.db, fromApi: o.fromApi, fromPostgres: o.fromPostgres, force: false, quiet: o.quiet, json: false,
        vmType: o.vmType, chainId: o.chainId, bech32Prefix: o.bech32Prefix, denoms: o.denoms, validators: o.validators,
        restUrl: o.restUrl, denomContracts: o.denomContracts, statusVersion: o.statusVersion, statusCommit: o.statusCommit,
        concurrency: o.concurrency, rate: o.rate, timeout: o.timeout, signalExitCode: 0,
      });
      log(`follow: imported ${r.out} in ${r.seconds.toFixed(1)} s`);
    }
    if (stop.stopped) return 0;
    useWal(o.db);
    const snap = openSnapshot(o.db);
    const { vmType, prefix } = snap.meta;
    snap.close();
    if (o.vmType !== undefined && o.vmType !== vmType) throw new Error(`--vm-type ${o.vmType} but ${o.db} is a ${vmType} snapshot`);
    if (o.bech32Prefix !== undefined && o.bech32Prefix !== prefix) throw new Error(`--bech32-prefix ${o.bech32Prefix} but ${o.db} uses ${prefix}`);
    const source = openFollowSource({
      fromApi: o.fromApi, fromPostgres: o.fromPostgres, vmType, prefix, chainId: o.chainId, denoms: o.denoms ?? [],
      validators: o.validators, restUrl: o.restUrl, denomContracts: o.denomContracts, statusVersion: o.statusVersion,
      statusCommit: o.statusCommit, concurrency: o.concurrency, rate: o.rate, timeout: o.timeout, db: o.db,
    });
    follower = new Follower({ db: o.db, source, intervalMs, batchBlocks: o.batchBlocks, maxBackoffMs, log });
    const f = follower;
    if (o.metricsPort !== undefined) {
      metrics = await listen(o.metricsPort, o.metricsHost, () => followMetricsText(f.state));
      const a = metrics.address();
      log(`follow: metrics on http://${o.metricsHost}:${typeof a === 'object' && a ? a.port : o.metricsPort}/metrics`);
    }
    log(`follow: following ${source.describe} into ${o.db} from height ${f.state.height} every ${intervalMs} ms`);
    try {
      await f.run(stop);
    } finally {
      await source.close();
    }
    log(`follow: stopped at height ${f.state.height}`);
    return 0;
  } catch (e) {
    if (e instanceof SourceWentBackwards) {
      process.stderr.write(`indexer-api follow: ${e.message}\n`);
      return 1;
    }
    throw e;
  } finally {
    follower?.close();
    metrics?.close();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

export const followCommand: CommandModule<object, FollowOptions> = {
  command: 'follow',
  describe: 'Keep a snapshot current: import it if missing, then poll a PostgreSQL database or an API and append new heights in place',
  builder: (y) => y
    .option('db', { type: 'string', demandOption: true, describe: 'Snapshot file to keep current (created by an import from the source if missing); serve it with `serve --db` at the same time' })
    .option('from-api', { type: 'string', describe: 'Base URL of a running rollytics-compatible API (rollytics or indexer-api)' })
    .option('from-postgres', { type: 'string', describe: 'rollytics PostgreSQL DSN (postgres://user:pass@host:5432/db)' })
    .option('interval', { type: 'string', default: '2s', describe: 'Poll interval when caught up (2s, 500ms, 1m)' })
    .option('batch-blocks', checked('batch-blocks', int({ min: 1 }, { default: 2000, describe: 'At most this many heights per batch (one write transaction; catching up takes several)' })))
    .option('metrics-port', checked('metrics-port', int({ min: 0, max: 65535 }, { describe: 'Serve Prometheus metrics (source height, our height, lag in blocks and seconds) on this port (0: any free port)' })))
    .option('metrics-host', { type: 'string', default: '127.0.0.1', describe: 'Address of --metrics-port' })
    .option('max-backoff', { type: 'string', default: '60s', describe: 'Longest wait between retries while the source fails (the wait doubles from --interval)' })
    .option('vm-type', choice({ choices: VM_TYPES, describe: 'The rollup VM (needed for the first import from PostgreSQL; afterwards read from --db)' }))
    .option('chain-id', { type: 'string', describe: '--from-postgres: chain id (default: the only one in table block)' })
    .option('bech32-prefix', { type: 'string', describe: 'Account bech32 prefix for the first import (default init; afterwards read from --db)' })
    .option('denoms', { type: 'string', array: true, describe: '--from-api: rich-list denoms to follow (repeat or comma-separate)' })
    .option('validators', { type: 'string', describe: 'NDJSON file in validators.ndjson format: proposer monikers' })
    .option('rest-url', { type: 'string', describe: '--from-postgres: chain node REST URL for proposer monikers' })
    .option('denom-contracts', { type: 'string', describe: 'EVM: NDJSON file in denom_contracts.ndjson format' })
    .option('status-version', { type: 'string', describe: '--from-postgres: version /status reports (default dev)' })
    .option('status-commit', { type: 'string', describe: '--from-postgres: commit_hash /status reports (default unknown)' })
    .option('concurrency', checked('concurrency', int({ min: 1 }, { default: HTTP_CLIENT_DEFAULTS.concurrency, describe: '--from-api: requests in flight while reading a batch' })))
    .option('rate', checked('rate', decimal({ above: 0 }, { describe: '--from-api: at most this many requests per second' })))
    .option('timeout', checked('timeout', int({ min: 1 }, { default: HTTP_CLIENT_DEFAULTS.timeoutMs, describe: 'Per-request timeout in ms' })))
    .option('quiet', { type: 'boolean', default: false, describe: 'No line per batch (failures, start and stop are still logged)' })
    .check((a) => {
      const n = [a['from-postgres'], a['from-api']].filter((x) => x !== undefined).length;
      if (n !== 1) throw new Error('name exactly one source: --from-api URL or --from-postgres DSN');
      return true;
    })
    .example('$0 follow --db chain.sqlite --from-api https://indexer.example/ --interval 2s', 'follow an API')
    .example('$0 follow --db chain.sqlite --from-postgres postgres://ro@db:5432/rollytics --vm-type wasm', 'follow a rollytics database') as never,
  handler: async (argv) => {
    try {
      const denoms = argv.denoms?.flatMap((d) => String(d).split(',')).map((d) => d.trim()).filter((d) => d !== '');
      process.exitCode = await runFollow({ ...argv, denoms });
    } catch (e) {
      process.stderr.write(`indexer-api follow: ${(e as Error).message}\n`);
      process.exitCode = 1;
    }
  },
};
