import type { VmType } from '../lib/vm';

export type Preset = 'demo' | 'scale';

export const PRESETS: readonly Preset[] = ['demo', 'scale'];

/** `generate`'s defaults, declared once: its option table shows them, generateDump applies them. */
export const GENERATE_DEFAULTS = { preset: 'demo' as Preset, seed: 1, nfts: 0, gzip: false, force: false };

/** Everything that shapes a generated chain; a pure function of (vm, preset, txs, seed). */
export interface ChainParams {
  vm: VmType;
  preset: Preset;
  seed: number;
  chainId: string;
  prefix: string;
  txs: number;
  blocks: number;
  validators: number;
  accounts: number;
  hotAccounts: number;
  /** Share of txs signed by the hot accounts together. */
  hotShare: number;
  emptyBlockShare: number;
  burstBlockShare: number;
  burstSize: [number, number];
  collections: number;
  /** Share of txs that mint NFTs, and the tokens minted per such tx. */
  mintShare: number;
  mintBatch: [number, number];
  failShare: number;
  /** Rich-list holders per denom (the preset's: EVM only; generate --holders sets it on every VM). */
  richHolders: number;
  genesisMs: number;
}

export const DEMO_TXS = 3000;
export const SCALE_TXS = 1_000_000;
export const DEMO_COMMIT = '4f1c2e9a7b3d5e6f8091a2b3c4d5e6f708192a3b';
export const DEMO_SOURCE = 'indexer-api demo generator';

export function resolveParams(vm: VmType, preset: Preset, txs: number | undefined, seed: number): ChainParams {
  const demo = preset === 'demo';
  const n = txs ?? (demo ? DEMO_TXS : SCALE_TXS);
  const chainId = `mini${vm}-${preset}-1`;
  return {
    vm,
    preset,
    seed,
    chainId,
    prefix: 'init',
    txs: n,
    blocks: Math.max(1, Math.round(n / (demo ? 7.5 : 8))),
    validators: demo ? 3 : 5,
    accounts: demo ? 90 : Math.min(200_000, Math.max(500, Math.round(n / 50))),
    hotAccounts: demo ? 4 : 3,
    hotShare: demo ? 0.4 : 0.15,
    emptyBlockShare: demo ? 0.08 : 0.05,
    burstBlockShare: demo ? 0.02 : 0.01,
    burstSize: [40, 70],
    collections: Math.max(1, Math.min(demo ? 7 : 200, Math.floor(n / 40))),
    mintShare: 0.04,
    mintBatch: demo ? [1, 12] : [1, 4],
    failShare: 0.03,
    richHolders: demo ? 400 : 100_000,
    genesisMs: Date.UTC(2025, 4, 1, 10, 0, 0),
  };
}
