import { encodeKey } from '../src/snapshot/pagination';
import { toBech32, toHex0x } from '../src/lib/address';
import { amountFromKey } from '../src/lib/amount';
import { openSnapshot } from '../src/snapshot/open';

/**
 * The URLs benchmarked, one per route family, chosen from the snapshot itself: the busiest
 * account, collection and message type (the heaviest lists), a block and a tx from the middle.
 * List pages are 10 rows (an explorer's page size), count_total on (the default).
 */

export interface Target { family: string; path: string }

export interface Targets {
  families: Target[];
  /** page one and the page reached by key ~all the way down, per list */
  deep: { family: string; depth: number; first: string; deep: string }[];
  /** pagination.limit=1000 pages, for memory under load */
  big: string[];
}

const PAGE = 'pagination.limit=10';

export function targetsOf(file: string): Targets {
  const s = openSnapshot(file);
  try {
    const one = <T>(sql: string, ...args: unknown[]): T => s.db.prepare(sql).get(...args) as T;
    const { prefix, vmType } = s.meta;
    const middle = Math.floor(s.meta.countTxs / 2);
    const tx = one<{ hash: Buffer; height: number }>('SELECT hash, height FROM txs ORDER BY sequence LIMIT 1 OFFSET ?', middle);
    const busyBlock = one<{ height: number }>('SELECT height FROM blocks WHERE height >= ? AND tx_count >= 8 ORDER BY height LIMIT 1', tx.height);
    const msg = one<{ name: string }>('SELECT name FROM msg_types ORDER BY tx_count DESC LIMIT 1');
    const msg2 = one<{ name: string }>('SELECT name FROM msg_types ORDER BY tx_count DESC LIMIT 1 OFFSET 1');
    const signer = one<{ id: number; addr: Buffer }>('SELECT id, addr FROM accounts ORDER BY signer_tx_count DESC LIMIT 1');
    const busiest = one<{ id: number; addr: Buffer; tx_count: number }>('SELECT id, addr, tx_count FROM accounts ORDER BY tx_count DESC LIMIT 1');
    const collection = one<{ addr: Buffer }>('SELECT addr FROM collections ORDER BY nft_count DESC LIMIT 1');
    const owner = one<{ addr: Buffer }>('SELECT addr FROM accounts ORDER BY nft_count DESC LIMIT 1');
    const denom = one<{ denom: string; holder_count: number } | undefined>('SELECT denom, holder_count FROM richlist_denoms ORDER BY holder_count DESC LIMIT 1');

    const account = toBech32(signer.addr, prefix);
    const families: Target[] = [
      { family: 'status', path: '/status' },
      { family: 'block', path: `/indexer/block/v1/blocks/${tx.height}` },
      { family: 'block list', path: `/indexer/block/v1/blocks?${PAGE}` },
      { family: 'tx by hash', path: `/indexer/tx/v1/txs/${tx.hash.toString('hex').toUpperCase()}` },
      { family: 'tx list', path: `/indexer/tx/v1/txs?${PAGE}` },
      { family: 'tx list, msgs filter', path: `/indexer/tx/v1/txs?msgs=${msg.name}&${PAGE}` },
      { family: 'tx list, msgs=A,B', path: `/indexer/tx/v1/txs?msgs=${msg.name},${msg2.name}&${PAGE}` },
      { family: 'tx by_height', path: `/indexer/tx/v1/txs/by_height/${busyBlock.height}?${PAGE}` },
      { family: 'tx by_account', path: `/indexer/tx/v1/txs/by_account/${account}?${PAGE}` },
      { family: 'tx by_account, is_signer', path: `/indexer/tx/v1/txs/by_account/${account}?is_signer=true&${PAGE}` },
      { family: 'tx by_account, msgs filter', path: `/indexer/tx/v1/txs/by_account/${account}?msgs=${msg.name}&${PAGE}` },
      { family: 'tx by_account, msgs=A,B, is_signer', path: `/indexer/tx/v1/txs/by_account/${account}?msgs=${msg.name},${msg2.name}&is_signer=true&${PAGE}` },
      { family: 'collections', path: `/indexer/nft/v1/collections?${PAGE}` },
      { family: 'tokens by_collection', path: `/indexer/nft/v1/tokens/by_collection/${toHex0x(collection.addr)}?${PAGE}` },
      { family: 'tokens by_account', path: `/indexer/nft/v1/tokens/by_account/${toBech32(owner.addr, prefix)}?${PAGE}` },
    ];
    if (vmType === 'evm' && denom) families.push({ family: 'richlist', path: `/indexer/richlist/v1/${denom.denom}?${PAGE}` });

    // Keys ~10 rows from the far end of each list: the deepest page a client can reach.
    const oldest = one<{ sequence: number }>('SELECT sequence FROM txs ORDER BY sequence LIMIT 1 OFFSET 10');
    const oldestOfAccount = one<{ sequence: number }>('SELECT sequence FROM tx_accounts WHERE account_id = ? ORDER BY sequence LIMIT 1 OFFSET 10', busiest.id);
    const busiestAccount = toBech32(busiest.addr, prefix);
    const key = (fields: Record<string, number | string>): string => encodeURIComponent(encodeKey(fields));
    const deep: Targets['deep'] = [
      {
        family: 'tx list', depth: s.meta.countTxs - 10,
        first: `/indexer/tx/v1/txs?${PAGE}`, deep: `/indexer/tx/v1/txs?${PAGE}&pagination.key=${key({ sequence: oldest.sequence })}`,
      },
      {
        family: 'tx by_account (busiest account)', depth: busiest.tx_count - 10,
        first: `/indexer/tx/v1/txs/by_account/${busiestAccount}?${PAGE}`,
        deep: `/indexer/tx/v1/txs/by_account/${busiestAccount}?${PAGE}&pagination.key=${key({ sequence: oldestOfAccount.sequence })}`,
      },
      {
        family: 'block list', depth: s.meta.countBlocks - 10,
        first: `/indexer/block/v1/blocks?${PAGE}`, deep: `/indexer/block/v1/blocks?${PAGE}&pagination.key=${key({ height: 11 })}`,
      },
    ];
    if (vmType === 'evm' && denom) {
      const low = one<{ amount_key: string; account: Buffer }>('SELECT amount_key, account FROM richlist WHERE denom = ? ORDER BY amount_key, account LIMIT 1 OFFSET 10', denom.denom);
      deep.push({
        family: 'richlist', depth: denom.holder_count - 10,
        first: `/indexer/richlist/v1/${denom.denom}?${PAGE}`,
        deep: `/indexer/richlist/v1/${denom.denom}?${PAGE}&pagination.key=${key({ amount: amountFromKey(low.amount_key), account: toHex0x(low.account) })}`,
      });
    }
    const big = [
      '/indexer/tx/v1/txs?pagination.limit=1000',
      `/indexer/tx/v1/txs/by_account/${busiestAccount}?pagination.limit=1000`,
      '/indexer/block/v1/blocks?pagination.limit=1000',
    ];
    return { families, deep, big };
  } finally {
    s.close();
  }
}
