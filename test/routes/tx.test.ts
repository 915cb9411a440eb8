import { expect } from 'chai';
import { addressForms, bech32Of } from '../helpers/address';
import { makeTestApp, VMS } from '../helpers/app';
import { compact, rawMember, TX_KEYS, TxRow } from '../helpers/dump';
import { accountsByTxCount, busiestHeight, hasMsg, msgTypesByUse, reversed, signersByTxCount, txsOf } from './model';
import { emptyList, getList, qs, rollyticsKey, walkKeys } from './pages';

const objs = (rows: TxRow[]): unknown[] => rows.map((t) => t.obj);
const newest = (rows: TxRow[], n: number): unknown[] => objs(reversed(rows).slice(0, n));

describe('GET /indexer/tx/v1/txs', () => {
  for (const vm of VMS) {
    it(`returns the newest ${vm} txs first, each the dump's Tx object, with the exact total`, async () => {
      const t = await makeTestApp(vm);
      const body = await getList(t, '/indexer/tx/v1/txs?pagination.limit=50', 'txs');
      expect(body.txs).to.deep.equal(newest(t.dump.txs, 50));
      expect(body.pagination.previous_key).to.equal(null);
      expect(body.pagination.next_key).to.be.a('string');
      expect(body.pagination.total).to.equal(String(t.dump.txs.length));
    });
  }

  it('returns the oldest txs first with pagination.reverse=false', async () => {
    const t = await makeTestApp('wasm');
    const body = await getList(t, '/indexer/tx/v1/txs?pagination.limit=10&pagination.reverse=false', 'txs');
    expect(body.txs).to.deep.equal(objs(t.dump.txs.slice(0, 10)));
  });

  it('answers total "0" with pagination.count_total=false', async () => {
    const t = await makeTestApp('move');
    const body = await getList(t, '/indexer/tx/v1/txs?pagination.limit=2&pagination.count_total=false', 'txs');
    expect(body.txs).to.deep.equal(newest(t.dump.txs, 2));
    expect(body.pagination.total).to.equal('0');
  });

  describe('msgs filter', () => {
    it('filters by one message type, with or without the leading "/"', async () => {
      const t = await makeTestApp('move');
      const [type] = msgTypesByUse(t.dump)[1];
      const rows = txsOf(t.dump, hasMsg([type]));
      const expected = { txs: newest(rows, 20), total: String(rows.length) };
      for (const value of [type, `/${type}`]) {
        const body = await getList(t, `/indexer/tx/v1/txs${qs({ msgs: value, 'pagination.limit': 20 })}`, 'txs');
        expect({ txs: body.txs, total: body.pagination.total }, value).to.deep.equal(expected);
      }
    });

    it('ORs repeated msgs parameters and comma-separated values alike', async () => {
      const t = await makeTestApp('evm');
      const types = msgTypesByUse(t.dump).slice(2, 4).map(([m]) => m);
      const rows = txsOf(t.dump, hasMsg(types));
      const expected = { txs: newest(rows, 30), total: String(rows.length) };
      for (const q of [qs({ msgs: types }), qs({ msgs: types.join(',') }), qs({ msgs: types.map((m) => `/${m}`).join(',') })]) {
        const body = await getList(t, `/indexer/tx/v1/txs${q}&pagination.limit=30`, 'txs');
        expect({ txs: body.txs, total: body.pagination.total }, q).to.deep.equal(expected);
      }
    });

    it('returns an empty list with total "0" for an unknown message type (rollytics would ignore the filter)', async () => {
      const t = await makeTestApp('move');
      for (const value of ['cosmos.bank.v1beta1.MsgDoesNotExist', 'COSMOS.BANK.V1BETA1.MSGSEND']) {
        const body = await getList(t, `/indexer/tx/v1/txs${qs({ msgs: value })}`, 'txs');
        expect(body, value).to.deep.equal(emptyList('txs'));
      }
    });

    it('ignores unknown types beside known ones', async () => {
      const t = await makeTestApp('wasm');
      const [type] = msgTypesByUse(t.dump)[0];
      const rows = txsOf(t.dump, hasMsg([type]));
      const body = await getList(t, `/indexer/tx/v1/txs${qs({ msgs: [type, 'no.such.MsgType'], 'pagination.limit': 5 })}`, 'txs');
      expect({ txs: body.txs, total: body.pagination.total }).to.deep.equal({ txs: newest(rows, 5), total: String(rows.length) });
    });
  });

  it('accepts rollytics keys: base64 of a decimal offset and {"sequence":n}', async () => {
    const t = await makeTestApp('move');
    const desc = reversed(t.dump.txs);
    const byOffset = await getList(t, `/indexer/tx/v1/txs${qs({ 'pagination.key': rollyticsKey('100'), 'pagination.limit': 3 })}`, 'txs');
    expect(byOffset.txs).to.deep.equal(objs(desc.slice(100, 103)));
    const bySequence = await getList(t, `/indexer/tx/v1/txs${qs({ 'pagination.key': rollyticsKey({ sequence: 1000 }), 'pagination.limit': 3 })}`, 'txs');
    expect(bySequence.txs).to.deep.equal(objs(desc.filter((x) => x.sequence < 1000).slice(0, 3)));
    const ascending = await getList(t, `/indexer/tx/v1/txs${qs({ 'pagination.key': rollyticsKey({ sequence: 1000 }), 'pagination.limit': 3, 'pagination.reverse': false })}`, 'txs');
    expect(ascending.txs).to.deep.equal(objs(t.dump.txs.filter((x) => x.sequence > 1000).slice(0, 3)));
  });

  it('lets a key beat pagination.offset, and takes pagination.offset=0 beside a key', async () => {
    const t = await makeTestApp('evm');
    const first = await getList(t, '/indexer/tx/v1/txs?pagination.limit=4', 'txs');
    const expected = objs(reversed(t.dump.txs).slice(4, 8));
    for (const offset of [0, 1000]) {
      const body = await getList(t, `/indexer/tx/v1/txs${qs({ 'pagination.key': first.pagination.next_key as string, 'pagination.limit': 4, 'pagination.offset': offset })}`, 'txs');
      expect(body.txs, `offset ${offset}`).to.deep.equal(expected);
    }
  });
});

