/**
 * What packing a row costs (src/wire/packed.ts packRow: one raw-deflate stream per row, zlib
 * level 2, ended by a sync flush), and what the ways of making it cheaper would give: the import
 * packs every tx row on its parser threads, and this is the largest share of their time
 * (bench/import/README.md, "The rate against the bare insert").
 *
 *   node build/bench/import/pack-cost.js SNAPSHOT [ROWS] [ROUNDS]
 *
 * Reads ROWS (2,000) tx rows of SNAPSHOT from the middle of the chain, unpacks them, then times
 * each way over all of them ROUNDS (7) times (after 3 untimed passes of packRow's way) and prints the rounds' min / median / max in µs a
 * row, with how many of the rows it packs to exactly the bytes packRow writes (a stored row's
 * bytes are part of the ETags and the tag digests, so a way that changes them changes those):
 *
 * - `deflateRawSync`: packRow's own call (a new zlib stream per row);
 * - the same with the output buffer sized to the row, and with a smaller window (windowBits 13
 *   and 12: less memory to set up);
 * - one zlib stream for all the rows, each written with Z_FULL_FLUSH (zlib forgets the history
 *   at a full flush, so each row's output should stand alone; asynchronous: Node has no public
 *   synchronous stream);
 * - the fixed cost: a 7-byte row;
 * - 2, 8 and 32 rows a stream, and one stream over all the rows' bytes (what compressing costs
 *   when the set-up and a block's Huffman trees are shared by several rows);
 * - Huffman coding only (no string matching): what is left when compressing proper is taken out;
 * - `fflate` and `pako` (pure JavaScript) when installed beside (`npm install --no-save fflate
 *   pako`): not dependencies of the project.
 */
import { constants, createDeflateRaw, deflateRawSync } from 'node:zlib';
import { openDatabase } from '../../src/sqlite';
import { packRow, unpackRow } from '../../src/wire/packed';

const HEADER = 12;
const SYNC = constants.Z_SYNC_FLUSH;

function stats(xs: number[]): string {
  const s = [...xs].sort((a, b) => a - b);
  return `${s[0].toFixed(1)} / ${s[s.length >> 1].toFixed(1)} / ${s[s.length - 1].toFixed(1)}`;
}

