/**
 * Real things for the follow tests: an indexer-api app serving a chain that grows (snapshots
 * of increasing height swapped in), snapshots cut at a height (crawled from the full chain, as
 * the follower crawls), and `follow` as a real process.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequestListener } from '../../src/serve/routing';
import { runImport } from '../../src/import/run';
import { loadOpenApi } from '../../src/serve/openapi';
import { listen } from '../../src/serve/server';
import { tableDiff } from '../../src/snapshot/digest';
import { openSnapshot, Snapshot } from '../../src/snapshot/open';
import { cleanEnv, CLI, DEMO, ROOT } from './serve';
import { appOptions } from './app-options';

export interface GrowingSource {
  url: string;
  /** serve this snapshot file from now on */
  show(file: string): void;
  close(): Promise<void>;
}

/** An indexer-api app on 127.0.0.1 whose snapshot the test replaces (a chain that grows). */
export async function growingSource(first: string): Promise<GrowingSource> {
  let cur: Snapshot = openSnapshot(first);
  const old: Snapshot[] = [];
  const app = createRequestListener({ snapshots: { current: () => cur }, openapi: loadOpenApi(), options: appOptions({ corsOrigin: '', logError: () => undefined }) });
  const running = await listen(app, '127.0.0.1', 0);
  return {
    url: running.url,
    show(file) { old.push(cur); cur = openSnapshot(file); },
    async close() {
      await running.close();
      for (const s of [...old, cur]) s.close();
    },
  };
}

let cut: Promise<{ dir: string; full: string; at: Map<number, string> }> | undefined;

/**
 * The wasm demo chain (400 heights) crawled whole (`full`, what a fresh import from the API
 * gives) and cut at 150, 250 and 320 heights.
 */
export function demoCuts(): Promise<{ dir: string; full: string; at: Map<number, string> }> {
  cut ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'indexer-api-follow-test-'));
    const src = await growingSource(DEMO('wasm'));
    try {
      const at = new Map<number, string>();
      for (const h of [150, 250, 320]) {
        const out = join(dir, `cut-${h}.sqlite`);
        await runImport({ fromApi: src.url, toHeight: h, out, force: true, quiet: true, json: false });
        at.set(h, out);
      }
      const full = join(dir, 'full.sqlite');
      await runImport({ fromApi: src.url, out: full, force: true, quiet: true, json: false });
      return { dir, full, at };
    } finally {
      await src.close();
    }
  })();
  return cut;
}

/** A running `follow` process; stderr is its log. */
export class FollowProcess {
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private listeners: (() => void)[] = [];

  constructor(readonly proc: ChildProcess) {
    proc.stdout!.resume();
    proc.stderr!.setEncoding('utf8').on('data', (s: string) => { this.stderr += s; this.notify(); });
    this.exited = new Promise((done) => proc.once('exit', (code, signal) => { this.notify(); done({ code, signal }); }));
  }

  private notify(): void {
    for (const l of this.listeners.splice(0)) l();
  }

  /** The messages of its log (JSON lines off a terminal, src/lib/log.ts); a line that is no JSON as it is. */
  get lines(): string[] {
    return this.stderr.split('\n').filter((l) => l !== '').map((l) => {
      if (!l.startsWith('{')) return l;
      try { return String((JSON.parse(l) as { msg: unknown }).msg); } catch { return l; }
    });
  }

  /** Resolves when a stderr line matches; rejects if the process exits first. */
  until(what: string, re: RegExp): Promise<RegExpExecArray> {
    return new Promise((done, fail) => {
      const check = (): void => {
        const m = re.exec(this.stderr);
        if (m) { done(m); return; }
        if (this.proc.exitCode !== null || this.proc.signalCode !== null) {
          fail(new Error(`follow exited (${this.proc.exitCode ?? this.proc.signalCode}) while waiting for ${what}; stderr: ${this.stderr}`));
          return;
        }
        this.listeners.push(check);
      };
      check();
    });
  }

  async stop(sig: NodeJS.Signals = 'SIGTERM'): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill(sig);
    const t = setTimeout(() => this.proc.kill('SIGKILL'), 30_000);
    try { return await this.exited; } finally { clearTimeout(t); }
  }
}

export function startFollow(args: string[]): FollowProcess {
  return new FollowProcess(spawn(process.execPath, [CLI, 'follow', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: cleanEnv() }));
}

/** The served snapshot's /status height. */
export async function statusHeight(url: string): Promise<number> {
  const r = await fetch(`${url}/status`);
  return ((await r.json()) as { height: number }).height;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls until `test` resolves truthy, at most `ms`. */
export async function eventually<T>(what: string, ms: number, test: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await test().catch(() => undefined);
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(50);
  }
}

/**
 * What differs between two snapshots (tableDiff, logical), meta compared key by key without
 * `source` (it names the source URL, whose port differs between runs), the tag digests tag by tag
 * (`tag_digests c:…`: which collection) — empty: the same data.
 */
export function differences(a: string, b: string): string[] {
  const out = tableDiff(a, b, true).filter((d) => !d.startsWith('meta:') && !d.startsWith('tag_digests:'));
  // the tag digests tag by tag (src/snapshot/tag-digests.ts): which owner, collection or rich list differs
  const digests = (f: string): Map<string, string> => {
    const s = openSnapshot(f);
    try {
      const has = s.db.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'tag_digests'").get() !== undefined;
      return new Map(has ? (s.db.prepare('SELECT tag, hex(digest) FROM tag_digests').raw().all() as [string, string][]) : []);
    } finally { s.close(); }
  };
  const da = digests(a);
  const db = digests(b);
  for (const t of new Set([...da.keys(), ...db.keys()])) if (da.get(t) !== db.get(t)) out.push(`tag_digests ${t}: ${da.get(t) ?? '(none)'} vs ${db.get(t) ?? '(none)'}`);
  const meta = (f: string): Map<string, string> => {
    const s = openSnapshot(f);
    try {
      return new Map((s.db.prepare("SELECT key, value FROM meta WHERE key NOT IN ('source', 'snapshot_id', 'created_at')").all() as { key: string; value: string }[])
        .map((r) => [r.key, r.value]));
    } finally { s.close(); }
  };
  const ma = meta(a);
  const mb = meta(b);
  for (const k of new Set([...ma.keys(), ...mb.keys()])) if (ma.get(k) !== mb.get(k)) out.push(`meta ${k}: ${ma.get(k)} vs ${mb.get(k)}`);
  return out;
}