describe('GET /indexer/tx/v1/txs/by_account/:account', () => {
  for (const vm of VMS) {
    it(`returns the txs that involve the busiest ${vm} account, newest first, with the exact total`, async () => {
      const t = await makeTestApp(vm);
      const [hex, count] = accountsByTxCount(t.dump)[0];
      const rows = txsOf(t.dump, (x) => x.accounts.has(hex));
      expect(rows).to.have.length(count);
      const body = await getList(t, `/indexer/tx/v1/txs/by_account/${bech32Of(Buffer.from(hex, 'hex'), t.dump.prefix)}?pagination.limit=25`, 'txs');
      expect(body.txs).to.deep.equal(newest(rows, 25));
      expect(body.pagination.total).to.equal(String(count));
    });

    it(`maps every address form of a ${vm} account to the same answer`, async () => {
      const t = await makeTestApp(vm);
      // an account whose hex starts with a zero digit exercises leading-zero stripping
      const [hex] = accountsByTxCount(t.dump).find(([h]) => h.length === 40 && h.startsWith('0')) ?? accountsByTxCount(t.dump)[1];
      const rows = txsOf(t.dump, (x) => x.accounts.has(hex));
      const expected = { txs: newest(rows, 6), total: String(rows.length) };
      for (const [form, value] of Object.entries(addressForms(Buffer.from(hex, 'hex'), t.dump.prefix))) {
        const body = await getList(t, `/indexer/tx/v1/txs/by_account/${encodeURIComponent(value)}?pagination.limit=6`, 'txs');
        expect({ txs: body.txs, total: body.pagination.total }, `${form}: ${value}`).to.deep.equal(expected);
      }
    });
  }

  for (const vm of VMS) {
    it(`links every ${vm} tx to exactly the accounts rollytics' rules derive from its events and signer`, async () => {
      const t = await makeTestApp(vm);
      // independent SQL over the snapshot tables (sql/001-tables.sql) against the dump-derived links
      const rows = t.db.prepare(`SELECT ta.sequence AS sequence, lower(hex(a.addr)) AS addr, ta.signer AS signer
                                 FROM tx_accounts ta JOIN accounts a ON a.id = ta.account_id`).all() as { sequence: number; addr: string; signer: number }[];
      const stored = new Map<number, { accounts: string[]; signers: string[] }>();
      for (const r of rows) {
        const e = stored.get(r.sequence) ?? { accounts: [], signers: [] };
        e.accounts.push(r.addr);
        if (r.signer) e.signers.push(r.addr);
        stored.set(r.sequence, e);
      }
      for (const x of t.dump.txs) {
        const e = stored.get(x.sequence) ?? { accounts: [], signers: [] };
        expect(e.accounts.sort(), `tx ${x.sequence} accounts`).to.deep.equal([...x.accounts].sort());
        expect(e.signers, `tx ${x.sequence} signer`).to.deep.equal(x.signer ? [x.signer] : []);
      }
      // and the API's totals agree for a spread of accounts
      const all = accountsByTxCount(t.dump);
      for (const [hex, count] of all.filter((_, i) => i % Math.ceil(all.length / 25) === 0)) {
        const body = await getList(t, `/indexer/tx/v1/txs/by_account/0x${hex}?pagination.limit=1`, 'txs');
        expect(body.pagination.total, hex).to.equal(String(count));
      }
    });
  }

  it('accepts a 32-byte account (a Move NFT object) as bech32 and as 0x hex without leading zeros', async () => {
    const t = await makeTestApp('move');
    const withTxs = t.dump.tokens.filter((k) => k.object && t.dump.txs.some((x) => x.accounts.has((k.object as Buffer).toString('hex'))));
    const token = withTxs.find((k) => (k.object as Buffer)[0] < 16) ?? withTxs[0];
    const obj = token.object as Buffer;
    const rows = txsOf(t.dump, (x) => x.accounts.has(obj.toString('hex')));
    expect(rows.length).to.be.greaterThan(0);
    const forms = addressForms(obj, t.dump.prefix);
    expect(forms.bech32).to.have.length(`${t.dump.prefix}1`.length + 58);
    for (const [form, value] of Object.entries(forms)) {
      const body = await getList(t, `/indexer/tx/v1/txs/by_account/${value}`, 'txs');
      expect({ txs: body.txs, total: body.pagination.total }, form).to.deep.equal({ txs: newest(rows, 100), total: String(rows.length) });
    }
  });

  it('returns only the txs the account signed with is_signer=true, and all with is_signer=false', async () => {
    const t = await makeTestApp('move');
    const [hex] = signersByTxCount(t.dump)[0];
    const account = bech32Of(Buffer.from(hex, 'hex'), t.dump.prefix);
    const signed = txsOf(t.dump, (x) => x.signer === hex);
    const all = txsOf(t.dump, (x) => x.accounts.has(hex));
    expect(signed.length).to.be.greaterThan(0).and.lessThan(all.length);
    const s = await getList(t, `/indexer/tx/v1/txs/by_account/${account}?is_signer=true&pagination.limit=40`, 'txs');
    expect({ txs: s.txs, total: s.pagination.total }).to.deep.equal({ txs: newest(signed, 40), total: String(signed.length) });
    const a = await getList(t, `/indexer/tx/v1/txs/by_account/${account}?is_signer=false&pagination.limit=40`, 'txs');
    expect({ txs: a.txs, total: a.pagination.total }).to.deep.equal({ txs: newest(all, 40), total: String(all.length) });
  });

  it('combines msgs with the account and keeps working when next_key is followed (rollytics answers 500)', async () => {
    const t = await makeTestApp('wasm');
    const [hex] = signersByTxCount(t.dump)[0];
    const types = msgTypesByUse(t.dump).slice(0, 2).map(([m]) => m);
    const rows = txsOf(t.dump, (x) => x.accounts.has(hex) && hasMsg([types[1]])(x));
    const account = bech32Of(Buffer.from(hex, 'hex'), t.dump.prefix);
    const items = await walkKeys(t, {
      path: `/indexer/tx/v1/txs/by_account/${account}`, itemsKey: 'txs', filters: { msgs: `/${types[1]}` },
      limit: 7, reverse: true, total: rows.length,
    });
    expect(items).to.deep.equal(newest(rows, rows.length));
    const both = txsOf(t.dump, (x) => x.accounts.has(hex) && hasMsg(types)(x));
    const signedBoth = both.filter((x) => x.signer === hex);
    const body = await getList(t, `/indexer/tx/v1/txs/by_account/${account}${qs({ msgs: types.join(','), is_signer: true, 'pagination.limit': 1000 })}`, 'txs');
    expect({ txs: body.txs, total: body.pagination.total }).to.deep.equal({ txs: newest(signedBoth, 1000), total: String(signedBoth.length) });
  });

  it('returns 200 with an empty list, next_key null and total "0" for an account without txs', async () => {
    const t = await makeTestApp('evm');
    const unknown = Buffer.alloc(20, 0x42);
    expect(t.dump.txs.some((x) => x.accounts.has(unknown.toString('hex')))).to.equal(false);
    for (const value of [bech32Of(unknown, t.dump.prefix), `0x${unknown.toString('hex')}`]) {
      expect(await getList(t, `/indexer/tx/v1/txs/by_account/${value}`, 'txs'), value).to.deep.equal(emptyList('txs'));
    }
  });

  it('returns 400 naming the account when it is not an address', async () => {
    const t = await makeTestApp('move');
    for (const bad of ['zz', 'init1notbech32', `0x${'a'.repeat(65)}`]) {
      const res = await t.api.get(`/indexer/tx/v1/txs/by_account/${bad}`);
      expect(res.status, bad).to.equal(400);
      expect(res.body.code).to.equal(3);
      expect(res.body.message, bad).to.contain('account').and.contain(bad);
    }
  });
});

