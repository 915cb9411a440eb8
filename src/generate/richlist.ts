import { toHex0x } from '../lib/address';
import { Population, sha256 } from './chain';
import { Erc20 } from './evm';
import { ChainParams } from './params';
import { Prng } from './prng';
import { DumpWriter } from './writer';

/** Balances many holders share, so the rich list has long runs of ties (no tie-breaker there). */
const SHARED = ['1000000', '2500000', '10000000', '100000000', '1'];

function balance(rng: Prng): string {
  const r = rng.float();
  if (r < 0.02) return '0';
  if (r < 0.37) return rng.pick(SHARED);
  // Log-uniform up to 10^24: plenty of holders above 2^64 (~1.8·10^19).
  return rng.digits(rng.int(1, 24));
}

/**
 * EVM rich list: per ERC-20 contract, the chain's accounts first (hot ones as whales), then
 * holders that never sent a tx. Streamed; nothing is kept. Exactly one balance exceeds 2^128.
 */
export async function writeRichList(p: ChainParams, pop: Population, erc20: Erc20[], rng: Prng, out: DumpWriter): Promise<number> {
  const file = out.file('richlist');
  let rows = 0;
  for (const [d, t] of erc20.entries()) {
    for (let i = 0; i < p.richHolders; i++) {
      if (i % 4096 === 0) await out.flush();
      let account: string;
      let amount: string;
      if (i < pop.accounts.length) {
        if (i > 0 && rng.chance(0.15)) continue;
        account = pop.accounts[i].hex;
        amount = i < pop.hot.length ? rng.digits(rng.int(20, 26)) : balance(rng);
      } else {
        account = toHex0x(sha256(`holder-${p.seed}-${i}`).subarray(0, 20));
        amount = balance(rng);
      }
      if (d === erc20.length - 1 && i === 0) amount = (2n ** 128n + BigInt(rng.digits(12))).toString();
      file.writeObject({ denom: t.hex, account, amount });
      rows++;
    }
  }
  const contracts = out.file('denom_contracts');
  for (const t of erc20) contracts.writeObject({ denom: t.denom, contract: t.hex });
  return rows;
}
