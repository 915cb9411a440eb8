import Database from 'better-sqlite3';
import { expect } from 'chai';
import { bech32Of } from '../helpers/address';
import { makeTestApp } from '../helpers/app';
import { TxRow } from '../helpers/dump';
import { hasMsg, msgTypesByUse, reversed, signersByTxCount, txsOf } from './model';
import { getList, qs, rollyticsKey, walkKeys, walkOffsets } from './pages';
import { MAX_OFFSET } from '../../src/snapshot/list-query';
import { CollectionNames } from '../../src/snapshot/queries/collection-names';
import { readPackedRow } from '../../src/wire/packed';

/** docs/api-contract.md#deep-offsets: what a deep offset gets, and the paths that keep pages cheap. */

const objs = (rows: TxRow[]): unknown[] => rows.map((t) => t.obj);

describe('bounded request cost (docs/api-contract.md#deep-offsets)', () => {
  it(`refuses an offset above ${MAX_OFFSET} on a list without a dense order, naming the parameter and pointing to pagination.key`, async () => {
    const t = await makeTestApp('wasm');
    const [hex] = signersByTxCount(t.dump)[0];
    const account = bech32Of(Buffer.from(hex, 'hex'), t.dump.prefix);
    const types = msgTypesByUse(t.dump).slice(0, 2).map(([m]) => m);
    for (const path of [
      `/indexer/tx/v1/txs/by_account/${account}`,
      `/indexer/tx/v1/txs${qs({ msgs: types[0] })}`,
      `/indexer/tx/v1/txs${qs({ msgs: types.join(',') })}`,
      '/indexer/nft/v1/collections',
    ]) {
      const sep = path.includes('?') ? '&' : '?';
      for (const offset of [MAX_OFFSET + 1, 2 ** 53 - 1]) {
        const res = await t.api.get(`${path}${sep}pagination.offset=${offset}`);
        expect(res.status, `${path} ${offset}`).to.equal(400);
        expect(res.body.code).to.equal(3);
        expect(res.body.message, path).to.contain(`invalid value for pagination.offset: ${offset}`).and.contain('pagination.key');
      }
      // rollytics' offset-style key: an offset too, named as the key
      const viaKey = await t.api.get(`${path}${sep}pagination.key=${encodeURIComponent(rollyticsKey(String(MAX_OFFSET + 1)))}`);
      expect(viaKey.status, path).to.equal(400);
      expect(viaKey.body.message, path).to.contain('invalid value for pagination.key').and.contain(`offset ${MAX_OFFSET + 1}`);
      // the deepest offset served still is, and answers an empty page past the end
      const ok = await getList(t, `${path}${sep}pagination.offset=${MAX_OFFSET}`, path.includes('collections') ? 'collections' : 'txs');
      expect(ok.pagination.next_key).to.equal(null);
    }
  });

  it('serves any offset on blocks and the unfiltered tx list: a key by arithmetic, the same rows as walking there', async () => {
    const t = await makeTestApp('move');
    const n = t.dump.txs.length;
    for (const reverse of [true, false]) {
      const ordered = reverse ? reversed(t.dump.txs) : t.dump.txs;
      for (const offset of [1, 999, n - 3, n - 1]) {
        const body = await getList(t, `/indexer/tx/v1/txs${qs({ 'pagination.offset': offset, 'pagination.limit': 5, 'pagination.reverse': reverse })}`, 'txs');
        expect(body.txs, `offset ${offset} reverse ${reverse}`).to.deep.equal(objs(ordered.slice(offset, offset + 5)));
      }
      for (const offset of [n, MAX_OFFSET + 1, 2 ** 53 - 1]) {
        const body = await getList(t, `/indexer/tx/v1/txs${qs({ 'pagination.offset': offset, 'pagination.reverse': reverse })}`, 'txs');
        expect(body.txs, String(offset)).to.deep.equal([]);
        expect(body.pagination.total).to.equal(String(n));
      }
    }
    const blocks = await getList(t, `/indexer/block/v1/blocks${qs({ 'pagination.offset': 2 ** 53 - 1 })}`, 'blocks');
    expect(blocks.blocks).to.deep.equal([]);
    const last = await getList(t, `/indexer/block/v1/blocks${qs({ 'pagination.offset': t.dump.blocks.length - 1 })}`, 'blocks');
    expect((last.blocks as { height: string }[]).map((b) => Number(b.height))).to.deep.equal([Math.min(...t.dump.blocks.map((b) => b.height))]);
  });

  it('several msgs types: offset pages and key pages, both orders, are the model\'s rows', async () => {
    const t = await makeTestApp('wasm');
    const types = msgTypesByUse(t.dump).map(([m]) => m);
    for (const g of [types.slice(0, 2), types]) {
      const rows = txsOf(t.dump, hasMsg(g));
      for (const reverse of [true, false]) {
        const want = objs(reverse ? reversed(rows) : rows);
        const spec = { path: '/indexer/tx/v1/txs', itemsKey: 'txs', filters: { msgs: g.join(',') }, limit: 97, reverse, total: rows.length };
        expect(await walkKeys(t, spec), g.join(',')).to.deep.equal(want);
        expect(await walkOffsets(t, { ...spec, limit: 300, startOffset: 11 }), g.join(',')).to.deep.equal(want.slice(11));
      }
    }
  });

  it('by_account + a type rarer than the account: walks the type\'s txs, same rows by key and by offset; none → the empty page', async () => {
    const t = await makeTestApp('wasm');
    const [hex] = signersByTxCount(t.dump)[0];
    const account = bech32Of(Buffer.from(hex, 'hex'), t.dump.prefix);
    const mine = txsOf(t.dump, (x) => x.accounts.has(hex));
    const byUse = msgTypesByUse(t.dump);
    // types used less than this account has txs, that this account has (the type side is walked)
    const rare = byUse.filter(([m, n]) => n < mine.length && mine.some((x) => x.msgTypes.has(m))).map(([m]) => m);
    expect(rare.length, 'the demo chain has a type rarer than its busiest signer').to.be.greaterThan(0);
    for (const signer of [false, true]) {
      for (const g of [rare.slice(0, 1), rare]) {
        const rows = txsOf(t.dump, (x) => x.accounts.has(hex) && hasMsg(g)(x) && (!signer || x.signer === hex));
        for (const reverse of [true, false]) {
          const want = objs(reverse ? reversed(rows) : rows);
          const spec = { path: `/indexer/tx/v1/txs/by_account/${account}`, itemsKey: 'txs', filters: { msgs: g.join(','), ...(signer ? { is_signer: true } : {}) },
            limit: 3, reverse, total: rows.length };
          expect(await walkKeys(t, spec), `${g} signer ${signer}`).to.deep.equal(want);
          if (rows.length > 2) expect(await walkOffsets(t, { ...spec, startOffset: 2 })).to.deep.equal(want.slice(2));
        }
      }
    }
    const unused = byUse.map(([m]) => m).find((m) => !mine.some((x) => x.msgTypes.has(m)));
    if (unused) {
      const body = await getList(t, `/indexer/tx/v1/txs/by_account/${account}${qs({ msgs: unused })}`, 'txs');
      expect(body).to.deep.equal({ txs: [], pagination: { previous_key: null, next_key: null, total: '0' } });
    }
  });
});