/** Groups of message types to filter by: pairs that share txs (a tx counted once), disjoint pairs, all types. */
function msgGroups(t: { dump: Parameters<typeof msgTypesByUse>[0] }): string[][] {
  const types = msgTypesByUse(t.dump).map(([m]) => m);
  const groups: string[][] = [];
  for (let i = 0; i < types.length; i++) {
    for (let j = i + 1; j < types.length; j++) {
      const shared = t.dump.txs.some((x) => x.msgTypes.has(types[i]) && x.msgTypes.has(types[j]));
      if (shared || j === i + 1) groups.push([types[i], types[j]]);
    }
  }
  groups.push(types.slice(0, 3), types);
  return groups;
}

describe('msgs totals (precomputed per msg-type set): every combination against the dump', () => {
  for (const vm of VMS) {
    it(`${vm}: /txs with several msgs types, overlapping or not, counts each matching tx once`, async () => {
      const t = await makeTestApp(vm);
      const groups = msgGroups(t);
      // the demo chains have txs with two types: the overlap case is really tested
      expect(groups.some((g) => g.length === 2 && t.dump.txs.some((x) => g.every((m) => x.msgTypes.has(m))))).to.equal(true);
      for (const g of groups) {
        const rows = txsOf(t.dump, hasMsg(g));
        const body = await getList(t, `/indexer/tx/v1/txs${qs({ msgs: g.join(','), 'pagination.limit': 15 })}`, 'txs');
        expect({ txs: body.txs, total: body.pagination.total }, g.join(',')).to.deep.equal({ txs: newest(rows, 15), total: String(rows.length) });
      }
    });

    it(`${vm}: by_account + msgs, with and without is_signer, for a spread of accounts and type groups`, async () => {
      const t = await makeTestApp(vm);
      const groups = [...msgTypesByUse(t.dump).map(([m]) => [m]), ...msgGroups(t)];
      const accounts = accountsByTxCount(t.dump);
      const picked = new Set([signersByTxCount(t.dump)[0][0], ...accounts.filter((_, i) => i % Math.ceil(accounts.length / 6) === 0).map(([h]) => h)]);
      let nonEmpty = 0;
      for (const hex of picked) {
        const account = bech32Of(Buffer.from(hex, 'hex'), t.dump.prefix);
        for (const g of groups) {
          for (const signer of [false, true]) {
            const rows = txsOf(t.dump, (x) => x.accounts.has(hex) && hasMsg(g)(x) && (!signer || x.signer === hex));
            if (rows.length) nonEmpty++;
            const q = qs({ msgs: g, ...(signer ? { is_signer: true } : {}), 'pagination.limit': 5 });
            const body = await getList(t, `/indexer/tx/v1/txs/by_account/${account}${q}`, 'txs');
            expect({ txs: body.txs, total: body.pagination.total }, `${hex} ${q}`).to.deep.equal({ txs: newest(rows, 5), total: String(rows.length) });
          }
        }
      }
      expect(nonEmpty).to.be.greaterThan(groups.length);
    });
  }
});

