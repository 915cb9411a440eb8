import type { CommandModule } from 'yargs';
import { choice, int, named } from '../settings/numbers';
import { checkOutputDir, describeError } from '../lib/paths';
import { GenerateProgress, GenerateSummary, generateDump } from '../generate';
import { DEMO_TXS, GENERATE_DEFAULTS, PRESETS, Preset, SCALE_TXS } from '../generate/params';
import { VM_TYPES, type VmType } from '../lib/vm';
import { nameEnvOrigin } from '../settings/command-line';

export interface GenerateOptions {
  vm: VmType;
  out: string;
  preset: Preset;
  txs?: number;
  holders?: number;
  nfts?: number;
  seed: number;
  gzip: boolean;
  force: boolean;
  quiet: boolean;
}

/** A rewritten stderr line (txs, blocks, txs/s) at most 5 times a second; only on a terminal. */
function terminalProgress(): { update: (p: GenerateProgress) => void; done: () => void } {
  const started = process.hrtime.bigint();
  let last = 0;
  let shown = false;
  const seconds = () => Number(process.hrtime.bigint() - started) / 1e9;
  return {
    update(p) {
      const s = seconds();
      if (s - last < 0.2 && p.blocks !== p.totalBlocks) return;
      last = s;
      shown = true;
      const rate = Math.round(p.txs / Math.max(s, 0.001));
      process.stderr.write(`\r\x1b[K  txs ${p.txs}/${p.totalTxs}  blocks ${p.blocks}/${p.totalBlocks}  ${rate} txs/s  ${s.toFixed(1)} s`);
    },
    done() {
      if (shown) process.stderr.write('\r\x1b[K');
    },
  };
}

/** Generates a synthetic chain dump; returns what was written (the CLI prints one line of it). */
export async function runGenerate(o: GenerateOptions): Promise<GenerateSummary & { seconds: number }> {
  // the dump directory, before any work (src/lib/paths.ts)
  checkOutputDir('--out', o.out, 'name the dump directory to write (it is created if missing)');
  const started = process.hrtime.bigint();
  const progress = !o.quiet && process.stderr.isTTY === true ? terminalProgress() : undefined;
  try {
    const summary = await generateDump({
      vm: o.vm,
      out: o.out,
      preset: o.preset,
      txs: o.txs,
      holders: o.holders,
      nfts: o.nfts,
      seed: o.seed,
      gzip: o.gzip,
      force: o.force,
      onProgress: progress?.update,
    });
    return { ...summary, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
  } finally {
    progress?.done();
  }
}

function describeSummary(s: GenerateSummary & { seconds: number }): string {
  const mb = (s.bytes / 1e6).toFixed(1);
  return (
    `indexer-api: generated ${s.chainId} (${s.vm}, ${s.preset}, seed ${s.seed}) in ${s.out}: ` +
    `${s.blocks} blocks, ${s.txs} txs, ${s.collections} collections, ${s.tokens} tokens, ` +
    `${mb} MB uncompressed in ${s.seconds.toFixed(1)} s`
  );
}

export const generateCommand: CommandModule<object, GenerateOptions> = {
  command: 'generate',
  describe: 'Write a synthetic, deterministic Initia rollup chain as an NDJSON dump (for demos and benchmarks)',
  builder: (y) =>
    y
      .options(
        named({
          vm: choice({ choices: VM_TYPES, demandOption: true, describe: 'Rollup VM to simulate (required)' }),
          out: { type: 'string', demandOption: true, describe: 'Dump directory to write (required; created if missing)' },
          preset: choice({
            choices: PRESETS,
            default: GENERATE_DEFAULTS.preset,
            describe: `Chain shape: demo (${DEMO_TXS} txs, ~400 blocks) or scale (${SCALE_TXS} txs, ~8 txs per block); default demo`,
          }),
          txs: int(
            { min: 0 },
            { defaultDescription: "the preset's", describe: `Number of txs, overriding the preset (default ${DEMO_TXS} for demo, ${SCALE_TXS} for scale)` },
          ),
          holders: int(
            { min: 0 },
            {
              defaultDescription: "the preset's",
              describe:
                'Rich-list holders per denom, on every VM (EVM: per ERC-20 contract; Wasm / Move: uinit, umin, uusdc); ' +
                "default: the preset's on EVM (400 demo, 100000 scale), none on Wasm / Move",
            },
          ),
          nfts: int(
            { min: 0 },
            {
              default: GENERATE_DEFAULTS.nfts,
              describe:
                "NFTs beyond those the txs mint, on every VM: spread over the collections, minted at each one's creation " +
                'without a tx of their own (for size benches); default 0',
            },
          ),
          seed: int(
            { min: Number.MIN_SAFE_INTEGER },
            { default: GENERATE_DEFAULTS.seed, describe: 'PRNG seed; the same options always give byte-identical files (default 1)' },
          ),
          gzip: { type: 'boolean', default: GENERATE_DEFAULTS.gzip, describe: 'Write NAME.ndjson.gz instead of NAME.ndjson (default false)' },
          force: { type: 'boolean', default: GENERATE_DEFAULTS.force, describe: 'Write into a non-empty --out, replacing its dump files (default false)' },
          quiet: { type: 'boolean', default: false, describe: 'No progress and no summary line (default false)' },
        }),
      )
      .example('$0 generate --vm evm --out ./demo-evm', 'write the EVM demo chain to ./demo-evm')
      .example('$0 generate --vm move --preset scale --txs 100000 --gzip --out ./bench', 'a 100k-tx Move chain, gzipped') as never,
  handler: async (argv) => {
    try {
      const summary = await runGenerate(argv);
      if (!argv.quiet) process.stderr.write(describeSummary(summary) + '\n');
    } catch (e) {
      process.stderr.write(`indexer-api generate: ${nameEnvOrigin(describeError(e))}\n`);
      process.exitCode = 1;
    }
  },
};
