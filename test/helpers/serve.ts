/**
 * `serve` as a user runs it: a real process (`node bin/indexer-api serve --port 0 …`) on
 * 127.0.0.1, its stderr "serving … on http://…" line giving the URL and its stdout JSON log
 * lines collected; plus small distinct snapshots (wasm chains of 150 / 300 / 450 txs, heights
 * 20 / 40 / 60) for hot-swap tests, built once per run with generate + import.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runGenerate } from '../../src/commands/generate';
import { runImport } from '../../src/import/run';
import { openSnapshot } from '../../src/snapshot/open';
import { openDatabase } from '../../src/sqlite';
import { atRunEnd } from '../support/run-end';

/** Repository root (tests run from build/test/serve/). */
export const ROOT = resolve(__dirname, '..', '..', '..');
export const CLI = join(ROOT, 'bin', 'indexer-api');
export const DEMO = (vm: 'move' | 'wasm' | 'evm'): string => join(ROOT, 'fixtures', 'demo', `${vm}.sqlite`);

let tmpRoot: string | undefined;
/** A private temp directory for this process, removed when it exits. */
export function serveTmp(): string {
  if (!tmpRoot) {
    const dir = mkdtempSync(join(tmpdir(), 'indexer-api-serve-test-'));
    tmpRoot = dir;
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return tmpRoot;
}

/** A copy of `from` whose meta names chain `id` (the same blocks): a file of another chain. */
export function withChainId(from: string, to: string, id: string): string {
  copyFileSync(from, to);
  const db = openDatabase(to, { fileMustExist: true });
  db.prepare("UPDATE meta SET value = ? WHERE key = 'chain_id'").run(id);
  db.close();
  return to;
}

export interface SmallSnapshot { file: string; height: number; txs: number }

let small: Promise<SmallSnapshot[]> | undefined;
/** Three distinct small snapshots, each a different height. */
export function smallSnapshots(): Promise<SmallSnapshot[]> {
  small ??= (async () => {
    const out: SmallSnapshot[] = [];
    for (const txs of [150, 300, 450]) {
      const dump = join(serveTmp(), `dump-${txs}`);
      const file = join(serveTmp(), `chain-${txs}.sqlite`);
      await runGenerate({ vm: 'wasm', out: dump, preset: 'demo', txs, seed: 1, gzip: false, force: true, quiet: true });
      await runImport({ fromDump: dump, out: file, force: true, quiet: true, json: false });
      const snapshot = openSnapshot(file);
      out.push({ file, height: snapshot.meta.height, txs });
      snapshot.close();
    }
    return out;
  })();
  return small;
}

export interface LogLine { time: string; level: string; msg: string; [k: string]: unknown }
export interface Exit { code: number | null; signal: NodeJS.Signals | null }

/** A running `serve` process. */
export class ServeProcess {
  readonly lines: LogLine[] = [];
  /** stdout that is not a JSON line (there should be none) */
  readonly junk: string[] = [];
  stderr = '';
  url = '';
  /** the URL of the `listening URL` line `--port 0` prints first on stdout */
  listening = '';
  readonly exited: Promise<Exit>;
  private listeners: (() => void)[] = [];

  constructor(readonly proc: ChildProcess) {
    let partial = '';
    proc.stdout!.setEncoding('utf8').on('data', (s: string) => {
      partial += s;
      let nl: number;
      while ((nl = partial.indexOf('\n')) >= 0) {
        const line = partial.slice(0, nl);
        partial = partial.slice(nl + 1);
        const first = this.lines.length === 0 && this.junk.length === 0 && this.listening === '';
        if (first && line.startsWith('listening ')) { this.listening = line.slice('listening '.length); continue; }
        try { this.lines.push(JSON.parse(line) as LogLine); } catch { this.junk.push(line); }
      }
      this.notify();
    });
    proc.stderr!.setEncoding('utf8').on('data', (s: string) => { this.stderr += s; this.notify(); });
    this.exited = new Promise((done) => proc.once('exit', (code, signal) => { this.notify(); done({ code, signal }); }));
  }

  private notify(): void {
    for (const l of this.listeners.splice(0)) l();
  }

  /** Resolves when `test()` holds, re-checked on every output; rejects if the process exits first. */
  until<T>(what: string, test: () => T | undefined): Promise<T> {
    return new Promise((done, fail) => {
      const check = (): void => {
        const v = test();
        if (v !== undefined && v !== false) { done(v); return; }
        if (this.proc.exitCode !== null || this.proc.signalCode !== null) {
          fail(new Error(`serve exited (${this.proc.exitCode ?? this.proc.signalCode}) while waiting for ${what}; stderr: ${this.stderr}`));
          return;
        }
        this.listeners.push(check);
      };
      check();
    });
  }

  /** the first log line (from `from` on) matching */
  line(what: string, match: (l: LogLine) => boolean, from = 0): Promise<LogLine> {
    return this.until(what, () => this.lines.slice(from).find(match));
  }

  signal(sig: NodeJS.Signals): void {
    this.proc.kill(sig);
  }

  /** SIGTERM (SIGKILL after 20 s so a hung server cannot hang the suite), then the exit status. */
  async stop(sig: NodeJS.Signals = 'SIGTERM'): Promise<Exit> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill(sig);
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 20_000);
    try { return await this.exited; } finally { clearTimeout(timer); }
  }
}

