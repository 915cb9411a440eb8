import { toBech32, toHex0x } from '../lib/address';
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

/** The rich-list denoms of a Wasm / Move chain (bank denoms). */
export const BANK_RICH_DENOMS = ['uinit', 'umin', 'uusdc'];

/**
 * The rich list: per denom (EVM: per ERC-20 contract, with denom_contracts; else bank denoms),
 * `holders` rows: the chain's accounts first (hot ones as whales), then holders that never sent
 * a tx. Streamed; nothing is kept. Exactly one balance exceeds 2^128.
 *
 * The chain as it was at an earlier height `last` (generateDump's untilHeight) has the rich list
 * of that moment: holder i's amount grows by (blocks − last) when i % 5 = last % 5, and holder i
 * is not there yet when i % 97 = last % 97 — so two prefixes differ in a fifth of the amounts
 * and a few holders each way, and the whole chain's rich list does not depend on it.
 */
export async function writeRichList(
  p: ChainParams,
  pop: Population,
  erc20: Erc20[] | undefined,
  rng: Prng,
  out: DumpWriter,
  holders: number,
  last: number,
): Promise<number> {
  const file = out.file('richlist');
  const denoms = erc20 ? erc20.map((t) => t.hex) : BANK_RICH_DENOMS;
  const show = (hex: string): string => (erc20 ? hex : toBech32(Buffer.from(hex.slice(2), 'hex'), p.prefix));
  const behind = p.blocks - last;
  let rows = 0;
  for (const [d, denom] of denoms.entries()) {
    for (let i = 0; i < holders; i++) {
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
      if (d === denoms.length - 1 && i === 0) amount = (2n ** 128n + BigInt(rng.digits(12))).toString();
      if (behind > 0) {
        if (i % 97 === last % 97) continue;
        if (i % 5 === last % 5) amount = (BigInt(amount) + BigInt(behind)).toString();
      }
      file.writeObject({ denom, account: show(account), amount });
      rows++;
    }
  }
  if (erc20) {
    const contracts = out.file('denom_contracts');
    for (const t of erc20) contracts.writeObject({ denom: t.denom, contract: t.hex });
  }
  return rows;
}
