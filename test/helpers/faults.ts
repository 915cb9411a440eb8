/**
 * The fault suite's files: bad snapshots of every kind, made from a good one, and a load
 * generator that counts every failed request. Each case starts the real `serve` process
 * (test/helpers/serve.ts) on real files.
 */
import Database from 'better-sqlite3';
import { closeSync, copyFileSync, ftruncateSync, openSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { Agent } from 'node:http';
import { get } from './serve';

/** How many random points the kill cases use: FAULT_POINTS (make test-faults sets 50), default 5. */
export function faultPoints(): number {
  const n = Number(process.env.FAULT_POINTS ?? 5);
  return Number.isSafeInteger(n) && n > 0 ? n : 5;
}

/** Deterministic pseudo-random numbers (a failing run can be repeated with its seed). */
export function prng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    return x / 0x100000000;
  };
}

/** Overwrites `count` pages from the middle of the file with random bytes (dd if=/dev/urandom … conv=notrunc). */
export function corruptPages(file: string, count = 20, at = 0.5): void {
  const pages = Math.floor(statSync(file).size / 4096);
  const fd = openSync(file, 'r+');
  try {
    const junk = Buffer.alloc(4096 * count);
    for (let i = 0; i < junk.length; i++) junk[i] = Math.floor(Math.random() * 256);
    writeSync(fd, junk, 0, junk.length, 4096 * Math.floor(pages * at));
  } finally {
    closeSync(fd);
  }
}

export type BadKind = 'empty' | 'truncated' | 'random' | 'foreign SQLite' | 'future user_version' | 'meta schema_version 99' | 'corrupt pages';
export const BAD_KINDS: BadKind[] = ['empty', 'truncated', 'random', 'foreign SQLite', 'future user_version', 'meta schema_version 99', 'corrupt pages'];

/** Writes a bad file of `kind` at `out`, made from the good snapshot `good`. */
export function makeBad(kind: BadKind, good: string, out: string): void {
  rmSync(out, { force: true });
  switch (kind) {
    case 'empty': writeFileSync(out, ''); return;
    case 'truncated': {
      copyFileSync(good, out);
      const fd = openSync(out, 'r+');
      try { ftruncateSync(fd, Math.floor(statSync(good).size / 3)); } finally { closeSync(fd); }
      return;
    }
    case 'random': {
      const b = Buffer.alloc(64 * 1024);
      for (let i = 0; i < b.length; i++) b[i] = Math.floor(Math.random() * 256);
      writeFileSync(out, b);
      return;
    }
    case 'foreign SQLite': {
      const db = new Database(out);
      db.exec('CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES (\'hello\')');
      db.close();
      return;
    }
    case 'future user_version': {
      copyFileSync(good, out);
      const db = new Database(out);
      db.pragma('user_version = 99');
      db.close();
      return;
    }
    case 'meta schema_version 99': {
      copyFileSync(good, out);
      const db = new Database(out);
      db.prepare("UPDATE meta SET value = '99' WHERE key = 'schema_version'").run();
      db.close();
      return;
    }
    case 'corrupt pages':
      copyFileSync(good, out);
      corruptPages(out);
      return;
  }
}

/** Puts `src` at `db` the way a deploy does: copy beside it, then rename over it. */
export function publishCopy(src: string, db: string): void {
  const tmp = `${db}.incoming-${process.pid}-${Math.random().toString(36).slice(2)}`;
  copyFileSync(src, tmp);
  renameSync(tmp, db);
}

/** GETs `paths` round-robin over `connections` keep-alive connections until stop(); counts what failed. */
export function load(url: string, paths: string[], connections = 4): { stop(): Promise<{ ok: number; failed: string[] }> } {
  let running = true;
  let ok = 0;
  const failed: string[] = [];
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  let i = 0;
  const worker = async (): Promise<void> => {
    while (running) {
      const path = paths[i++ % paths.length];
      try {
        const r = await get(url + path, {}, agent);
        if (r.status === 200) ok++; else failed.push(`${path}: ${r.status} ${r.body.slice(0, 200)}`);
      } catch (e) {
        failed.push(`${path}: ${(e as Error).message}`);
      }
    }
  };
  const workers = Array.from({ length: connections }, () => worker());
  return {
    async stop() {
      running = false;
      await Promise.all(workers);
      agent.destroy();
      return { ok, failed };
    },
  };
}
