/**
 * Many chains in one replica (docs/scaling.md#many-chains-one-replica): `serve --db a.sqlite
 * --db b.sqlite …` or `--db-dir DIR` serves each chain under `/{chain_id}/` (under the base URL
 * when there is one). One app, one validator and one response-cache budget serve them all; what
 * is per chain is here — a snapshot holder per file (hot swap, follow's batches, faults), the
 * chain's prefix, and whether its start-up check is running.
 *
 * - A chain is named by its file's chain id (meta `chain_id`), which must be safe as one path
 *   segment and not one the server answers itself (RESERVED_SEGMENTS). Two files of one chain
 *   id, an unsafe or a reserved id are refused at start with one error naming the files.
 * - A file that does not open (missing, damaged, not a snapshot) takes only itself out: it is
 *   logged once, listed at / and in the root /ready, and tried again when it changes. Only when
 *   no file at all opens at start does serve refuse to start (`--db` files; an empty `--db-dir`
 *   is a replica waiting for its first file).
 * - Every file is checked before it is ready (its holder's check, the quick check): at start
 *   (unless `checkAtStart` is off: serve --no-verify) and whenever a file is added. While it runs
 *   the chain is listed but not ready (its /ready and its API answer 503); a file that fails is
 *   dropped and listed with its reason, and tried again once it changes.
 * - A file replaced under the same name by one of another chain is refused (the holder's: a
 *   served file never changes chains); to serve that chain, the file leaves the directory
 *   (or gets another name) and comes back.
 * - `--db-dir`: every `*.sqlite` file of the directory (not dot files: import's and pull's
 *   temporaries) is a chain; the directory is looked at again every `dirPollMs` — a file added
 *   is served, a file removed stops being served, no restart.
 */
