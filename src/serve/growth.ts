/**
 * A growing demo chain (`serve --start-height H --block-ms MS`, docs/follow.md "Watch it work"):
 * the snapshot is served whole, but its `/status` says height H at start and one block more
 * every MS, up to the file's own height. Everything else answers as it always does — every
 * block, tx, list and total of the file, exact — so a `follow` of this server sees a chain that
 * grows one block per interval and reads each new height from the answers that were there all
 * along; the replica's explorer and response cache then move as they do beside a live chain.
 * Over any snapshot file, with no process in between (bench/live-wallets.ts had a proxy).
 *
 * The height is a function of the clock (H + elapsed / MS), not a timer, and one process serves
 * (the CLI runs a growing chain with `--workers 1`): two workers started a moment apart would
 * answer heights a block apart, and a follower seeing its source go down stops.
 */
import { statusJson } from '../wire/status';
import type { Snapshot } from '../snapshot/open';

import type { Growth } from '../settings/serve';

/**
 * The /status body of a snapshot while the chain grows: rendered once per block (cheap per
 * request: a clock read and a comparison), the heights of its extension fields capped alike.
 * undefined once the chain has grown to the file's own height: /status is the file's as usual.
 */
export function growingStatus(g: Growth, now: () => number = Date.now): (s: Snapshot) => string | undefined {
  const started = now();
  let last: { s: Snapshot; height: number; body: string } | undefined;
  return (s) => {
    const top = s.meta.height;
    const height = Math.min(top, g.startHeight + Math.floor((now() - started) / g.blockMs));
    if (height >= top) return undefined;
    if (last?.s === s && last.height === height) return last.body;
    const m = s.meta;
    const cap = (h: number): number => Math.min(h, height);
    const ext = m.extensions.evm_ret_cleanup_height;
    const body = statusJson({
      ...m,
      height,
      internalTxHeight: cap(m.internalTxHeight),
      richListHeight: cap(m.richListHeight),
      extensions: ext === undefined ? m.extensions : { ...m.extensions, evm_ret_cleanup_height: cap(ext) },
    });
    last = { s, height, body };
    return body;
  };
}