describe('collections/by_name matched in memory (src/snapshot/queries/collection-names.ts)', () => {
  it('answers every query, offset and key page as a substring test over every collection does; any offset', async function () {
    this.timeout(120_000);
    for (const vm of ['wasm', 'move', 'evm'] as const) {
      const t = await makeTestApp(vm);
      // the reference: the SQL this replaced (every collection tested), in the list's order
      const ref = t.db.prepare(`SELECT json FROM collections WHERE instr(norm_name, @q) > 0 OR instr(norm_origin_name, @q) > 0
        ORDER BY height DESC, addr DESC`).pluck();
      const names = t.db.prepare('SELECT norm_name FROM collections UNION SELECT norm_origin_name FROM collections').pluck().all() as string[];
      const queries = new Set<string>(['', 'zz', 'qqqqx', 'no such collection']);
      for (const n of names) {
        queries.add(n);
        for (let len = 1; len <= 4; len++) for (let at = 0; at + len <= n.length; at += 2) queries.add(n.slice(at, at + len));
      }
      expect(queries.size, vm).to.be.greaterThan(20);
      for (const q of queries) {
        const all = (ref.all({ q }) as Buffer[]).map((j) => JSON.parse(readPackedRow(j)) as unknown);
        // "!!" normalizes to the empty query (matches everything); an empty path segment is another route
        const path = `/indexer/nft/v1/collections/by_name/${q === '' ? '!!' : encodeURIComponent(q)}`;
        const first = await getList(t, `${path}?pagination.limit=3`, 'collections');
        expect(first.collections, `${vm} "${q}"`).to.deep.equal(all.slice(0, 3));
        expect(first.pagination.total, `${vm} "${q}"`).to.equal(String(all.length));
        const asc = await getList(t, `${path}?pagination.limit=2&pagination.offset=1&pagination.reverse=false`, 'collections');
        expect(asc.collections, `${vm} "${q}" ascending from 1`).to.deep.equal([...all].reverse().slice(1, 3));
      }
      // key pages walk the same list, both ways
      for (const reverse of [true, false]) {
        const q = names.find((n) => n.length > 0)?.slice(0, 1) ?? '';
        const all = (ref.all({ q }) as Buffer[]).map((j) => JSON.parse(readPackedRow(j)) as unknown);
        const seen = await walkKeys(t, { path: `/indexer/nft/v1/collections/by_name/${encodeURIComponent(q)}`, itemsKey: 'collections', limit: 2, reverse, total: all.length });
        expect(seen, `${vm} "${q}" reverse ${reverse}`).to.deep.equal(reverse ? all : [...all].reverse());
      }
      // the matches are in memory: any offset is an index into them (no 400 past MAX_OFFSET)
      for (const offset of [MAX_OFFSET + 1, 2 ** 53 - 1]) {
        const deep = await getList(t, `/indexer/nft/v1/collections/by_name/a?pagination.offset=${offset}`, 'collections');
        expect(deep.collections, `${vm} offset ${offset}`).to.deep.equal([]);
      }
    }
  });
});