import { EventEmitter } from 'node:events';
import { readdirSync, Stats, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { RefusedFile, SnapshotHolder } from '../snapshot/holder';
import type { Snapshot } from '../snapshot/open';
import { EXPLORER_PAGES } from '../explorer/router';
import { fsReason } from '../lib/paths';

/**
 * First path segments the server answers itself, at the root or under a chain: a chain id equal
 * to one would shadow it (or be shadowed). The ops endpoints, the API's roots, Swagger UI, the
 * explorer's pages and its asset directory.
 */
const RESERVED_SEGMENTS: ReadonlySet<string> = new Set([
  'health',
  'ready',
  'metrics',
  'status',
  'swagger',
  'indexer',
  'explorer',
  'favicon.ico',
  'robots.txt',
  ...EXPLORER_PAGES.map((p) => p.split('/')[1]).filter((s) => s !== ''),
]);

/** Why `id` cannot name a chain's path segment, or undefined when it can. */
export function chainIdProblem(id: string): string | undefined {
  if (id === '') return 'it is empty';
  if (id === '.' || id === '..') return 'it is a dot segment';
  const bad = /[^A-Za-z0-9._~-]/.exec(id);
  if (bad) return `${JSON.stringify(bad[0])} is not safe in a path segment (letters, digits, '-', '.', '_', '~')`;
  if (RESERVED_SEGMENTS.has(id.toLowerCase())) return `/${id}/ is a path the server answers itself (reserved: ${[...RESERVED_SEGMENTS].join(', ')})`;
  return undefined;
}

/** One chain of the replica. */
export interface ServedChain {
  readonly id: string;
  readonly file: string;
  readonly holder: SnapshotHolder;
  /** where the chain answers: the base URL and `/{id}` (no trailing slash) */
  readonly base: string;
}

export type { RefusedFile };

export interface ChainSetOptions {
  /** --db files, in the order given */
  files: readonly string[];
  /** --db-dir */
  dir?: string;
  /** serve --base-url, parseBaseUrl's form ('' = the root) */
  base: string;
  /** opens a file's holder (throws SnapshotError when it does not open) */
  open(file: string): SnapshotHolder;
  /** how often the directory (and files that did not open) are looked at again, ms; 0 = never */
  rescanMs: number;
  /** check the files there at start too (serve --verify); a file added later is always checked */
  checkAtStart: boolean;
}

/** Thrown at start: the files cannot be served together (one message naming the files). */
export class ChainSetError extends Error {}

/** What a file looked like when it last did not open: it is tried again only once it changed. */
function fingerprint(st: Stats | undefined): string {
  return st === undefined ? 'missing' : `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
}

function statOrUndefined(file: string): Stats | undefined {
  try {
    return statSync(file);
  } catch {
    return undefined;
  }
}

/** The snapshot files of a `--db-dir` directory: `*.sqlite`, not dot files. */
function snapshotFilesIn(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => (e.isFile() || e.isSymbolicLink()) && e.name.endsWith('.sqlite') && !e.name.startsWith('.'))
    .map((e) => join(dir, e.name))
    .sort();
}

/**
 * The chains being served. Events: 'add' (chain), 'remove' (chain, why), 'refused' (file, error
 * message: a file that did not open, failed its check or whose chain id cannot be served; once
 * per change of the file), 'checked' (chain, ms: its file passed its check, it is ready).
 */
export class ChainSet extends EventEmitter {
  private readonly byId = new Map<string, ServedChain>();
  private readonly byFile = new Map<string, ServedChain>();
  private readonly notServed = new Map<string, RefusedFile & { fingerprint: string }>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly startChecks: Promise<void>[] = [];

  private constructor(private readonly o: ChainSetOptions) {
    super();
  }

  /**
   * Opens every file. Refuses (ChainSetError) when two files hold one chain id, an id cannot be
   * served, or — with --db files only — none of them opens.
   */
  static open(o: ChainSetOptions): ChainSet {
    const set = new ChainSet(o);
    const files = set.wanted();
    const opened: { file: string; holder: SnapshotHolder; id: string }[] = [];
    const problems: string[] = [];
    try {
      for (const file of files) {
        let holder: SnapshotHolder;
        try {
          holder = o.open(file);
        } catch (e) {
          set.notServed.set(file, { file, error: (e as Error).message, fingerprint: fingerprint(statOrUndefined(file)) });
          continue;
        }
        const id = (holder.current() as Snapshot).meta.chainId;
        opened.push({ file, holder, id });
        const why = chainIdProblem(id);
        if (why) problems.push(`${file}: chain id ${JSON.stringify(id)} cannot be served under /{chain_id}/: ${why}`);
      }
      const byId = new Map<string, string[]>();
      for (const c of opened) byId.set(c.id, [...(byId.get(c.id) ?? []), c.file]);
      for (const [id, same] of byId) {
        if (same.length > 1) problems.push(`chain id ${JSON.stringify(id)} is in ${same.length} files: ${same.join(', ')} (one file per chain)`);
      }
      if (problems.length > 0) throw new ChainSetError(problems.join('; '));
      if (opened.length === 0 && o.dir === undefined) {
        throw new ChainSetError(`none of the snapshot files opens: ${[...set.notServed.values()].map((r) => r.error).join('; ')}`);
      }
    } catch (e) {
      for (const c of opened) c.holder.close();
      throw e;
    }
    for (const c of opened) set.startChecks.push(set.add(c.file, c.holder, c.id, o.checkAtStart));
    if (o.rescanMs > 0) {
      set.timer = setInterval(() => set.rescan(), o.rescanMs);
      set.timer.unref();
    }
    return set;
  }

  /** The chain served under `/{id}/`, if any (ids are matched exactly). */
  find(id: string): ServedChain | undefined {
    return this.byId.get(id);
  }

  /** Every chain, by chain id. */
  list(): ServedChain[] {
    return [...this.byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /**
   * Files not served now, and why: those that did not open or failed their check, and those a
   * chain's holder refused (a replacement that is damaged or of another chain; the chain serves
   * its previous file meanwhile).
   */
  refused(): RefusedFile[] {
    return [...[...this.notServed.values()].map(({ file, error }) => ({ file, error })), ...this.list().flatMap((c) => c.holder.notServed())];
  }

  /** Settles when the checks of the files there at start have ended (a failure drops its chain; never rejects). */
  checked(): Promise<void> {
    return Promise.all(this.startChecks).then(() => undefined);
  }

  /** The files to serve: the --db files, or the directory's snapshot files. */
  private wanted(): string[] {
    if (this.o.dir === undefined) return this.o.files.map((f) => resolve(f));
    try {
      return snapshotFilesIn(this.o.dir);
    } catch (e) {
      if (this.byFile.size === 0 && this.notServed.size === 0) throw new ChainSetError(`--db-dir ${this.o.dir}: ${fsReason(e)}`);
      return [...this.byFile.keys()];
    }
  }

  /**
   * Serves `holder` as chain `id` — not ready until its file passed its check (`check`); a file
   * that fails it is dropped and listed with its reason. Resolves when the check has ended.
   */
  private add(file: string, holder: SnapshotHolder, id: string, check: boolean): Promise<void> {
    const chain: ServedChain = { id, file, holder, base: `${this.o.base}/${id}` };
    this.byId.set(id, chain);
    this.byFile.set(file, chain);
    this.notServed.delete(file);
    // what was checked: a file replaced meanwhile is the holder's to check (its hot swap)
    const fp = fingerprint(statOrUndefined(file));
    const started = process.hrtime.bigint();
    const checking = check ? holder.checkCurrent() : Promise.resolve();
    this.emit('add', chain);
    if (!check) return Promise.resolve();
    return checking.then(
      () => {
        if (this.byFile.get(file) === chain) this.emit('checked', chain, Math.round(Number(process.hrtime.bigint() - started) / 1e6));
      },
      (e: unknown) => {
        if (this.closed || this.byFile.get(file) !== chain) return;
        this.remove(chain, 'its file failed its check');
        this.refuse(file, e instanceof Error ? e.message : String(e), fp);
      },
    );
  }

  /** `shutdown`: the replica is stopping (close()), no chain left it: listeners need not log it. */
  private remove(chain: ServedChain, why?: string, shutdown = false): void {
    if (this.byId.get(chain.id) === chain) this.byId.delete(chain.id);
    if (this.byFile.get(chain.file) === chain) this.byFile.delete(chain.file);
    this.emit('remove', chain, why, shutdown);
    chain.holder.close();
  }

  /** Lists `file` as not served (`fp`: what it looked like; it is tried again once that changes). */
  private refuse(file: string, error: string, fp = fingerprint(statOrUndefined(file))): void {
    const before = this.notServed.get(file);
    this.notServed.set(file, { file, error, fingerprint: fp });
    if (before?.error !== error) this.emit('refused', file, error);
  }

  private tryOpen(file: string): void {
    let holder: SnapshotHolder;
    try {
      holder = this.o.open(file);
    } catch (e) {
      this.refuse(file, (e as Error).message);
      return;
    }
    const id = (holder.current() as Snapshot).meta.chainId;
    const why = chainIdProblem(id) ?? (this.byId.has(id) ? `chain id ${JSON.stringify(id)} is already served from ${this.byId.get(id)?.file}` : undefined);
    if (why !== undefined) {
      holder.close();
      this.refuse(file, `${file}: chain id ${JSON.stringify(id)} cannot be served: ${why}`);
      return;
    }
    void this.add(file, holder, id, true);
  }

  /**
   * Looks at the files again: new files of the directory are opened, removed ones stop being
   * served, files that did not open are tried again once they changed.
   */
  rescan(): void {
    if (this.closed) return;
    const files = this.wanted();
    const now = new Set(files);
    if (this.o.dir !== undefined) {
      for (const [file, chain] of [...this.byFile]) if (!now.has(file)) this.remove(chain, 'its file left --db-dir');
      for (const file of [...this.notServed.keys()]) if (!now.has(file)) this.notServed.delete(file);
    }
    for (const file of files) {
      if (this.byFile.has(file)) continue;
      const r = this.notServed.get(file);
      if (r !== undefined && r.fingerprint === fingerprint(statOrUndefined(file))) continue;
      this.tryOpen(file);
    }
  }

  /** Stops looking at the directory and closes every chain's holder. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    for (const chain of [...this.byId.values()]) this.remove(chain, undefined, true);
  }
}
