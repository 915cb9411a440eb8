import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AccountDeriver, nftKeysOfEvents } from '../../src/records/derive';
import { canonicalAddress } from '../../src/lib/address';

const DUMPS = join(__dirname, '..', '..', '..', 'fixtures', 'demo', 'dumps');
const lines = <T>(vm: string, name: string): T[] =>
  readFileSync(join(DUMPS, vm, `${name}.ndjson`), 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as T);

/**
 * follow from PostgreSQL reads a batch's NFT ↔ tx links by NFT (rollytics has no index on
 * tx_nfts.sequence): the NFTs its txs' events name must cover every link of each tx.
 */
describe('nftKeysOfEvents: the NFTs a tx names, for the keyed tx_nfts read (#22)', () => {
  for (const vm of ['wasm', 'evm'] as const) {
    it(`${vm}: every NFT ↔ tx link of the demo chain is named by its tx's events`, () => {
      const { bech32_prefix: prefix } = lines<{ bech32_prefix: string }>(vm, 'meta')[0];
      const deriver = new AccountDeriver(prefix);
      const named = new Map<number, Set<string>>();
      for (const t of lines<{ sequence: number; tx: { events?: unknown } }>(vm, 'txs')) {
        const keys = new Set<string>();
        nftKeysOfEvents(t.tx.events, deriver, (hex, id) => keys.add(`${hex} ${id}`));
        named.set(t.sequence, keys);
      }
      const links = lines<{ collection_addr: string; token_id: string; sequence: number }>(vm, 'token_txs');
      expect(links.length).to.be.greaterThan(100);
      const missed = links.filter((l) => !named.get(l.sequence)?.has(`${canonicalAddress(l.collection_addr, prefix).toString('hex')} ${l.token_id}`));
      expect(missed.slice(0, 5)).to.deep.equal([]);
    });
  }
});