describe('CollectionNames (the by_name search)', () => {
  it('finds exactly the collections whose normalized names contain the query, beyond Latin too (pieces that share a key)', () => {
    const db = new Database(':memory:');
    db.exec('CREATE TABLE collections (addr BLOB PRIMARY KEY, height INTEGER NOT NULL, norm_name TEXT NOT NULL, norm_origin_name TEXT NOT NULL) WITHOUT ROWID');
    // 'ѡ' (U+0461) and 'a' (U+0061) share their low 10 bits: the same piece key
    const names = ['abc', 'ѡbc', 'xabcx', 'ѡѡѡ', 'aaa', 'coolcats', '猫猫猫', '😀abc', 'ab', ''];
    const ins = db.prepare('INSERT INTO collections VALUES (?, ?, ?, ?)');
    names.forEach((n, i) => ins.run(Buffer.from([i]), 100 - i, n, i % 3 === 0 ? `${n}origin` : n));
    const search = CollectionNames.load(db);
    const brute = db.prepare('SELECT addr FROM collections WHERE instr(norm_name, @q) > 0 OR instr(norm_origin_name, @q) > 0 ORDER BY height, addr').pluck();
    const queries = ['', 'a', 'ab', 'abc', 'ѡbc', 'ѡѡ', 'ѡѡѡ', 'aaa', 'bcx', 'abcx', 'cats', 'origin', '猫猫', '猫猫猫', '😀', '😀a', 'zzz', 'cori'];
    for (const q of queries) {
      const got = [...search.matches(q)].map((i) => search.addrs[i].toString('hex'));
      const want = (brute.all({ q }) as Buffer[]).map((b) => b.toString('hex'));
      expect(got, `"${q}"`).to.deep.equal(want);
    }
    db.close();
  });
});
