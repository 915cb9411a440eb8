import type Database from 'better-sqlite3';
import { Page, PageRequest } from '../pagination';
import { ListQuery } from '../list-query';
import type { VmType } from '../../lib/vm';
import { toBech32, toHex0x } from '../../lib/address';
import { amountFromKey } from '../../lib/amount';
import { holderJson } from '../../wire/richlist';

/** What the rich-list queries need of the snapshot's meta. */
interface RichListMeta { vmType: VmType; prefix: string }

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
    /**
     * Wire format 2 stores no holder JSON (an empty `json`): the holder is two columns, rendered
     * here (docs/api-contract.md#stored-wire-format); a wire-format-1 file's stored text is used as is.
     */
    holders: (denom: string, page: PageRequest): Page => {
      const rows = holders.rows({ denom }, page);
      let rendered = false;
      for (const r of rows) {
        if (r.json.length > 0) continue;
        const account = r.account as Buffer;
        r.json = Buffer.from(holderJson(meta.vmType === 'evm' ? toHex0x(account) : toBech32(account, meta.prefix), amountFromKey(r.amount as string)), 'utf8');
        rendered = true;
      }
      const p = holders.toPage(rows, page, () => (holderCount.get(denom) as number | undefined) ?? 0);
      if (rendered) p.rendered = true;
      return p;
    },
  };
}

/** The denoms the snapshot has rich lists of, sorted (the fixture cut crawls the same). */
export function richListDenoms(db: Database.Database): string[] {
  return db.prepare('SELECT denom FROM richlist_denoms ORDER BY denom').pluck().all() as string[];
}
