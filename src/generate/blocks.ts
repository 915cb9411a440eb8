import { formatTime } from './chain';
import { ChainParams } from './params';
import { Prng } from './prng';

/**
 * Tx count of every block, summing exactly to `p.txs`: some empty blocks, a few bursts of
 * 40–70 txs, the rest spread with random weights. One int per block, so 1M txs cost ~0.5 MB.
 */
export function planBlocks(p: ChainParams, rng: Prng): Int32Array {
  const counts = new Int32Array(p.blocks);
  const weights = new Float64Array(p.blocks);
  let burstTotal = 0;
  let normal = 0;
  for (let i = 0; i < p.blocks; i++) {
    const r = rng.float();
    if (r < p.emptyBlockShare) continue;
    if (r < p.emptyBlockShare + p.burstBlockShare) {
      const size = rng.int(p.burstSize[0], p.burstSize[1]);
      if (burstTotal + size <= p.txs * 0.4) {
        counts[i] = size;
        burstTotal += size;
        continue;
      }
    }
    weights[i] = 0.3 + rng.float() * 1.4;
    normal++;
  }
  if (normal === 0) {
    weights[p.blocks - 1] = 1;
    counts[p.blocks - 1] = 0;
    burstTotal = counts.reduce((a, b) => a + b, 0);
  }
  const rest = p.txs - burstTotal;
  let total = 0;
  for (const w of weights) total += w;
  let assigned = 0;
  for (let i = 0; i < p.blocks; i++) {
    if (weights[i] === 0) continue;
    counts[i] = Math.floor((rest * weights[i]) / total);
    assigned += counts[i];
  }
  for (let left = rest - assigned; left > 0;) {
    const i = rng.int(0, p.blocks - 1);
    if (weights[i] === 0) continue;
    counts[i]++;
    left--;
  }
  return counts;
}

export interface BlockTime {
  ms: number;
  subNs: number;
  text: string;
  /** Whole milliseconds since the previous block (0 for the first). */
  blockTime: number;
}

/**
 * Header times ~500 ms apart with full nanosecond precision (CometBFT), now and then a stall of
 * a few seconds; a few land on whole milliseconds so trailing-zero trimming gets exercised.
 */
export class BlockClock {
  private ms: number;
  private subNs = 0;
  private first = true;

  constructor(genesisMs: number) {
    this.ms = genesisMs;
  }

  next(rng: Prng): BlockTime {
    let blockTime = 0;
    if (!this.first) {
      const stepNs = (rng.chance(0.01) ? rng.int(2000, 6000) : rng.int(460, 560)) * 1_000_000 + rng.int(0, 999_999);
      const prevMs = this.ms;
      const prevSub = this.subNs;
      const totalNs = prevSub + stepNs;
      this.ms = prevMs + Math.floor(totalNs / 1_000_000);
      this.subNs = rng.chance(0.05) ? 0 : totalNs % 1_000_000;
      blockTime = Math.floor(((this.ms - prevMs) * 1_000_000 + this.subNs - prevSub) / 1_000_000);
    }
    this.first = false;
    return { ms: this.ms, subNs: this.subNs, text: formatTime(this.ms, this.subNs), blockTime };
  }
}
