/**
 * `serve` on a file that `follow` writes (docs/follow.md).
 *
 * - watchCommits: a small read-only probe connection asks SQLite `PRAGMA data_version` every
 *   `pollMs` (a few microseconds; it changes when another connection commits). On a change
 *   whose snapshot_id differs from the one served, the holder reloads: a new Snapshot — one
 *   read transaction on a connection — becomes current, requests in flight finish on the old
 *   one. The new state is begun on the spare connection the holder keeps for the file (the
 *   previous state's, once released: its statements stay prepared, src/snapshot/holder.ts), so
 *   a batch costs a serve process a new read transaction and a read of the meta, not an open.
 *   The follower writes a new snapshot_id and a change record with every batch; the response
 *   cache drops what the record names (src/cache/store.ts), and ETags are hashes of the
 *   answers' versions or bytes, so both change exactly when the data does. A state of a file in
 *   rollback-journal mode (read statement by statement) that the file has moved under — `follow`
 *   turned it to WAL, or committed without a new snapshot id — is begun again likewise
 *   (Snapshot.versionsHold in src/snapshot/open.ts).
 * - newestBlockAgeSeconds / lagMetrics / staleness: the age of the newest block, for /metrics
 *   and `serve --max-lag-s` (/ready answers 503 on a stale replica).
 */
import type Database from 'better-sqlite3';
import type { ServeSettings } from '../settings/serve';
import { Gauge, Registry } from 'prom-client';
import type { SnapshotHolder } from '../snapshot/holder';
import type { Snapshot } from '../snapshot/open';
import { newestBlockTimeUs, prepareCommitProbe, type CommitProbe } from '../snapshot/queries/tip';
import { openStore } from '../snapshot/store';

export interface CommitWatch {
  close(): void;
}

/** Reloads `holder` when another process commits a new batch to its file. */
export function watchCommits(holder: SnapshotHolder, pollMs: number, onError?: (e: unknown) => void): CommitWatch {
  let probe: Database.Database | undefined;
  let q: CommitProbe | undefined;
  let last: number | undefined;
  const open = (): void => {
    try {
      probe?.close();
    } catch {
      /* reopening anyway */
    }
    probe = openStore(holder.file, 'liveRead');
    q = prepareCommitProbe(probe);
    last = q.dataVersion();
  };
  const check = (): void => {
    try {
      if (!probe) open();
      const v = (q as CommitProbe).dataVersion();
      const current = holder.current();
      // a state read outside a read transaction whose file was written since (turned to WAL by a
      // follower with no new batch yet, say) is begun again: its answers have the ETags of their bytes meanwhile
      const moved = current !== undefined && !current.versionsHold();
      if (v === last && !moved) return;
      last = v;
      if (moved || (q as CommitProbe).snapshotId() !== current?.meta.snapshotId) holder.reload('new batch');
    } catch (e) {
      // The file was replaced or is briefly unreadable: reopen on the next tick.
      try {
        probe?.close();
      } catch {
        /* gone */
      }
      probe = undefined;
      onError?.(e);
    }
  };
  // Another file renamed over the path (hot swap): watch that one from now on.
  const onSwap = (_next: Snapshot, _prev: Snapshot | undefined, reason: string): void => {
    if (reason === 'new batch') return;
    try {
      probe?.close();
    } catch {
      /* gone */
    }
    probe = undefined;
  };
  holder.on('swap', onSwap);
  // The first probe opens now, beside the holder's open, not a poll later: data_version counts
  // from the probe's open, so a batch committed before it would never be seen. One committed
  // between the two opens is seen by the snapshot id (the same file: nothing has renamed it yet).
  try {
    open();
    const served = holder.current()?.meta.snapshotId;
    if (served !== undefined && (q as CommitProbe).snapshotId() !== served) void holder.reload('new batch');
  } catch (e) {
    probe = undefined;
    onError?.(e);
  }
  const timer = setInterval(check, pollMs);
  timer.unref();
  return {
    close() {
      clearInterval(timer);
      holder.off('swap', onSwap);
      try {
        probe?.close();
      } catch {
        /* gone */
      }
      probe = undefined;
    },
  };
}

const newest = new WeakMap<Snapshot, number>();

/** Unix seconds of the snapshot's newest block (0 without blocks); one query per snapshot. */
function newestBlockSeconds(s: Snapshot): number {
  let t = newest.get(s);
  if (t === undefined) {
    const us = newestBlockTimeUs(s.db);
    t = us === undefined ? 0 : us / 1e6;
    newest.set(s, t);
  }
  return t;
}

function newestBlockAgeSeconds(s: Snapshot, nowMs = Date.now()): number {
  const t = newestBlockSeconds(s);
  return t === 0 ? Infinity : nowMs / 1000 - t;
}

/** serve --max-lag-s: why /ready should answer 503, or undefined when the snapshot is fresh enough. */
export function staleness(settings: Pick<ServeSettings, 'maxLagS'>): ((s: Snapshot) => string | undefined) | undefined {
  const { maxLagS } = settings;
  if (maxLagS === undefined) return undefined;
  return (s) => {
    const age = newestBlockAgeSeconds(s);
    return age > maxLagS ? `newest block (height ${s.meta.height}) is ${age.toFixed(1)} s old, over --max-lag-s ${maxLagS}` : undefined;
  };
}

/**
 * The newest block's timestamp and age on /metrics; `chains`: a replica of several (one series
 * per chain, labelled `chain_id`).
 */
export function registerLagMetrics(
  registry: Registry,
  current: () => Snapshot | undefined,
  chains?: () => { id: string; current(): Snapshot | undefined }[],
): void {
  const gauge = (name: string, help: string, value: (s: Snapshot) => number | undefined, aggregator: 'max' | 'min'): void => {
    new Gauge({
      name,
      help,
      registers: [registry],
      aggregator,
      labelNames: chains ? ['chain_id'] : [],
      collect() {
        this.reset();
        if (chains) {
          for (const c of chains()) {
            const s = c.current();
            const v = s && value(s);
            if (v !== undefined) this.set({ chain_id: c.id }, v);
          }
          return;
        }
        const s = current();
        const v = s && value(s);
        if (v !== undefined) this.set(v);
      },
    });
  };
  gauge(
    'indexer_api_newest_block_timestamp_seconds',
    'Timestamp of the newest block of the served snapshot, Unix seconds',
    (s) => newestBlockSeconds(s),
    'max',
  );
  gauge(
    'indexer_api_newest_block_age_seconds',
    'Seconds since the newest block of the served snapshot (its lag behind the chain when followed)',
    (s) => {
      const age = newestBlockAgeSeconds(s);
      return Number.isFinite(age) ? age : undefined;
    },
    'min',
  );
  // follow refreshes the rich list apart from the blocks (docs/follow.md "The rich list"): how far behind it is.
  gauge(
    'indexer_api_rich_list_height',
    'The height the rich list of the served snapshot reflects (/status rich_list_height; absent when 0)',
    (s) => (s.meta.richListHeight > 0 ? s.meta.richListHeight : undefined),
    'max',
  );
  gauge(
    'indexer_api_rich_list_lag_blocks',
    'Height of the served snapshot minus the height its rich list reflects (absent without a rich-list height)',
    (s) => (s.meta.richListHeight > 0 ? Math.max(0, s.meta.height - s.meta.richListHeight) : undefined),
    'min',
  );
}
