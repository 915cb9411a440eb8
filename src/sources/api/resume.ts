/**
 * What an import's crawl has committed to its staging file, read back by the next run of the
 * same command (docs/follow.md "A crawl that resumes"). Every answer is staged in the
 * transaction that records how far its list got, so a run killed at any moment (or stopped by a
 * source outage past the retries, or a full disk) leaves: the /status the crawl began with and
 * its height range, the first tx sequence once found, every block and tx page staged whole (a
 * page and the probes that checked it commit together), and per list read by next_key (the
 * collections, each collection's tokens, each token's tx history, each denom's holders, each
 * height's EVM and internal txs) its cursor or that it is done. What was in flight is asked
 * again; nothing committed is.
 */
import type Database from 'better-sqlite3';
import { brotliCompressSync, brotliDecompressSync, constants } from 'node:zlib';

/** The staging (./staging.ts Staging): its connection. */
interface Staged {
  readonly db: Database.Database;
}

/**
 * A tx page's texts as one row of tx_pages: compressed together with their lengths, so the
 * staging stays a fraction of the snapshot it is for. Brotli at quality 1 with a 4 MiB window:
 * consecutive txs repeat each other, so a whole page compresses ≈ 9× (433 bytes a tx on the
 * generated Wasm chain in ≈ 7 ms a page of 1000; quality 3: 378 bytes in ≈ 18 ms, the crawl's
 * largest CPU cost after gunzip; zlib level 1: 543 bytes in ≈ 12 ms). The staging's tx pages
 * are gone before the load's peak (bench/README.md "A crawl's footprint", "Crawl CPU").
 */
export function packTexts(texts: string[]): { texts: Buffer; lengths: string } {
  return packBuffers(texts.map((t) => Buffer.from(t, 'utf8')));
}

/** packTexts of the texts at `items` of `body` (a page's bytes as served: ./scan.ts byteList), never decoded. */
export function packBytes(body: Buffer, items: readonly { start: number; end: number }[]): { texts: Buffer; lengths: string } {
  return packBuffers(items.map((it) => body.subarray(it.start, it.end)));
}

/** The texts' bytes in one brotli stream, and their lengths in bytes (a JSON array). */
function packBuffers(parts: Buffer[]): { texts: Buffer; lengths: string } {
  const raw = Buffer.concat(parts);
  const packed = brotliCompressSync(raw, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 1,
      [constants.BROTLI_PARAM_LGWIN]: 22,
      [constants.BROTLI_PARAM_SIZE_HINT]: raw.length,
    },
  });
  return { texts: packed, lengths: JSON.stringify(parts.map((t) => t.length)) };
}

/**
 * The staged tx pages in sequence order from the one holding sequence `from` on, each with its
 * texts and the txs' hashes (no statement stays open between pages: the load deletes the pages
 * it committed meanwhile, ./staging.ts).
 */
export function* txPages(db: Database.Database, from = 0): Generator<{ first: number; texts: string[]; hashes: string[] }> {
  const next = db.prepare('SELECT first, texts, lengths FROM tx_pages WHERE first > ? ORDER BY first LIMIT 1');
  const hashes = db.prepare('SELECT hash FROM txs WHERE sequence >= ? ORDER BY sequence LIMIT ?').pluck();
  const start = db.prepare('SELECT max(first) FROM tx_pages WHERE first <= ?').pluck().get(from) as number | null;
  for (let after = (start ?? from) - 1; ;) {
    const p = next.get(after) as { first: number; texts: Buffer; lengths: string } | undefined;
    if (p === undefined) return;
    const all = brotliDecompressSync(p.texts);
    const lengths = JSON.parse(p.lengths) as number[];
    const texts: string[] = [];
    let at = 0;
    for (const n of lengths) {
      texts.push(all.toString('utf8', at, at + n));
      at += n;
    }
    yield { first: p.first, texts, hashes: hashes.all(p.first, lengths.length) as string[] };
    after = p.first;
  }
}

/** A list's committed position: the next_key to go on from (null: from the start), rows staged of it, whether it is done. */
export interface Cursor {
  nextKey: string | null;
  pos: number;
  done: boolean;
}

/** The staged crawl's own state (tables crawl_state and cursors of the staging). */
export class CrawlState {
  private readonly getState: Database.Statement;
  private readonly putState: Database.Statement;
  private readonly getCursor: Database.Statement;
  private readonly putCursor: Database.Statement;

  constructor(private readonly staging: Staged) {
    const db = staging.db;
    this.getState = db.prepare('SELECT value FROM crawl_state WHERE name = ?').pluck();
    this.putState = db.prepare('INSERT OR REPLACE INTO crawl_state (name, value) VALUES (?, ?)');
    this.getCursor = db.prepare('SELECT next_key, pos, done FROM cursors WHERE name = ?');
    this.putCursor = db.prepare('INSERT OR REPLACE INTO cursors (name, next_key, pos, done) VALUES (?, ?, ?, ?)');
  }

  get(name: string): string | undefined {
    return this.getState.get(name) as string | undefined;
  }

  set(name: string, value: string): void {
    this.putState.run(name, value);
  }

  cursor(name: string): Cursor | undefined {
    const r = this.getCursor.get(name) as { next_key: string | null; pos: number; done: number } | undefined;
    return r && { nextKey: r.next_key, pos: r.pos, done: r.done === 1 };
  }

  /** (in the transaction that staged the page's rows) */
  saveCursor(name: string, c: Cursor): void {
    this.putCursor.run(name, c.nextKey, c.pos, c.done ? 1 : 0);
  }

  /** What the staging holds, for the line a resumed crawl starts with. */
  carried(): Record<string, number> {
    const db = this.staging.db;
    const count = (sql: string): number => db.prepare(sql).pluck().get() as number;
    return {
      blocks: count('SELECT count(*) FROM blocks'),
      txs: count('SELECT count(*) FROM txs'),
      collections: count('SELECT count(*) FROM collections'),
      tokens: count('SELECT count(*) FROM tokens'),
      token_histories: count("SELECT count(*) FROM cursors WHERE name LIKE 'token txs %' AND done = 1"),
      evm_txs: count('SELECT count(*) FROM evm_txs'),
      evm_internal_txs: count('SELECT count(*) FROM evm_internal_txs'),
      holders: count('SELECT count(*) FROM holders'),
    };
  }

  /** Staged blocks of heights after..to (a page is staged whole or not at all). */
  blocksStaged(after: number, to: number): number {
    return this.staging.db.prepare('SELECT count(*) FROM blocks WHERE height > ? AND height <= ?').pluck().get(after, to) as number;
  }

  /** Staged txs of sequences after+1..end. */
  txsStaged(after: number, end: number): number {
    return this.staging.db.prepare('SELECT count(*) FROM txs WHERE sequence > ? AND sequence <= ?').pluck().get(after, end) as number;
  }

  /** Whether a staged token has an object address (the VM detection of a resumed crawl, source.ts). */
  tokensSeen(): { token: boolean; object: boolean } {
    const db = this.staging.db;
    return {
      token: db.prepare('SELECT EXISTS (SELECT 1 FROM tokens)').pluck().get() === 1,
      object: db.prepare("SELECT EXISTS (SELECT 1 FROM tokens WHERE json_extract(text, '$.object_addr') IS NOT NULL)").pluck().get() === 1,
    };
  }
}
