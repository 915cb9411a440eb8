/**
 * A generated chain as it was at a height, and a replica one height below it, for
 * bench/follow.ts (bench/README.md, "Follow, round 3"):
 *
 *   node build/bench/chain-at.js --vm wasm --txs 10000 --height 1243 --out DIR
 *
 * writes DIR/at-H.sqlite (the `scale` chain of --txs txs as it was at H: same blocks and txs,
 * the NFT state of that height) and DIR/work/replica-<its tx count>.sqlite (the same at H - 1),
 * both imported from generator dumps (`generateDump`'s untilHeight). Then
 *
 *   node build/bench/follow.js --snapshot DIR/at-H.sqlite --work DIR/work
 *
 * follows the one block H on a replica holding the NFT state of H - 1 (its own replica, crawled
 * from the whole chain, already holds the final state), so the block's NFT changes are real.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { runImport } from '../src/import/run';
import { generateDump } from '../src/generate/index';
import type { VmType } from '../src/lib/vm';
import { openSnapshot } from '../src/snapshot/open';

const argv = process.argv;
const arg = (name: string): string => {
  const i = argv.indexOf(`--${name}`);
  if (i < 0 || argv[i + 1] === undefined) throw new Error(`--${name} is required`);
  return argv[i + 1];
};

async function main(): Promise<void> {
  const vm = arg('vm') as VmType;
  const txs = Number(arg('txs'));
  const height = Number(arg('height'));
  const out = arg('out');
  mkdirSync(join(out, 'work'), { recursive: true });
  for (const at of [height, height - 1]) {
    const dump = join(out, `dump-${at}`);
    await generateDump({ vm, preset: 'scale', txs, untilHeight: at, out: dump, force: true });
    await runImport({ fromDump: dump, out: join(out, `at-${at}.sqlite`), force: true, quiet: true, json: false });
  }
  const s = openSnapshot(join(out, `at-${height}.sqlite`));
  try {
    copyFileSync(join(out, `at-${height - 1}.sqlite`), join(out, 'work', `replica-${s.meta.countTxs}.sqlite`));
    process.stdout.write(`${join(out, `at-${height}.sqlite`)}: height ${s.meta.height}, ${s.meta.countTxs} txs; replica at ${height - 1}\n`);
  } finally {
    s.close();
  }
}

main().catch((e: Error) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