function main(): Promise<void> | void {
  const [path, nRows = '2000', nRounds = '7'] = process.argv.slice(2);
  if (!path) {
    process.stderr.write('usage: pack-cost.js SNAPSHOT [ROWS] [ROUNDS]\n');
    process.exit(2);
  }
  const db = openDatabase(path, { readonly: true, fileMustExist: true });
  const max = db.prepare('SELECT max(sequence) FROM txs').pluck().get() as number;
  const stored = db.prepare('SELECT json FROM txs WHERE sequence > ? ORDER BY sequence LIMIT ?').pluck().all(Math.floor(max / 2), Number(nRows)) as Buffer[];
  db.close();
  const rows = stored.map((r) => unpackRow(r));
  const want = rows.map((r) => packRow(r).subarray(HEADER));
  const rounds = Number(nRounds);
  const bytes = rows.reduce((a, r) => a + r.length, 0);
  process.stdout.write(`${rows.length} tx rows, ${Math.round(bytes / rows.length)} B each on average; µs a row, min / median / max of ${rounds} rounds\n`);

  const line = (name: string, times: number[], same: number | string): void => {
    process.stdout.write(`${name.padEnd(44)} ${stats(times).padStart(22)}   same bytes: ${same}\n`);
  };
  const sync = (name: string, pack: (r: Buffer) => Uint8Array): void => {
    let same = 0;
    rows.forEach((r, i) => {
      if (Buffer.from(pack(r)).equals(want[i])) same++;
    });
    const times: number[] = [];
    for (let k = 0; k < rounds; k++) {
      const t = process.hrtime.bigint();
      for (const r of rows) pack(r);
      times.push(Number(process.hrtime.bigint() - t) / 1e3 / rows.length);
    }
    line(name, times, `${same} of ${rows.length}`);
  };

  // untimed: the first way timed would otherwise pay for the heap and code warming up (≈10 µs a row)
  for (let k = 0; k < 3; k++) for (const r of rows) deflateRawSync(r, { level: 2, finishFlush: SYNC });
  sync('deflateRawSync (packRow)', (r) => deflateRawSync(r, { level: 2, finishFlush: SYNC }));
  sync('  output buffer sized to the row', (r) => deflateRawSync(r, { level: 2, finishFlush: SYNC, chunkSize: Math.max(64, (r.length >> 1) + 64) }));
  sync('  windowBits 13', (r) => deflateRawSync(r, { level: 2, finishFlush: SYNC, windowBits: 13 }));
  sync('  windowBits 12', (r) => deflateRawSync(r, { level: 2, finishFlush: SYNC, windowBits: 12 }));
  const tiny = Buffer.from('{"a":1}');
  {
    const times: number[] = [];
    for (let k = 0; k < rounds; k++) {
      const t = process.hrtime.bigint();
      for (let i = 0; i < rows.length; i++) deflateRawSync(tiny, { level: 2, finishFlush: SYNC });
      times.push(Number(process.hrtime.bigint() - t) / 1e3 / rows.length);
    }
    line('deflateRawSync of 7 bytes (the fixed cost)', times, '–');
  }
  for (const per of [2, 8, 32]) {
    const groups: Buffer[] = [];
    for (let i = 0; i < rows.length; i += per) groups.push(Buffer.concat(rows.slice(i, i + per)));
    const times: number[] = [];
    for (let k = 0; k < rounds; k++) {
      const t = process.hrtime.bigint();
      for (const g of groups) deflateRawSync(g, { level: 2, finishFlush: SYNC });
      times.push(Number(process.hrtime.bigint() - t) / 1e3 / rows.length);
    }
    line(`${per} rows a stream (one block, trees, set-up)`, times, '– (not separable)');
  }
  sync('  Z_HUFFMAN_ONLY (no matching)', (r) => deflateRawSync(r, { level: 2, finishFlush: SYNC, strategy: constants.Z_HUFFMAN_ONLY }));
  {
    const all = Buffer.concat(rows);
    const times: number[] = [];
    for (let k = 0; k < rounds; k++) {
      const t = process.hrtime.bigint();
      deflateRawSync(all, { level: 2, finishFlush: SYNC });
      times.push(Number(process.hrtime.bigint() - t) / 1e3 / rows.length);
    }
    line('one stream over every row (no reset)', times, '– (not separable)');
  }
  for (const name of ['fflate', 'pako']) {
    let lib: { deflateSync?: (d: Uint8Array, o: object) => Uint8Array; deflateRaw?: (d: Uint8Array, o: object) => Uint8Array };
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      lib = require(name);
    } catch {
      process.stdout.write(`${name}: not installed (npm install --no-save ${name})\n`);
      continue;
    }
    const f = lib.deflateSync ?? lib.deflateRaw;
    if (f) sync(`${name} level 2 (pure JavaScript)`, (r) => f(r, { level: 2 }));
  }

  // One stream, a full flush after each row: asynchronous (a write's callback), so timed as a whole.
  const stream = createDeflateRaw({ level: 2, flush: constants.Z_FULL_FLUSH });
  const one = (r: Buffer): Promise<Buffer> =>
    new Promise((resolve, reject) => {
      stream.write(r, (e) => {
        if (e) return reject(e);
        const parts: Buffer[] = [];
        for (let b = stream.read() as Buffer | null; b !== null; b = stream.read() as Buffer | null) parts.push(b);
        resolve(Buffer.concat(parts));
      });
    });
  return (async () => {
    let same = 0;
    for (let i = 0; i < rows.length; i++) if ((await one(rows[i])).equals(want[i])) same++;
    const times: number[] = [];
    for (let k = 0; k < rounds; k++) {
      const t = process.hrtime.bigint();
      for (const r of rows) await one(r);
      times.push(Number(process.hrtime.bigint() - t) / 1e3 / rows.length);
    }
    line('one stream, Z_FULL_FLUSH after each row', times, `${same} of ${rows.length}`);
    stream.end();
  })();
}

void main();