describe('GET /indexer/tx/v1/txs/by_height/:height', () => {
  for (const vm of VMS) {
    it(`returns every tx of the busiest ${vm} block, newest first, with the exact total`, async () => {
      const t = await makeTestApp(vm);
      const height = busiestHeight(t.dump);
      const rows = txsOf(t.dump, (x) => x.height === height);
      expect(rows.length).to.equal(t.dump.blocks.find((b) => b.height === height)?.txCount);
      const body = await getList(t, `/indexer/tx/v1/txs/by_height/${height}`, 'txs');
      expect(body.txs).to.deep.equal(newest(rows, 100));
      expect(body.pagination).to.deep.equal({ previous_key: null, next_key: null, total: String(rows.length) });
      const asc = await getList(t, `/indexer/tx/v1/txs/by_height/${height}?pagination.reverse=false&pagination.limit=5`, 'txs');
      expect(asc.txs).to.deep.equal(objs(rows.slice(0, 5)));
    });
  }

  it('combines msgs with the height and keeps working when next_key is followed (rollytics answers 500)', async () => {
    const t = await makeTestApp('move');
    const height = busiestHeight(t.dump);
    const [type] = msgTypesByUse(t.dump)[0];
    const rows = txsOf(t.dump, (x) => x.height === height && x.msgTypes.has(type));
    expect(rows.length).to.be.greaterThan(3);
    for (const reverse of [true, false]) {
      const items = await walkKeys(t, {
        path: `/indexer/tx/v1/txs/by_height/${height}`, itemsKey: 'txs', filters: { msgs: type }, limit: 3, reverse, total: rows.length,
      });
      expect(items).to.deep.equal(objs(reverse ? reversed(rows) : rows));
    }
  });

  it('returns 200 with an empty list for a block without txs and for a height past the chain', async () => {
    const t = await makeTestApp('wasm');
    const empty = t.dump.blocks.find((b) => b.txCount === 0);
    for (const height of [empty?.height, t.dump.blocks[t.dump.blocks.length - 1].height + 1000]) {
      expect(await getList(t, `/indexer/tx/v1/txs/by_height/${height}`, 'txs'), String(height)).to.deep.equal(emptyList('txs'));
    }
  });

  for (const bad of ['abc', '0', '-3', '2.5', 'Infinity', '0x10']) {
    it(`returns 400 naming the height when it is ${JSON.stringify(bad)}`, async () => {
      const t = await makeTestApp('move');
      const res = await t.api.get(`/indexer/tx/v1/txs/by_height/${bad}`);
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal(3);
      expect(res.body.message).to.contain('height').and.contain(bad);
    });
  }
});

