import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { createReadStream, createWriteStream, existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { ensureParentDir } from '../snapshot/store';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { fsyncPath, hashFile } from '../publish/files';
import { Manifest, parseManifest } from '../publish/manifest';
import { READABLE_SCHEMA_VERSIONS, readableSchema } from '../snapshot/schema';
import { CheckedFile, quickCheckFile } from './check';
import { downloadRanged } from './download';

/**
 * `serve --pull`: keeps the file at --db equal to what a publish directory's manifest names
 * (docs/scaling.md). Each newer manifest's file is downloaded (resumable) next to --db,
 * checked — transferred sha256, decompressed sha256 and size, PRAGMA quick_check in a child,
 * height, chain id — and only then renamed over --db and handed to `install` (the hot swap). Any
 * failure leaves --db and what is serving untouched and is retried with backoff.
 *
 * A replica never changes chains unless told to: a manifest naming another chain than the one
 * it serves (or was pinned to, `expectChainId`; or last pulled, the sidecar's) is refused —
 * nothing is downloaded, the current file keeps serving — until the manifest names its chain
 * again.
 *
 * Events: 'installed' (manifest, PullStats), 'failed' (error, retryInMs), 'skipped' (manifest,
 * why) — a manifest older than what is serving is never installed —, 'refused' (manifest, why,
 * RefusedFile: a manifest of another chain, once per manifest), 'accepted' (manifest: the
 * manifest names this replica's chain again after a refusal).
 */

export interface PullerOptions {
  manifestUrl: string;
  db: string;
  intervalMs: number;
  /** height of the snapshot serving now; undefined while none is */
  localHeight: () => number | undefined;
  /** chain id of the snapshot serving now; undefined while none is */
  localChainId?: () => string | undefined;
  /** pull only this chain (serve --expect-chain-id) */
  expectChainId?: string;
  /** called after the verified file was renamed over --db; false = the swap was refused */
  install: (m: Manifest) => boolean | Promise<boolean>;
  /** first retry delay; doubles per failure up to intervalMs (default 1 s) */
  minBackoffMs?: number;
  fetchTimeoutMs?: number;
  idleTimeoutMs?: number;
  /** how a downloaded file is checked (default: quickCheckFile); resolves with its height and chain id */
  check?: (file: string, signal?: AbortSignal) => Promise<CheckedFile>;
}

/** A manifest's file not pulled, and why (serve's /ready lists it). */
export interface RefusedFile {
  file: string;
  error: string;
}

export interface PullStats {
  /** bytes received for this file (all attempts of the last call; resumed bytes not counted) */
  transferred: number;
  resumedFrom: number;
  ms: number;
}

export class Puller extends EventEmitter {
  /** sha256 of the file at --db as installed by a pull (the sidecar <db>.manifest.json) */
  private installedSha: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly stop = new AbortController();
  private failures = 0;
  private lastSkipped: string | undefined;
  /** the manifest refused (another chain), until one of this replica's chain comes */
  private refusal: (RefusedFile & { sha256: string }) | undefined;
  /** the chain id of the file a pull installed last (the sidecar), when --db still exists */
  private installedChain: string | undefined;

  constructor(private readonly o: PullerOptions) {
    super();
    // --db pulled/local.sqlite in a fresh folder: the download goes beside --db
    ensureParentDir(o.db);
    const sidecar = this.readSidecar();
    this.installedSha = sidecar?.sha256;
    this.installedChain = sidecar?.chain_id;
  }

  /** The manifest refused now (another chain), if one is. */
  refused(): RefusedFile | undefined {
    return this.refusal && { file: this.refusal.file, error: this.refusal.error };
  }

  /** The chain this replica takes, and who said so: the pin, the file serving, or the file it last pulled. */
  private expectedChain(): { id: string; by: string } | undefined {
    if (this.o.expectChainId !== undefined) return { id: this.o.expectChainId, by: ' (--expect-chain-id)' };
    const serving = this.o.localChainId?.();
    if (serving !== undefined) return { id: serving, by: '' };
    if (this.installedChain !== undefined) return { id: this.installedChain, by: ` (the chain last pulled into ${this.o.db})` };
    return undefined;
  }

  /** Why `m` must not be pulled: it names another chain than this replica's. */
  private otherChain(m: Manifest): string | undefined {
    const want = this.expectedChain();
    if (want === undefined || m.chain_id === want.id) return undefined;
    return (
      `${this.o.manifestUrl} names chain ${JSON.stringify(m.chain_id)} (height ${m.height}), ` +
      `but this replica serves chain ${JSON.stringify(want.id)}${want.by}: ` +
      `not pulled, the current file keeps serving (a replica never changes chains unless told: ` +
      `to serve ${JSON.stringify(m.chain_id)}, restart serve with --expect-chain-id ${m.chain_id})`
    );
  }

  private get sidecar(): string {
    return `${this.o.db}.manifest.json`;
  }

  private readSidecar(): Manifest | undefined {
    if (!existsSync(this.o.db)) return undefined;
    try {
      return parseManifest(readFileSync(this.sidecar, 'utf8'), this.sidecar);
    } catch {
      return undefined;
    }
  }

  async fetchManifest(): Promise<Manifest> {
    const signal = AbortSignal.any([this.stop.signal, AbortSignal.timeout(this.o.fetchTimeoutMs ?? 5_000)]);
    const res = await fetch(this.o.manifestUrl, { signal, cache: 'no-store', headers: { 'cache-control': 'no-cache' } });
    if (res.status !== 200) throw new Error(`${this.o.manifestUrl}: HTTP ${res.status}`);
    const m = parseManifest(await res.text(), this.o.manifestUrl);
    if (!readableSchema(m.schema_version)) {
      throw new Error(
        `${this.o.manifestUrl} offers schema version ${m.schema_version}; this indexer-api reads versions ${READABLE_SCHEMA_VERSIONS.join(' and ')}`,
      );
    }
    return m;
  }

  /** Whether `m` should replace what is serving: another file of this replica's chain, not older. */
  needs(m: Manifest): boolean {
    // another chain never replaces anything (syncOnce refuses it, and says so)
    if (this.otherChain(m) !== undefined) return false;
    const h = this.o.localHeight();
    // Nothing serving (no file, or one that does not open, whatever the sidecar says): pull.
    if (h === undefined) return true;
    if (m.sha256 === this.installedSha) return false;
    if (m.height > h) return true;
    // Same height, other content (re-imported): only over a file a pull installed.
    if (m.height === h && this.installedSha !== undefined) return true;
    if (this.lastSkipped !== m.sha256) {
      this.lastSkipped = m.sha256;
      this.emit('skipped', m, `manifest height ${m.height} is not newer than the serving height ${h}`);
    }
    return false;
  }

  /** One poll: fetch the manifest and, if it names a newer file of this replica's chain, download, check, install. */
  async syncOnce(): Promise<'installed' | 'current' | 'refused'> {
    const m = await this.fetchManifest();
    const other = this.otherChain(m);
    if (other !== undefined) {
      const first = this.refusal?.sha256 !== m.sha256;
      this.refusal = { file: new URL(m.file, this.o.manifestUrl).toString(), error: other, sha256: m.sha256 };
      if (first) this.emit('refused', m, other, this.refused());
      return 'refused';
    }
    if (this.refusal !== undefined) {
      this.refusal = undefined;
      this.emit('accepted', m);
    }
    if (!this.needs(m)) return 'current';
    const started = Date.now();
    const got = await this.fetchAndCheck(m);
    if (this.stop.signal.aborted) throw new Error('stopped');
    renameSync(got, this.o.db);
    fsyncPath(dirname(this.o.db));
    writeFileSync(`${this.sidecar}.tmp`, `${JSON.stringify(m, null, 2)}\n`);
    renameSync(`${this.sidecar}.tmp`, this.sidecar);
    this.installedSha = m.sha256;
    this.installedChain = m.chain_id;
    const stats = { ...this.lastDownload, ms: Date.now() - started };
    if (!(await this.o.install(m))) throw new Error(`the verified file for height ${m.height} was refused by the hot swap`);
    this.emit('installed', m, stats);
    return 'installed';
  }

  private lastDownload = { transferred: 0, resumedFrom: 0 };

  /** Downloads and checks m's file; resolves with the path of the checked SQLite file. */
  private async fetchAndCheck(m: Manifest): Promise<string> {
    const dir = dirname(this.o.db);
    const part = `${this.o.db}.part-${m.file}`;
    const ready = `${this.o.db}.checking-${m.file.replace(/\.gz$/, '')}`;
    // Parts of files no manifest names any more, and checks a killed process left behind.
    const base = basename(this.o.db);
    for (const n of readdirSync(dir)) {
      const stale = (n.startsWith(`${base}.part-`) && join(dir, n) !== part) || n.startsWith(`${base}.checking-`);
      if (stale) rmSync(join(dir, n), { force: true });
    }
    const url = new URL(m.file, this.o.manifestUrl).toString();
    const d = await downloadRanged(url, part, m.file_size, { idleTimeoutMs: this.o.idleTimeoutMs ?? 15_000, signal: this.stop.signal });
    this.lastDownload = d;
    try {
      const stored = await hashFile(part);
      if (stored.sha256 !== m.file_sha256) {
        rmSync(part, { force: true });
        throw new Error(`${url}: sha256 ${stored.sha256} ≠ manifest ${m.file_sha256} (dropped; will download again)`);
      }
      if (m.encoding === 'gzip') {
        const h = createHash('sha256');
        let size = 0;
        const tap = new Transform({
          transform(chunk: Buffer, _enc, cb) {
            h.update(chunk);
            size += chunk.length;
            cb(null, chunk);
          },
        });
        await pipeline(createReadStream(part), createGunzip(), tap, createWriteStream(ready), { signal: this.stop.signal });
        const sha = h.digest('hex');
        if (sha !== m.sha256 || size !== m.size)
          throw new Error(`${url}: decompressed to ${size} bytes sha256 ${sha}, manifest says ${m.size} bytes ${m.sha256}`);
        rmSync(part, { force: true });
      } else {
        renameSync(part, ready);
      }
      const found = await (this.o.check ?? quickCheckFile)(ready, this.stop.signal);
      if (found.height !== m.height) throw new Error(`${url}: the file's height is ${found.height}, the manifest says ${m.height}`);
      // the manifest's chain was accepted above; the file must be of that chain too
      if (found.chainId !== m.chain_id)
        throw new Error(`${url}: the file is chain ${JSON.stringify(found.chainId)}, the manifest says ${JSON.stringify(m.chain_id)}`);
      fsyncPath(ready);
      return ready;
    } catch (e) {
      rmSync(ready, { force: true });
      throw e;
    }
  }

  /** Polls every intervalMs from now on; failures retry sooner, with doubling backoff. */
  start(): void {
    const tick = async (): Promise<void> => {
      let delay = this.o.intervalMs;
      try {
        await this.syncOnce();
        this.failures = 0;
      } catch (e) {
        if (this.stop.signal.aborted) return;
        this.failures++;
        const base = Math.min(this.o.intervalMs, (this.o.minBackoffMs ?? 1_000) * 2 ** (this.failures - 1));
        // ±20 %: replicas that failed together do not retry together.
        delay = Math.round(base * (0.8 + 0.4 * Math.random()));
        this.emit('failed', e, delay);
      }
      if (this.stop.signal.aborted) return;
      this.timer = setTimeout(() => {
        void tick();
      }, delay);
    };
    this.timer = setTimeout(() => {
      void tick();
    }, 0);
  }

  close(): void {
    this.stop.abort(new Error('stopped'));
    clearTimeout(this.timer);
  }
}
