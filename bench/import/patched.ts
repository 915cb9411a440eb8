/**
 * Measures the import changes proposed in bench/import/README.md without editing src/: runs
 * `runImport` in-process, optionally with these monkey-patches of the compiled modules:
 *   memo      memoize pubkey → address and address text → canonical bytes (hot accounts)
 *   raw       a rawMembers that skips strings with indexOf and reads char codes
 *   lines     an NDJSON line reader splitting Buffers on \n instead of node:readline
 *
 *   node build/bench/import/patched.js DUMP OUT [memo,raw,lines|none] [ROUNDS]
 *
 * Prints the txs-stage seconds of each round as JSON. The patches are prototypes for the
 * proposal (they keep the outputs byte-identical on the generated chains), not product code.
 */
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { createGunzip } from 'node:zlib';
import { runImport } from '../../src/commands/import';
import * as address from '../../src/lib/address';
import * as ndjson from '../../src/import/ndjson';
import * as pubkey from '../../src/lib/pubkey';
import * as raw from '../../src/lib/raw-json';
import { DumpError } from '../../src/import/dump-error';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

function memo(): void {
  const pk = pubkey as Mutable<typeof pubkey>;
  const origPk = pk.pubkeyToAddress;
  const pkCache = new Map<string, Buffer | undefined>();
  pk.pubkeyToAddress = ((key: unknown) => {
    const k = key && typeof key === 'object' ? JSON.stringify(key) : undefined;
    if (k === undefined) return origPk(key as never);
    if (pkCache.has(k)) return pkCache.get(k);
    const v = origPk(key as never);
    if (pkCache.size < 200_000) pkCache.set(k, v);
    return v;
  }) as typeof pk.pubkeyToAddress;
  const ad = address as Mutable<typeof address>;
  const origCa = ad.canonicalAddress;
  const caCache = new Map<string, Buffer | Error>();
  ad.canonicalAddress = (input: string, prefix: string): Buffer => {
    const k = prefix + '\u0000' + input;
    let v = caCache.get(k);
    if (v === undefined) {
      try { v = origCa(input, prefix); } catch (e) { v = e as Error; }
      if (caCache.size < 500_000) caCache.set(k, v);
    }
    if (v instanceof Error) throw v;
    return v;
  };
}

function fastRawMembers(text: string): Map<string, string> {
  const members = new Map<string, string>();
  const n = text.length;
  let i = text.indexOf('{') + 1;
  const ws = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
  const skipString = (at: number): number => { // at = opening quote; returns index after the closing one
    let j = at;
    for (;;) {
      j = text.indexOf('"', j + 1);
      if (j < 0) return n;
      let k = j - 1;
      let bs = 0;
      while (text.charCodeAt(k) === 0x5c) { bs++; k--; }
      if ((bs & 1) === 0) return j + 1;
    }
  };
  for (;;) {
    while (i < n && ws(text.charCodeAt(i))) i++;
    if (i >= n || text.charCodeAt(i) === 0x7d) break;
    const keyStart = i;
    i = skipString(i);
    const keyText = text.slice(keyStart + 1, i - 1);
    const key = keyText.includes('\\') ? JSON.parse(`"${keyText}"`) as string : keyText;
    while (i < n && ws(text.charCodeAt(i))) i++;
    i++; // colon
    while (i < n && ws(text.charCodeAt(i))) i++;
    const valueStart = i;
    let depth = 0;
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x22) { i = skipString(i); if (depth === 0) break; continue; }
      if (c === 0x7b || c === 0x5b) depth++;
      else if (c === 0x7d || c === 0x5d) {
        if (depth === 0) break;
        depth--;
        if (depth === 0) { i++; break; }
      } else if (depth === 0 && (c === 0x2c || ws(c))) break;
      i++;
    }
    members.set(key, text.slice(valueStart, i));
    while (i < n && ws(text.charCodeAt(i))) i++;
    if (text.charCodeAt(i) === 0x2c) i++;
  }
  return members;
}

async function* fastReadNdjson(dir: string, file: string): AsyncGenerator<ndjson.NdjsonLine> {
  const rawStream = createReadStream(join(dir, file), { highWaterMark: 1 << 20 });
  const input = file.endsWith('.gz') ? rawStream.pipe(createGunzip()) : rawStream;
  let line = 0;
  let rest: Buffer | undefined;
  try {
    for await (const chunk of input as AsyncIterable<Buffer>) {
      let buf = rest ? Buffer.concat([rest, chunk]) : chunk;
      let start = 0;
      for (;;) {
        const nl = buf.indexOf(0x0a, start);
        if (nl < 0) break;
        line++;
        let end = nl;
        if (end > start && buf[end - 1] === 0x0d) end--;
        if (end > start) {
          const text = buf.toString('utf8', start, end);
          if (text.trim() !== '') yield { file, line, text };
        }
        start = nl + 1;
      }
      rest = start < buf.length ? buf.subarray(start) : undefined;
      buf = Buffer.alloc(0);
    }
  } catch (e) {
    throw new DumpError(file, line + 1, '(file)', `cannot read: ${(e as Error).message}`);
  }
  if (rest && rest.length) {
    line++;
    const text = rest.toString('utf8');
    if (text.trim() !== '') yield { file, line, text };
  }
}

async function main(): Promise<void> {
  const [dump, out, which = 'none', rounds = '1'] = process.argv.slice(2);
  const set = new Set(which.split(','));
  if (set.has('memo')) memo();
  if (set.has('raw')) (raw as Mutable<typeof raw>).rawMembers = fastRawMembers;
  if (set.has('lines')) (ndjson as Mutable<typeof ndjson>).readNdjson = fastReadNdjson;
  const results: number[] = [];
  for (let r = 0; r < Number(rounds); r++) {
    const cpu0 = process.cpuUsage();
    const res = await runImport({ fromDump: dump, out, force: true, quiet: true, json: false });
    const cpu = process.cpuUsage(cpu0);
    results.push(res.stages.find((s) => s.name === 'txs')?.seconds ?? NaN);
    process.stderr.write(`${which} round ${r}: txs stage ${results[r].toFixed(2)} s, process CPU ${((cpu.user + cpu.system) / 1e6).toFixed(2)} s\n`);
  }
  process.stdout.write(JSON.stringify({ patches: which, txsStageSeconds: results }) + '\n');
}

main().catch((e: Error) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
