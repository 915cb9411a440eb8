import { existsSync } from 'node:fs';
import type { Logger } from '../http/log';
import type { Manifest } from '../publish/manifest';
import type { SnapshotHolder } from '../snapshot/holder';
import { openSnapshotFile } from '../snapshot/open';
import { Puller, PullStats } from './puller';

/**
 * How `serve --pull` (src/commands/serve.ts) starts: which holder it serves from first, and the
 * puller that keeps --db current. Single process: the holder starts with the local file only if
 * it is as new as the manifest (or the manifest cannot be read); otherwise empty, /ready 503,
 * until the first verified download is swapped in. Cluster primary: pulls before forking (the
 * workers need a file), then keeps pulling; workers hot-swap on the rename (--watch).
 */

export interface PullServeOptions {
  pull: string;
  pullIntervalMs: number;
  verify: boolean;
}

const errorOf = (e: unknown): { error: string } => ({ error: e instanceof Error ? e.message : String(e) });

function logPuller(p: Puller, logger: Logger): void {
  p.on('installed', (m: Manifest, s: PullStats) => logger.info('pulled snapshot', {
    height: m.height, file: m.file, sha256: m.sha256, bytes_transferred: s.transferred, resumed_from: s.resumedFrom, ms: s.ms,
  }));
  p.on('failed', (e: unknown, retryInMs: number) => logger.warn('pull failed; still serving the current file', { ...errorOf(e), retry_in_ms: retryInMs }));
  p.on('skipped', (m: Manifest, why: string) => logger.warn('manifest not installed', { height: m.height, file: m.file, reason: why }));
}

/** The manifest if it can be read now; undefined (logged) if not. */
async function manifestNow(p: Puller, logger: Logger): Promise<Manifest | undefined> {
  try {
    return await p.fetchManifest();
  } catch (e) {
    logger.warn('cannot read the manifest; serving the local file until it can be', errorOf(e));
    return undefined;
  }
}

/** Single process: the holder to serve from and its (not yet started) puller. */
export async function holderForPull(
  file: string, o: PullServeOptions, Holder: typeof SnapshotHolder, logger: Logger,
  check?: (file: string) => Promise<void>,
): Promise<{ holder: SnapshotHolder; puller: Puller }> {
  let holder: SnapshotHolder | undefined;
  const puller = new Puller({
    manifestUrl: o.pull, db: file, intervalMs: o.pullIntervalMs,
    localHeight: () => holder?.current()?.meta.height,
    // the puller has quick-checked the file before the rename: the holder does not check it again
    install: async (m) => {
      await holder?.reload('pull');
      return holder?.current()?.meta.height === m.height;
    },
  });
  logPuller(puller, logger);
  if (existsSync(file)) {
    try {
      holder = Holder.open(file, { check });
    } catch (e) {
      logger.warn('the local file does not open; waiting for a pull', errorOf(e));
    }
  }
  if (holder) {
    const m = await manifestNow(puller, logger);
    if (m && puller.needs(m)) {
      logger.info('the local file is older than the manifest; not ready until the new one is pulled', { local_height: holder.current()?.meta.height, height: m.height });
      holder.close();
      holder = undefined;
    }
  }
  holder ??= Holder.empty(file, { check });
  return { holder, puller };
}

function heightOf(file: string): number | undefined {
  try {
    const s = openSnapshotFile(file);
    s.close();
    return s.meta.height;
  } catch {
    return undefined;
  }
}

/** Cluster primary: a current file at --db before the workers start, then a running puller. */
export async function pullBeforeFork(file: string, o: PullServeOptions, logger: Logger): Promise<Puller> {
  let height = heightOf(file);
  const puller = new Puller({
    manifestUrl: o.pull, db: file, intervalMs: o.pullIntervalMs,
    localHeight: () => height,
    install: (m) => { height = heightOf(file); return height === m.height; },
  });
  logPuller(puller, logger);
  const m = height === undefined ? undefined : await manifestNow(puller, logger);
  if (height === undefined || (m && puller.needs(m))) {
    for (let attempt = 1; ; attempt++) {
      try {
        await puller.syncOnce();
        break;
      } catch (e) {
        const wait = Math.min(o.pullIntervalMs, 1_000 * 2 ** (attempt - 1));
        logger.warn('first pull failed; the workers start once a file is in place', { ...errorOf(e), retry_in_ms: wait });
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }
  puller.start();
  return puller;
}
