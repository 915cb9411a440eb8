import type Database from 'better-sqlite3';
import { Page, PageRequest } from '../pagination';
import { ListQuery } from '../list-query';
import type { VmType } from '../../lib/vm';

/** What the rich-list queries need of the snapshot's meta. */
interface RichListMeta { vmType: VmType }

/** Rich list in (amount, account) order; the account is the tie-breaker rollytics lacks (docs/api-contract.md#rollytics-quirks). */
export function prepareRichListQueries(db: Database.Database, meta: RichListMeta) {
  const holders = new ListQuery(db, {
    name: 'selectRichList', select: 'json, amount_key AS amount, account', from: 'richlist', where: 'denom = @denom',
    order: [{ sql: 'amount_key', field: 'amount', kind: 'amount' }, { sql: 'account', field: 'account', kind: 'hex' }],
  });
  holders.prepareAll();
  const holderCount = db.prepare('SELECT holder_count FROM richlist_denoms WHERE denom = ?').pluck();
  const contract = db.prepare('SELECT contract FROM denom_contracts WHERE denom = ?').pluck();
  return {
    /**
     * The stored denom for a request denom. EVM stores rich lists per ERC-20 contract: `0x…`
     * passes through, `evm/<40 hex>` is that contract, anything else is looked up in the
     * snapshot's denom → contract map (rollytics asks a live node, docs/api-contract.md#live-node-calls).
     */
    storedDenom(denom: string): string | undefined {
      const d = denom.toLowerCase();
      if (meta.vmType !== 'evm' || d.startsWith('0x')) return d;
      const evm = /^evm\/([0-9a-f]{40})$/.exec(d);
      if (evm) return `0x${evm[1]}`;
      return contract.get(d) as string | undefined;
    },
    holders: (denom: string, page: PageRequest): Page =>
      holders.page({ denom }, page, () => (holderCount.get(denom) as number | undefined) ?? 0),
  };
}

/** The denoms the snapshot has rich lists of, sorted (the fixture cut crawls the same). */
export function richListDenoms(db: Database.Database): string[] {
  return db.prepare('SELECT denom FROM richlist_denoms ORDER BY denom').pluck().all() as string[];
}
