import type { PagesChecked } from './verify';
import { EventEmitter } from 'node:events';
import { FSWatcher, Stats, statSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import { pinnedChainError } from './file-check';
import { endRead, OpenOptions, openSnapshot, renewSnapshot, Snapshot, SnapshotError } from './open';

/**
 * The snapshot being served, and hot swap (docs/architecture.md#serve): on reload() — SIGHUP, or the
 * file at the path replaced — the new file is opened and checked (with `check`, e.g. the quick
 * check on a worker thread, while the old one keeps serving), becomes current() in one
 * assignment (a request sees one snapshot from start to end: it takes it once, with acquire()),
 * and the old one is closed once the last request that acquired it has released it. A new file
 * that does not open is refused and the old one keeps serving.
 *
 * A snapshot that fails at run time (SQLITE_CORRUPT / IOERR / NOTADB on a request) is marked
 * faulty() — the replica takes itself out of rotation — until a good swap replaces it.
 *
 * A holder serves one chain: the chain its first file holds (or the `pin`, from the start). A
 * file of another chain at the path is refused like a damaged one (docs/scaling.md: a replica
 * never changes chains unless told to). What it refused — the file at the path, and anything
 * a caller notes (serve --pull: a manifest of another chain) — is notServed(), until a good swap
 * (or the caller) clears it: /ready lists it.
 *
 * The check of the file being served (its start-up check, a file just added to `serve
 * --db-dir`) runs through checkCurrent(); checking() is true meanwhile (/ready answers 503).
 *
 * A new state of the same file (a follow batch committed in place, src/serve/live.ts) is not
 * opened: it is begun on a spare connection whose statements are prepared (renewSnapshot in
 * ./open.ts). The holder keeps at most one spare: the connection of a retired state of the
 * current file, once no request holds it, its read transaction ended. So a followed file is
 * served by two connections taking turns — the current state's, and the previous one's, which
 * the requests in flight during a batch finish on — and a new one is opened only when the
 * previous state is still held when the next batch comes (or after another file, a fault, or
 * at the first batch). A connection is closed when the holder closes, when its state is
 * neither current, held nor the spare, and the spare when another file is swapped in.
 *
 * Events: 'swap' (next, previous, reason), 'refused' (error, reason), 'checked' (CheckStatus: the
 * check of a replacement passed or failed; checkCurrent's caller reports its own), 'closed' (snapshot: the
 * state ended; its connection may live on as the spare), 'fault' (snapshot, error: the first
 * run-time storage error of that snapshot).
 */

export interface HolderOptions extends OpenOptions {
  /** how a file is opened (tests inject failures) */
  open?: (file: string, opts: OpenOptions) => Snapshot;
  /**
   * run on a new file after it opened, before it is swapped in; rejects (SnapshotError) to refuse
   * it; resolves with how it passed (src/snapshot/verify.ts checkPages: read now, or a recorded
   * check of the same unchanged file taken)
   */
  check?: (file: string) => Promise<PagesChecked | void>;
  /** serve only this chain, from the first file on (`by` names who asked, e.g. `--expect-chain-id`) */
  pin?: { chainId: string; by: string };
  /**
   * what the refusal of a file of another chain tells the operator to do (the new chain's id given),
   * e.g. "restart serve with --expect-chain-id NEW to serve it"
   */
  otherChainHint?: (chainId: string) => string;
}

/**
 * The last check of the file served, as /ready and /metrics show it: `running` (since), `passed`
 * — `how`: `read` (every page read now) or `recorded` (the same unchanged file passed before:
 * src/snapshot/verdict.ts), `checked_at` when its pages were read, `ms` how long that took —,
 * `failed`, or `none` (not checked: serve --no-verify at start).
 */
export type CheckStatus =
  | { state: 'none' }
  | { state: 'running'; since: string }
  | { state: 'passed'; how: 'read' | 'recorded'; at: string; checked_at: string; ms?: number }
  | { state: 'failed'; at: string };

/** A file not served, and why (the `files_not_served` of /ready). */
export interface RefusedFile {
  file: string;
  error: string;
}

export interface WatchOptions {
  /** stat poll interval, ms, beside fs.watch (which misses some replacements, e.g. on NFS); 0 = off */
  pollMs: number;
}

/** Which file is at the path: a replacement is a new inode, or a new mtime/size in place. */
function identity(st: Stats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
}

/** Same file (device and inode): written in place, not replaced. */
function sameInode(a: string, b: string | undefined): boolean {
  return b !== undefined && a.split(':', 2).join(':') === b.split(':', 2).join(':');
}

/**
 * Reloads whose file needs no quick check here: 'new batch' is a transaction `follow` committed
 * in place through SQLite (src/serve/live.ts), 'pull' a download the puller quick-checked
 * before renaming it over the path (src/pull/puller.ts). Checking them again would cost a read
 * of the whole file per batch.
 */
const CHECKED_BY_WRITER = new Set(['new batch', 'pull']);

function statOrUndefined(file: string): Stats | undefined {
  try {
    return statSync(file);
  } catch {
    return undefined;
  }
}

export class SnapshotHolder extends EventEmitter {
  private snapshot: Snapshot | undefined;
  private readonly refs = new Map<Snapshot, number>();
  private readonly retired = new Set<Snapshot>();
  /** the file last opened or refused, so a bad file is reported once, not on every poll */
  private seen: string | undefined;
  private watcher: FSWatcher | undefined;
  private poll: NodeJS.Timeout | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private closed = false;
  /** the reload in progress, and whether another was asked for meanwhile */
  private reloading: Promise<boolean> | undefined;
  private reloadAgain: string | undefined;
  /** the watcher's look at the path, once a reload ends (it skips looking while one runs) */
  private afterReload: (() => void) | undefined;
  private fault: { snapshot: Snapshot; error: Error } | undefined;
  /** a retired state of the current file whose connection the next new state of the file reuses */
  private spare: Snapshot | undefined;
  /** states that met a storage error: their connection is not reused */
  private readonly broken = new WeakSet<Snapshot>();
  /** the chain this holder serves: the pin, else its first file's */
  private chainId: string | undefined;
  /** the file at the path, refused (cleared by the next swap) */
  private refusedHere: RefusedFile | undefined;
  /** refusals a caller noted (note()), by key */
  private readonly notes = new Map<string, RefusedFile>();
  /** the snapshot whose check (checkCurrent) is running */
  private checkingNow: Snapshot | undefined;
  /** the last check of the file served (/ready and /metrics show it) */
  private lastCheck: CheckStatus = { state: 'none' };
  /** checks of files that passed by reading every page, and by taking a recorded check (src/snapshot/verdict.ts) */
  readonly checks = { read: 0, recorded: 0, failed: 0 };
  swaps = 0;
  /** new states begun on the spare connection instead of opening the file (a follow batch) */
  renewed = 0;
  failedSwaps = 0;

  private constructor(
    readonly file: string,
    private readonly opts: HolderOptions,
  ) {
    super();
    this.chainId = opts.pin?.chainId;
  }

  /**
   * Opens the first snapshot; throws SnapshotError (serve refuses to start) if it cannot, or if
   * it is not of the pinned chain.
   */
  static open(file: string, opts: HolderOptions = {}): SnapshotHolder {
    const holder = new SnapshotHolder(file, opts);
    const st = statOrUndefined(file);
    const s = holder.openFile();
    const other = holder.otherChain(s);
    if (other !== undefined) {
      s.close();
      throw other;
    }
    holder.snapshot = s;
    holder.chainId ??= s.meta.chainId;
    holder.seen = st && identity(st);
    return holder;
  }

  /** The refusal of `s` when it holds a chain other than the one served (or pinned). */
  private otherChain(s: Snapshot): SnapshotError | undefined {
    const want = this.chainId;
    const found = s.meta.chainId;
    if (want === undefined || found === want) return undefined;
    const pin = this.opts.pin;
    if (pin !== undefined && this.snapshot === undefined) return pinnedChainError(s.file, found, want, pin.by);
    const hint = this.opts.otherChainHint?.(found);
    return new SnapshotError(
      `snapshot is now chain ${JSON.stringify(found)}, but this replica serves chain ${JSON.stringify(want)} from this file: ` +
        `not swapped in${hint === undefined ? '' : ` (${hint})`}: ${s.file}`,
    );
  }

  /** A holder with nothing loaded yet (`serve --pull` before its first file): reload() fills it. */
  static empty(file: string, opts: HolderOptions = {}): SnapshotHolder {
    return new SnapshotHolder(file, opts);
  }

  private openFile(): Snapshot {
    return (this.opts.open ?? openSnapshot)(this.file, { verify: this.opts.verify });
  }

  /**
   * The file's newest state: on the spare connection when the path is still the current
   * snapshot's file (same device and inode: written in place), else the file opened.
   */
  private openNext(id: string | undefined): Snapshot {
    const spare = this.spare;
    const current = this.snapshot;
    if (
      spare !== undefined &&
      current !== undefined &&
      id !== undefined &&
      this.opts.open === undefined &&
      spare.fileKey === current.fileKey &&
      id.split(':', 2).join(':') === current.fileKey
    ) {
      this.spare = undefined;
      try {
        const next = renewSnapshot(spare, current);
        this.renewed++;
        return next;
      } catch {
        // its connection is closed: the file itself says what is wrong, if anything
      }
    }
    return this.openFile();
  }

  /** A state opened and not swapped in: its connection becomes the spare, or is closed. */
  private discard(s: Snapshot): void {
    if (!this.keepAsSpare(s)) s.close();
  }

  /** Keeps the connection of `s` (neither current nor held) as the spare when it fits. */
  private keepAsSpare(s: Snapshot): boolean {
    const current = this.snapshot;
    if (this.closed || this.spare !== undefined || current === undefined || current === s || s.fileKey !== current.fileKey || this.broken.has(s) || !s.db.open)
      return false;
    try {
      endRead(s);
    } catch {
      return false;
    }
    this.spare = s;
    return true;
  }

  private closeSpare(): void {
    const s = this.spare;
    this.spare = undefined;
    try {
      s?.close();
    } catch {
      /* closing anyway */
    }
  }

  current(): Snapshot | undefined {
    return this.snapshot;
  }

  /** What was not served, and why: the file at the path if it was refused, and what callers noted. */
  notServed(): RefusedFile[] {
    return [...(this.refusedHere === undefined ? [] : [this.refusedHere]), ...this.notes.values()];
  }

  /** Notes (or, with undefined, clears) a refusal under `key` that notServed() lists (serve --pull: a manifest). */
  note(key: string, refused: RefusedFile | undefined): void {
    if (refused === undefined) this.notes.delete(key);
    else this.notes.set(key, refused);
  }

  /** The file being served is being checked (checkCurrent): it must not take traffic yet. */
  checking(): boolean {
    return this.checkingNow !== undefined && this.checkingNow === this.snapshot;
  }

  /**
   * Runs the holder's check on the file being served — its start-up check, or that of a file
   * just added to a replica — with checking() true meanwhile. Rejects with the check's error (the
   * caller decides: serve stops, a replica of several drops the chain). Without a check, or
   * with nothing served, resolves at once.
   */
  async checkCurrent(): Promise<void> {
    const s = this.snapshot;
    if (s === undefined || this.opts.check === undefined) return;
    this.checkingNow = s;
    this.lastCheck = { state: 'running', since: new Date().toISOString() };
    try {
      this.passed(await this.opts.check(this.file));
    } catch (e) {
      this.checks.failed++;
      this.lastCheck = { state: 'failed', at: new Date().toISOString() };
      throw e;
    } finally {
      if (this.checkingNow === s) this.checkingNow = undefined;
    }
  }

  /** The last check of the file served: running, passed (read now, or a recorded check taken), failed, or none (never checked: --no-verify). */
  checkStatus(): CheckStatus {
    return this.lastCheck;
  }

  private passed(r: PagesChecked | void): void {
    const at = new Date().toISOString();
    if (r?.carried !== undefined) {
      this.checks.recorded++;
      this.lastCheck = { state: 'passed', how: 'recorded', at, checked_at: r.carried.checked_at, ms: r.carried.ms };
    } else {
      this.checks.read++;
      this.lastCheck = { state: 'passed', how: 'read', at, checked_at: at, ...(r ? { ms: Math.round(r.ms) } : {}) };
    }
  }

  /** current(), held open until release(): a swap never closes a snapshot a request is using. */
  acquire(): Snapshot | undefined {
    const s = this.snapshot;
    if (s) this.refs.set(s, (this.refs.get(s) ?? 0) + 1);
    return s;
  }

  release(s: Snapshot): void {
    const n = (this.refs.get(s) ?? 1) - 1;
    if (n > 0) {
      this.refs.set(s, n);
      return;
    }
    this.refs.delete(s);
    if (this.retired.has(s)) this.closeSnapshot(s);
  }

  /** requests currently holding `s` */
  inUse(s: Snapshot): number {
    return this.refs.get(s) ?? 0;
  }

  /**
   * Opens the file at the path again, checks it, and switches to it. Resolves false (and emits
   * 'refused') when it cannot be opened or fails its check; the current snapshot is kept. The
   * same file, unchanged, is not a swap. Reloads never overlap: one asked for while another
   * runs starts when it ends.
   */
  reload(reason: string): Promise<boolean> {
    if (this.reloading) {
      this.reloadAgain = reason;
      return this.reloading.then(() => this.reloading ?? this.reload(reason));
    }
    const run = this.reloadNow(reason).finally(() => {
      this.reloading = undefined;
      const again = this.reloadAgain;
      this.reloadAgain = undefined;
      if (again !== undefined) void this.reload(again);
      else this.afterReload?.();
    });
    this.reloading = run;
    return run;
  }

  private async reloadNow(reason: string): Promise<boolean> {
    if (this.closed) return false;
    const st = statOrUndefined(this.file);
    const id = st && identity(st);
    let next: Snapshot;
    try {
      next = this.openNext(id);
    } catch (e) {
      return this.refuse(id, e, reason);
    }
    const previous = this.snapshot;
    // another chain at the path: refused before its check (a replica never changes chains unless told)
    const other = this.otherChain(next);
    if (other !== undefined) {
      next.close();
      return this.refuse(id, other, reason);
    }
    if (previous && id !== undefined && sameInode(id, this.seen) && next.meta.snapshotId === previous.meta.snapshotId && previous.versionsHold()) {
      // the same file with the same data (e.g. a follower's WAL checkpoint moved its mtime) — and the state
      // served still reads it as it began (not a file in rollback-journal mode written since: versionsHold)
      this.seen = id;
      this.discard(next);
      return false;
    }
    // Written in place (same inode): only SQLite writes a live file in place (`follow`'s
    // transactions), so only a new file — renamed over the path — is checked here.
    const inPlace = previous !== undefined && id !== undefined && sameInode(id, this.seen);
    if (this.opts.check && !inPlace && !CHECKED_BY_WRITER.has(reason)) {
      try {
        this.passed(await this.opts.check(this.file));
        this.emit('checked', this.lastCheck);
      } catch (e) {
        this.checks.failed++;
        this.emit('checked', { state: 'failed', at: new Date().toISOString() });
        next.close();
        return this.refuse(id, e, reason);
      }
      const after = statOrUndefined(this.file);
      if (this.closed || !after || identity(after) !== id) {
        // replaced while being checked: what was checked may not be what was opened
        next.close();
        if (!this.closed) this.reloadAgain ??= reason;
        return false;
      }
    }
    this.seen = id;
    this.snapshot = next;
    this.chainId ??= next.meta.chainId;
    this.refusedHere = undefined;
    this.swaps++;
    this.fault = undefined;
    if (this.spare !== undefined && this.spare.fileKey !== next.fileKey) this.closeSpare();
    if (previous) this.retire(previous);
    this.emit('swap', next, previous, reason);
    return true;
  }

  private refuse(id: string | undefined, e: unknown, reason: string): false {
    this.seen = id;
    this.failedSwaps++;
    this.refusedHere = { file: this.file, error: e instanceof Error ? e.message : String(e) };
    this.emit('refused', e, reason);
    return false;
  }

  /**
   * A request on `s` met a storage error: the current snapshot is marked faulty (emits 'fault'
   * once per snapshot). Errors on a snapshot already swapped out change nothing.
   */
  reportFault(s: Snapshot, error: Error): void {
    this.broken.add(s);
    if (s !== this.snapshot || this.fault) return;
    this.fault = { snapshot: s, error };
    this.emit('fault', s, error);
  }

  /** the first storage error of the current snapshot, if a request met one */
  faulty(): Error | undefined {
    return this.fault?.error;
  }

  /** Reloads when the file at the path is replaced: fs.watch on its directory, plus a stat poll. */
  watch(opts: WatchOptions): void {
    const name = basename(this.file);
    const check = (): void => {
      const st = statOrUndefined(this.file);
      // Missing (between unlink and rename, or deleted): keep serving what is open.
      if (this.reloading || !st || identity(st) === this.seen) return;
      void this.reload('file replaced');
    };
    this.afterReload = check;
    try {
      this.watcher = watch(dirname(this.file), { persistent: false }, (_event, filename) => {
        if (filename !== null && filename !== name) return;
        // A rename arrives as a burst of events; look once it settles.
        clearTimeout(this.debounce);
        this.debounce = setTimeout(check, 20);
        this.debounce.unref();
      });
      this.watcher.on('error', (e) => this.emit('watch-error', e));
    } catch (e) {
      this.emit('watch-error', e);
    }
    if (opts.pollMs > 0) {
      this.poll = setInterval(check, opts.pollMs);
      this.poll.unref();
    }
  }

  /** Stops watching and closes every snapshot as soon as no request holds it. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.watcher?.close();
    clearInterval(this.poll);
    clearTimeout(this.debounce);
    const s = this.snapshot;
    this.snapshot = undefined;
    this.closeSpare();
    if (s) this.retire(s);
  }

  private retire(s: Snapshot): void {
    if (this.inUse(s) > 0) this.retired.add(s);
    else this.closeSnapshot(s);
  }

  private closeSnapshot(s: Snapshot): void {
    this.retired.delete(s);
    if (!this.keepAsSpare(s)) s.close();
    this.emit('closed', s);
  }
}
