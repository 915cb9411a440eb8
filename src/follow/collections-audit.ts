/**
 * The collections audit (docs/follow.md "Cost"): a block batch reads only the NFT collections
 * that can have changed in it — those its txs name, new ones, those of changed NFTs — never the
 * whole list. A change no tx of the batch names (in principle: a burn or mint by a module in a
 * block hook) would go unseen, so every `--collections-audit-interval`, apart from the batches
 * and outside any write transaction, the source's whole collection list (counts and names) is
 * compared with ours; a collection that differs is read again by the next batch
 * (Follower.recheck), through the same guard as a named one (a count that does not add up: its
 * NFTs read whole). The audit writes nothing itself.
 *
 * It compares only while the follower is caught up: behind, the source's counts are ahead of ours
 * for every collection minted in since, and the batches that catch up read those anyway.
 */
import { type CollectionState, nftStateProbe } from '../snapshot/queries/nft-state';
import { openStore } from '../snapshot/store';
import type { CollectionLister } from '../sources/contracts';
import type { StopFlag } from './richlist-refresh';

export interface CollectionsAuditState {
  audits: number;
  failures: number;
  /** collections found different from the source, over all audits */
  mismatches: number;
}

export interface CollectionsAuditOptions {
  db: string;
  lister: CollectionLister;
  intervalMs: number;
  maxBackoffMs: number;
  log: (line: string) => void;
  /** a failed audit's line (follow: level warn); default `log` */
  warn?: (line: string) => void;
  /** whether the follower is caught up with the source (comparing is meaningful only then) */
  caughtUp: () => boolean;
  /** hands the differing collections to the next batch */
  recheck: (hexes: readonly string[]) => void;
}

/** The collections (lower-case hex) whose count or names differ, or that only one side has, each with how. */
function differingCollections(theirs: ReadonlyMap<string, CollectionState>, ours: ReadonlyMap<string, CollectionState>): Map<string, string> {
  const out = new Map<string, string>();
  for (const [hex, t] of theirs) {
    const m = ours.get(hex);
    if (!m) out.set(hex, 'not ours');
    else if (m.count !== t.count) out.set(hex, `${t.count} NFTs, ours ${m.count}`);
    else if (m.name !== t.name || m.originName !== t.originName) out.set(hex, `named ${JSON.stringify(t.name)}, ours ${JSON.stringify(m.name)}`);
  }
  for (const hex of ours.keys()) if (!theirs.has(hex)) out.set(hex, 'not at the source');
  return out;
}

export class CollectionsAudit {
  readonly state: CollectionsAuditState = { audits: 0, failures: 0, mismatches: 0 };
  /** the last differences logged (the same ones, still waiting for a batch, are not logged again) */
  private lastLogged = '';

  constructor(private readonly o: CollectionsAuditOptions) {}

  /** Audits at once (once caught up), then every intervalMs, until `stop`. */
  async run(stop: StopFlag): Promise<void> {
    let failing = 0;
    while (!stop.stopped) {
      if (!this.o.caughtUp()) {
        await stop.sleep(Math.min(this.o.intervalMs, 1000));
        continue;
      }
      try {
        await this.auditOnce();
        failing = 0;
      } catch (e) {
        this.state.failures++;
        failing++;
        const wait = Math.min(this.o.maxBackoffMs, Math.max(this.o.intervalMs / 10, 1000) * 2 ** (failing - 1));
        (this.o.warn ?? this.o.log)(`follow: collections audit failed: ${(e as Error).message.split('\n')[0]} (retrying in ${(wait / 1000).toFixed(1)} s)`);
        await stop.sleep(wait);
        continue;
      }
      await stop.sleep(this.o.intervalMs);
    }
  }

  /** One comparison; returns the differing collections (handed to the next batch). */
  async auditOnce(): Promise<string[]> {
    const started = Date.now();
    const theirs = await this.o.lister.read();
    const db = openStore(this.o.db, 'liveRead');
    let ours: Map<string, CollectionState>;
    try {
      ours = nftStateProbe(db).collections();
    } finally {
      db.close();
    }
    const off = differingCollections(theirs, ours);
    this.state.audits++;
    this.state.mismatches += off.size;
    const text = [...off].map(([h, why]) => `${h} ${why}`).join('\n');
    if (off.size > 0) this.o.recheck([...off.keys()]);
    if (off.size > 0 && text !== this.lastLogged) {
      const shown = [...off]
        .slice(0, 5)
        .map(([h, why]) => `0x${h}: ${why}`)
        .join('; ');
      this.o.log(
        `follow: collections audit: ${off.size} of ${theirs.size} collection${theirs.size === 1 ? '' : 's'} differ from ${this.o.lister.describe} ` +
          `(${shown}${off.size > 5 ? '; …' : ''}); the next batch reads them again (${Date.now() - started} ms)`,
      );
    }
    this.lastLogged = text;
    return [...off.keys()];
  }
}
