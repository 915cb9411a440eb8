import { expect } from 'chai';
import { makeTestApp } from '../helpers/app';
import { HolderRow } from '../helpers/dump';
import { holdersAsc, reversed } from './model';
import { emptyList, getList, qs } from './pages';

const objs = (rows: HolderRow[]): unknown[] => rows.map((h) => h.obj);

describe('GET /indexer/richlist/v1/:denom', () => {
  it('returns the holders of every EVM ERC-20 contract, largest first, with the exact total', async () => {
    const t = await makeTestApp('evm');
    const denoms = [...new Set(t.dump.holders.map((h) => h.denom))];
    expect(denoms.length).to.be.greaterThan(1);
    for (const denom of denoms) {
      const rows = reversed(holdersAsc(t.dump, denom));
      const body = await getList(t, `/indexer/richlist/v1/${denom}?pagination.limit=50`, 'holders');
      expect(body.holders, denom).to.deep.equal(objs(rows.slice(0, 50)));
      expect(body.pagination.total, denom).to.equal(String(rows.length));
    }
  });

  it('maps a bank denom, evm%2F<hex>, evm%2f<hex> and the contract in any case to the same holders', async () => {
    const t = await makeTestApp('evm');
    for (const [denom, contract] of t.dump.denomContracts) {
      const rows = reversed(holdersAsc(t.dump, contract));
      const expected = { holders: objs(rows.slice(0, 10)), total: String(rows.length) };
      const forms = [encodeURIComponent(denom), encodeURIComponent(denom.toUpperCase()), contract, contract.toUpperCase().replace(/^0X/, '0x'),
        `evm%2F${contract.slice(2)}`, `evm%2f${contract.slice(2)}`, `EVM%2F${contract.slice(2).toUpperCase()}`];
      for (const form of forms) {
        const body = await getList(t, `/indexer/richlist/v1/${form}?pagination.limit=10`, 'holders');
        expect({ holders: body.holders, total: body.pagination.total }, `${denom}: ${form}`).to.deep.equal(expected);
      }
    }
  });

  it('serves amounts beyond 2^64 as exact decimal strings and accounts as 0x hex on EVM', async () => {
    const t = await makeTestApp('evm', { validateResponses: false });
    const whale = t.dump.holders.reduce((a, b) => (b.amount > a.amount ? b : a));
    expect(whale.amount > 2n ** 128n).to.equal(true);
    const res = await t.api.get(`/indexer/richlist/v1/${whale.denom}?pagination.limit=1000`);
    expect(res.status).to.equal(200);
    expect(res.text).to.contain(`{"account":"${whale.obj.account}","amount":"${whale.amount.toString()}"}`);
    expect(res.body.holders[0]).to.deep.equal(whale.obj);
    for (const h of res.body.holders as { account: string; amount: string }[]) {
      expect(Object.keys(h)).to.deep.equal(['account', 'amount']);
      expect(h.account).to.match(/^0x[0-9a-f]{40}$/);
      expect(h.amount).to.be.a('string').and.match(/^(0|-?[1-9][0-9]*)$/);
    }
    const big = (res.body.holders as { amount: string }[]).filter((h) => BigInt(h.amount) > 2n ** 64n);
    expect(big.length).to.equal(holdersAsc(t.dump, whale.denom).filter((h) => h.amount > 2n ** 64n).length);
  });

  it('pages by pagination.offset with an exact total, as the explorer\'s holders table does', async () => {
    const t = await makeTestApp('evm');
    const [denom, contract] = [...t.dump.denomContracts][0];
    const rows = reversed(holdersAsc(t.dump, contract));
    for (const page of [1, 2, 7]) {
      const body = await getList(t, `/indexer/richlist/v1/${denom}${qs({ 'pagination.limit': 10, 'pagination.offset': (page - 1) * 10, 'pagination.reverse': true })}`, 'holders');
      expect(body.holders, `page ${page}`).to.deep.equal(objs(rows.slice((page - 1) * 10, page * 10)));
      expect(body.pagination.total).to.equal(String(rows.length));
    }
  });

  it('lists zero balances, smallest first with pagination.reverse=false', async () => {
    const t = await makeTestApp('evm');
    const contract = [...t.dump.denomContracts.values()][1];
    const rows = holdersAsc(t.dump, contract);
    expect(rows[0].amount).to.equal(0n);
    const body = await getList(t, `/indexer/richlist/v1/${contract}?pagination.reverse=false&pagination.limit=20`, 'holders');
    expect(body.holders).to.deep.equal(objs(rows.slice(0, 20)));
  });

  it('answers total "0" with pagination.count_total=false', async () => {
    const t = await makeTestApp('evm');
    const contract = [...t.dump.denomContracts.values()][0];
    const body = await getList(t, `/indexer/richlist/v1/${contract}?pagination.count_total=false&pagination.limit=3`, 'holders');
    expect(body.holders).to.deep.equal(objs(reversed(holdersAsc(t.dump, contract)).slice(0, 3)));
    expect(body.pagination.total).to.equal('0');
  });

  it('returns 200 with an empty list for an ERC-20 contract without holders', async () => {
    const t = await makeTestApp('evm');
    expect(await getList(t, `/indexer/richlist/v1/0x${'5a'.repeat(20)}`, 'holders')).to.deep.equal(emptyList('holders'));
  });

  for (const vm of ['move', 'wasm'] as const) {
    it(`returns 200 with an empty list on ${vm}, where rich lists are not indexed`, async () => {
      const t = await makeTestApp(vm);
      expect(t.dump.holders).to.have.length(0);
      for (const denom of ['umin', 'uinit', `evm%2F${'ab'.repeat(20)}`, 'ibc%2F2CD93F8955FCF8B77FCC7598C8F087A7C401016C83C3A76F5618E5F0AD718B85']) {
        expect(await getList(t, `/indexer/richlist/v1/${denom}`, 'holders'), denom).to.deep.equal(emptyList('holders'));
      }
    });
  }
});
