import { existsSync } from 'node:fs';
import type { Logger } from '../lib/log';
import type { Manifest } from '../publish/manifest';
import type { HolderOptions, SnapshotHolder } from '../snapshot/holder';
import { openSnapshotFile } from '../snapshot/open';
import { Puller, PullStats, RefusedFile } from './puller';

/**
 * How `serve --pull` (src/commands/serve.ts) starts: which holder it serves from first, and the
 * puller that keeps --db current. Single process: the holder starts with the local file only if
 * it is as new as the manifest (or the manifest cannot be read); otherwise empty, /ready 503,
 * until the first verified download is swapped in. Cluster primary: pulls before forking (the
 * workers need a file), then keeps pulling; workers hot-swap on the rename (--watch).
 *
 * A manifest of another chain is refused (src/pull/puller.ts): logged at error, and listed by
 * /ready (`files_not_served`) while the current file keeps serving — through the holder's
 * note() in a single process, through the workers' holders in a cluster (onPullRefusal).
 */

export interface PullServeOptions {
  pull: string;
  pullIntervalMs: number;
  verify: boolean;
  /** serve --expect-chain-id: pull and serve only this chain */
  expectChainId?: string;
}

/** The key under which the holder lists a manifest refused by the puller. */
export const PULL_NOTE = 'pull';

const errorOf = (e: unknown): { error: string } => ({ error: e instanceof Error ? e.message : String(e) });

function logPuller(p: Puller, logger: Logger): void {
  p.on('installed', (m: Manifest, s: PullStats) =>
    logger.info('pulled snapshot', {
      height: m.height,
      file: m.file,
      sha256: m.sha256,
      bytes_transferred: s.transferred,
      resumed_from: s.resumedFrom,
      ms: s.ms,
    }),
  );
  p.on('failed', (e: unknown, retryInMs: number) => logger.warn('pull failed; still serving the current file', { ...errorOf(e), retry_in_ms: retryInMs }));
  p.on('skipped', (m: Manifest, why: string) => logger.warn('manifest not installed', { height: m.height, file: m.file, reason: why }));
  p.on('refused', (m: Manifest, why: string) =>
    logger.error('manifest refused: it names another chain; still serving the current file', {
      height: m.height,
      file: m.file,
      chain_id: m.chain_id,
      error: why,
    }),
  );
  p.on('accepted', (m: Manifest) => logger.info("the manifest names this replica's chain again", { height: m.height, file: m.file, chain_id: m.chain_id }));
}

/** Calls `onChange` with the puller's refusal whenever it changes (undefined: none). */
export function onPullRefusal(p: Puller, onChange: (r: RefusedFile | undefined) => void): void {
  p.on('refused', () => onChange(p.refused()));
  p.on('accepted', () => onChange(undefined));
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
  file: string,
  o: PullServeOptions,
  Holder: typeof SnapshotHolder,
  logger: Logger,
  holderOptions: HolderOptions = {},
): Promise<{ holder: SnapshotHolder; puller: Puller }> {
  let holder: SnapshotHolder | undefined;
  const puller = new Puller({
    manifestUrl: o.pull,
    db: file,
    intervalMs: o.pullIntervalMs,
    expectChainId: o.expectChainId,
    localHeight: () => holder?.current()?.meta.height,
    localChainId: () => holder?.current()?.meta.chainId,
    // the puller has quick-checked the file before the rename: the holder does not check it again
    install: async (m) => {
      await holder?.reload('pull');
      return holder?.current()?.meta.height === m.height;
    },
  });
  logPuller(puller, logger);
  onPullRefusal(puller, (r) => holder?.note(PULL_NOTE, r));
  if (existsSync(file)) {
    try {
      holder = Holder.open(file, holderOptions);
    } catch (e) {
      logger.warn('the local file does not open; waiting for a pull', errorOf(e));
    }
  }
  if (holder) {
    const m = await manifestNow(puller, logger);
    if (m && puller.needs(m)) {
      logger.info('the local file is older than the manifest; not ready until the new one is pulled', {
        local_height: holder.current()?.meta.height,
        height: m.height,
      });
      holder.close();
      holder = undefined;
    }
  }
  holder ??= Holder.empty(file, holderOptions);
  return { holder, puller };
}

/** The height and chain of the file at --db, if it opens (and is of the pinned chain). */
function localOf(file: string, expectChainId: string | undefined): { height: number; chainId: string } | undefined {
  try {
    const s = openSnapshotFile(file);
    s.close();
    if (expectChainId !== undefined && s.meta.chainId !== expectChainId) return undefined;
    return { height: s.meta.height, chainId: s.meta.chainId };
  } catch {
    return undefined;
  }
}

/**
 * Cluster primary: a current file at --db before the workers start, then a running puller.
 * `onRefusal`: the puller's refusal as it changes (the primary passes it to the workers).
 */
export async function pullBeforeFork(file: string, o: PullServeOptions, logger: Logger, onRefusal?: (r: RefusedFile | undefined) => void): Promise<Puller> {
  let local = localOf(file, o.expectChainId);
  const puller = new Puller({
    manifestUrl: o.pull,
    db: file,
    intervalMs: o.pullIntervalMs,
    expectChainId: o.expectChainId,
    localHeight: () => local?.height,
    localChainId: () => local?.chainId,
    install: (m) => {
      local = localOf(file, o.expectChainId);
      return local?.height === m.height;
    },
  });
  logPuller(puller, logger);
  if (onRefusal) onPullRefusal(puller, onRefusal);
  const height = local?.height;
  const m = height === undefined ? undefined : await manifestNow(puller, logger);
  if (height === undefined || (m && puller.needs(m))) {
    for (let attempt = 1; ; attempt++) {
      let wait: number;
      try {
        // a manifest of another chain, and no file of ours to serve: wait for one of ours
        if ((await puller.syncOnce()) !== 'refused' || local !== undefined) break;
        wait = o.pullIntervalMs;
      } catch (e) {
        wait = Math.min(o.pullIntervalMs, 1_000 * 2 ** (attempt - 1));
        logger.warn('first pull failed; the workers start once a file is in place', { ...errorOf(e), retry_in_ms: wait });
      }
      await new Promise((r) => setTimeout(r, wait));
    }
  }
  puller.start();
  return puller;
}