describe('GET /indexer/tx/v1/txs/:tx_hash', () => {
  for (const vm of VMS) {
    it(`returns {"tx": Tx} for a ${vm} hash given upper- or lower-case, with or without 0x`, async () => {
      const t = await makeTestApp(vm);
      for (const row of [t.dump.txs[0], t.dump.txs[t.dump.txs.length - 1], t.dump.txs.find((x) => x.obj.code !== 0) as TxRow]) {
        for (const h of [row.hash, row.hash.toLowerCase(), `0x${row.hash.toLowerCase()}`, `0x${row.hash}`]) {
          const res = await t.api.get(`/indexer/tx/v1/txs/${h}`);
          expect(res.status, h).to.equal(200);
          expect(res.body, h).to.deep.equal({ tx: row.obj });
        }
      }
    });
  }

  it('serves the Tx keys in order, height and gas as strings, code as a number, and tx/logs/events byte-for-byte as stored', async () => {
    const t = await makeTestApp('move', { validateResponses: false });
    const failed = t.dump.txs.find((x) => x.obj.code !== 0) as TxRow;
    for (const row of [t.dump.txs[0], failed]) {
      const res = await t.api.get(`/indexer/tx/v1/txs/${row.hash}`);
      expect(res.status).to.equal(200);
      const tx = res.body.tx as Record<string, unknown>;
      expect(Object.keys(tx)).to.deep.equal(TX_KEYS);
      for (const k of ['height', 'gas_wanted', 'gas_used']) expect(tx[k], k).to.be.a('string').and.match(/^[0-9]+$/);
      expect(tx.code).to.be.a('number').and.equal(row.obj.code);
      for (const k of ['codespace', 'data', 'raw_log', 'info']) expect(tx[k], k).to.be.a('string');
      expect(tx.logs).to.be.an('array');
      expect(tx.txhash).to.match(/^[0-9A-F]{64}$/);
      expect(tx.timestamp).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$/);
      const served = rawMember(res.text, 'tx');
      const stored = rawMember(row.line, 'tx');
      for (const k of ['tx', 'logs', 'events']) expect(rawMember(served, k), k).to.equal(compact(rawMember(stored, k)));
      expect(res.text).to.match(new RegExp(`"code":${row.obj.code as number},`));
    }
  });

  it('returns 404 when no tx has the hash', async () => {
    const t = await makeTestApp('move');
    const hash = 'AB'.repeat(32);
    expect(t.dump.txs.some((x) => x.hash === hash)).to.equal(false);
    const res = await t.api.get(`/indexer/tx/v1/txs/${hash}`);
    expect(res.status).to.equal(404);
    expect(res.body.code).to.equal(5);
    expect(res.body.details).to.deep.equal([]);
  });

  it('returns 400 naming tx_hash when the hash is not hex', async () => {
    const t = await makeTestApp('move');
    for (const bad of ['xyz', '0xZZ', 'g'.repeat(64)]) {
      const res = await t.api.get(`/indexer/tx/v1/txs/${bad}`);
      expect(res.status, bad).to.equal(400);
      expect(res.body.code).to.equal(3);
      expect(res.body.message, bad).to.contain('tx_hash').and.contain(bad);
    }
  });
});
