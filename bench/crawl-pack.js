#!/usr/bin/env node
// How a crawl's tx page packs (issue #43, src/sources/api/resume.ts packTexts): one page of 1000
// txs from a served chain (the 100,001st tx on), as the crawl stages it (the texts joined),
// compressed whole by zlib (levels 1 / 6 / 9) and brotli (quality 3 / 5 / 7, 4 MiB window):
// bytes a tx, ratio, ms a page (3 runs each), and the unpacking.
//
//   node bench/crawl-pack.js http://127.0.0.1:7392
'use strict';
const zlib = require('zlib');

(async () => {
  const base = process.argv[2] ?? 'http://127.0.0.1:7392';
  const key = Buffer.from(JSON.stringify({ sequence: 100000 })).toString('base64');
  const r = await fetch(`${base}/indexer/tx/v1/txs?pagination.limit=1000&pagination.reverse=false&pagination.key=${encodeURIComponent(key)}`);
  const txs = JSON.parse(await r.text()).txs.map((t) => JSON.stringify(t));
  const buf = Buffer.from(txs.join(''));
  const B = zlib.constants;
  const br = (q) => (b) => zlib.brotliCompressSync(b, { params: { [B.BROTLI_PARAM_QUALITY]: q, [B.BROTLI_PARAM_LGWIN]: 22, [B.BROTLI_PARAM_SIZE_HINT]: b.length } });
  const cases = [['zlib 1', (b) => zlib.deflateRawSync(b, { level: 1 })], ['zlib 6', (b) => zlib.deflateRawSync(b, { level: 6 })],
    ['zlib 9', (b) => zlib.deflateRawSync(b, { level: 9 })], ['brotli 3', br(3)], ['brotli 5', br(5)], ['brotli 7', br(7)]];
  console.log(`${txs.length} txs, ${(buf.length / txs.length).toFixed(0)} bytes a tx served`);
  for (const [name, f] of cases) {
    let n = 0;
    const s = process.hrtime.bigint();
    for (let i = 0; i < 3; i++) n = f(buf).length;
    const ms = Number(process.hrtime.bigint() - s) / 3e6;
    console.log(`${name}: ${(n / txs.length).toFixed(0)} bytes a tx, ${(buf.length / n).toFixed(1)}x, ${ms.toFixed(0)} ms a page`);
  }
  const c = br(3)(buf);
  const s = process.hrtime.bigint();
  zlib.brotliDecompressSync(c);
  console.log(`brotli 3 unpacked in ${(Number(process.hrtime.bigint() - s) / 1e6).toFixed(1)} ms a page`);
})();
