import { request } from 'node:http';
import { basename } from 'node:path';
import { gzipSync } from 'node:zlib';
import { createRequestListener } from '../src/serve/routing';
import { loadOpenApi } from '../src/serve/openapi';
import { listen } from '../src/serve/server';
import { openSnapshot } from '../src/snapshot/open';
import { targetsOf } from './targets';
import { appOptions } from '../test/helpers/app-options';

/**
 * Bytes on the wire per route family (issue #23): each family of bench/targets.ts with
 * pagination.limit 10 and 100 (the single-object routes once), asked with no Accept-Encoding
 * (identity) and with `Accept-Encoding: gzip, deflate, br` (what browsers send: ours is gzip
 * assembled from packed rows), beside what gzip -6 of the whole identity body would be (the
 * best a compress-per-response server reaches at that level). Sizes only — no timing.
 *
 *   node build/bench/wire-bytes.js FILE [FILE…]
 */

function get(url: string, headers: Record<string, string>): Promise<{ status: number; encoding?: string; body: Buffer }> {
  return new Promise((done, fail) => {
    request(url, { agent: false, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (b: Buffer) => chunks.push(b));
      res.on('end', () => done({ status: res.statusCode ?? 0, encoding: res.headers['content-encoding'], body: Buffer.concat(chunks) }));
      res.on('error', fail);
    }).on('error', fail).end();
  });
}

async function main(): Promise<void> {
  const files = process.argv.slice(2);
  if (!files.length) throw new Error('usage: node build/bench/wire-bytes.js FILE [FILE…]');
  const print = (s: string): void => { process.stdout.write(`${s}\n`); };
  for (const file of files) {
    const snapshot = openSnapshot(file);
    const server = await listen(createRequestListener({ snapshots: { current: () => snapshot }, openapi: loadOpenApi(), options: appOptions({ corsOrigin: '*' }) }), '127.0.0.1', 0);
    try {
      print(`\n### ${basename(file)} (${snapshot.meta.vmType}, ${snapshot.meta.countTxs.toLocaleString('en-US')} txs, wire format ${snapshot.meta.wireFormat})\n`);
      print('| route family | limit | identity B | gzip B (ours) | gzip / identity | gzip -6 of the body B | ours / gzip -6 |');
      print('|---|---:|---:|---:|---:|---:|---:|');
      for (const f of targetsOf(file).families) {
        const isList = f.path.includes('pagination.limit=');
        for (const limit of isList ? [10, 100] : [0]) {
          const path = isList ? f.path.replace(/pagination\.limit=\d+/, `pagination.limit=${limit}`) : f.path;
          const id = await get(server.url + path, {});
          const gz = await get(server.url + path, { 'accept-encoding': 'gzip, deflate, br' });
          if (id.status !== 200 || gz.status !== 200) throw new Error(`${path}: ${id.status} / ${gz.status}`);
          const ours = gz.encoding === 'gzip' ? gz.body.length : NaN;
          const best = gzipSync(id.body, { level: 6 }).length;
          print(`| ${f.family} | ${isList ? limit : '—'} | ${id.body.length.toLocaleString('en-US')} | ${gz.encoding === 'gzip' ? ours.toLocaleString('en-US') : 'identity'} `
            + `| ${gz.encoding === 'gzip' ? (ours / id.body.length).toFixed(3) : '—'} | ${best.toLocaleString('en-US')} | ${gz.encoding === 'gzip' ? (ours / best).toFixed(2) : '—'} |`);
        }
      }
    } finally {
      await server.close();
      snapshot.close();
    }
  }
}

main().catch((e: Error) => { process.stderr.write(`wire-bytes: ${e.message}\n`); process.exit(1); });