const running = new Set<ServeProcess>();

/** Starts `serve --port 0 …args` (one worker unless args say otherwise) and waits for its URL. */
export async function startServe(args: string[]): Promise<ServeProcess> {
  const withWorkers = args.includes('--workers') ? args : ['--workers', '1', ...args];
  const proc = spawn(process.execPath, [CLI, 'serve', '--port', '0', ...withWorkers], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: cleanEnv(),
  });
  const p = new ServeProcess(proc);
  running.add(p);
  p.exited.then(() => running.delete(p), () => {});
  p.url = await p.until('the "serving … on URL" line', () => /serving .* on (http:\/\/\S+)/.exec(p.stderr)?.[1]);
  return p;
}

/** This environment without INDEXER_API_* (which would set serve options; CI sets some for the tests). */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('INDEXER_API_')) env[k] = v;
  return env;
}

export interface Response { status: number; headers: Record<string, string | string[] | undefined>; body: string }

/** One GET over `agent` (a fresh connection without one). */
export function get(url: string, headers: Record<string, string> = {}, agent?: Agent): Promise<Response> {
  return new Promise((done, fail) => {
    const req = request(url, { headers, agent: agent ?? false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (s: string) => { body += s; });
      res.on('end', () => done({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('error', fail);
    });
    req.on('error', fail);
    req.end();
  });
}

export async function getJson<T = Record<string, unknown>>(url: string): Promise<T> {
  const r = await get(url);
  if (r.status !== 200) throw new Error(`GET ${url}: ${r.status} ${r.body}`);
  return JSON.parse(r.body) as T;
}

/** Polls until `test` resolves truthy (for state that only shows in responses, e.g. after a swap). */
export async function eventually<T>(what: string, test: () => Promise<T | undefined>, tries = 500): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await test();
    if (v !== undefined && v !== false) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`gave up waiting for ${what}`);
}

/** The value of a metric line `name{labels} value` (labels given as the exact text inside {}). */
export function metric(text: string, name: string, labels = ''): number | undefined {
  const want = labels ? `${name}{${labels}} ` : `${name} `;
  const line = text.split('\n').find((l) => l.startsWith(want));
  return line === undefined ? undefined : Number(line.slice(want.length));
}

// After each run (each file under --parallel, test/support/run-end.ts): kill the servers it left
// running. The temp directory and the small snapshots in it are kept for the process's next
// file and removed when it exits.
atRunEnd(async () => {
  await Promise.all([...running].map((p) => p.stop('SIGKILL')));
});
