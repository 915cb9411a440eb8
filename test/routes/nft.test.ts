import { expect } from 'chai';
import { addressForms, bech32Of, hexOf } from '../helpers/address';
import { makeTestApp, VMS } from '../helpers/app';
import { CollectionRow, normalizeName, TokenRow } from '../helpers/dump';
import { collectionsAsc, collectionsOfOwner, longestHistory, nftTxs, ownersByTokenCount, reversed, sortTokens } from './model';
import { emptyList, getList, qs, rollyticsKey } from './pages';

const cols = (rows: CollectionRow[]): unknown[] => rows.map((c) => c.obj);
const toks = (rows: TokenRow[]): unknown[] => rows.map((t) => t.obj);
const TIME_US = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$/;

/** The collection with the most tokens. */
function biggestCollection(rows: CollectionRow[]): CollectionRow {
  return [...rows].sort((a, b) => b.obj.collection.nfts.length - a.obj.collection.nfts.length)[0];
}

describe('GET /indexer/nft/v1/collections', () => {
  for (const vm of VMS) {
    it(`returns every ${vm} collection, newest first, with the exact total`, async () => {
      const t = await makeTestApp(vm);
      const body = await getList(t, '/indexer/nft/v1/collections', 'collections');
      expect(body).to.deep.equal({
        collections: cols(reversed(collectionsAsc(t.dump))),
        pagination: { previous_key: null, next_key: null, total: String(t.dump.collections.length) },
      });
    });
  }

  it('returns the oldest first with pagination.reverse=false', async () => {
    const t = await makeTestApp('evm');
    const body = await getList(t, '/indexer/nft/v1/collections?pagination.reverse=false&pagination.limit=3', 'collections');
    expect(body.collections).to.deep.equal(cols(collectionsAsc(t.dump).slice(0, 3)));
  });

  it('accepts a rollytics {"height":n} key: the collections past that height', async () => {
    const t = await makeTestApp('move');
    const asc = collectionsAsc(t.dump);
    const pivot = asc[3].height;
    const desc = await getList(t, `/indexer/nft/v1/collections${qs({ 'pagination.key': rollyticsKey({ height: pivot }) })}`, 'collections');
    expect(desc.collections).to.deep.equal(cols(reversed(asc.filter((c) => c.height < pivot))));
    const asc2 = await getList(t, `/indexer/nft/v1/collections${qs({ 'pagination.key': rollyticsKey({ height: pivot }), 'pagination.reverse': false })}`, 'collections');
    expect(asc2.collections).to.deep.equal(cols(asc.filter((c) => c.height > pivot)));
  });

  it('serves object_addr 0x lower-case, creator bech32 (on EVM too), height and nfts.length numbers, µs timestamps', async () => {
    for (const vm of VMS) {
      const t = await makeTestApp(vm, { validateResponses: false });
      const res = await t.api.get('/indexer/nft/v1/collections');
      for (const c of res.body.collections as Record<string, unknown>[]) {
        expect(Object.keys(c)).to.deep.equal(['object_addr', 'collection', 'height', 'timestamp']);
        const info = c.collection as Record<string, unknown>;
        expect(Object.keys(info)).to.deep.equal(['creator', 'name', 'origin_name', 'nfts']);
        expect(c.object_addr).to.match(vm === 'evm' ? /^0x[0-9a-f]{40}$/ : /^0x[0-9a-f]{64}$/);
        expect(info.creator).to.match(new RegExp(`^${t.dump.prefix}1([02-9ac-hj-np-z]{38}|[02-9ac-hj-np-z]{58})$`));
        expect(info.nfts).to.have.all.keys('handle', 'length');
        expect((info.nfts as { handle: unknown }).handle).to.equal('');
        expect((info.nfts as { length: unknown }).length).to.be.a('number');
        expect(c.height).to.be.a('number');
        expect(c.timestamp).to.match(TIME_US);
      }
    }
  });
});

describe('GET /indexer/nft/v1/collections/:collection_addr', () => {
  for (const vm of VMS) {
    it(`returns every ${vm} collection doubly nested, for every address form`, async () => {
      const t = await makeTestApp(vm);
      for (const c of t.dump.collections) {
        for (const [form, value] of Object.entries(addressForms(c.addr, t.dump.prefix))) {
          const res = await t.api.get(`/indexer/nft/v1/collections/${encodeURIComponent(value)}`);
          expect(res.status, `${form} ${value}: ${res.text}`).to.equal(200);
          expect(res.body, `${form} ${value}`).to.deep.equal({ collection: c.obj });
        }
      }
    });
  }

  it('returns 404 when no collection has the address', async () => {
    const t = await makeTestApp('evm');
    const res = await t.api.get(`/indexer/nft/v1/collections/0x${'12'.repeat(20)}`);
    expect(res.status).to.equal(404);
    expect(res.body.code).to.equal(5);
    expect(res.body.details).to.deep.equal([]);
  });

  it('returns 400 naming collection_addr when the address cannot be parsed', async () => {
    const t = await makeTestApp('move');
    for (const bad of ['zz', `0x${'f'.repeat(65)}`, 'init1qqqqbad']) {
      const res = await t.api.get(`/indexer/nft/v1/collections/${bad}`);
      expect(res.status, bad).to.equal(400);
      expect(res.body.code).to.equal(3);
      expect(res.body.message, bad).to.contain('collection_addr').and.contain(bad);
    }
  });
});

describe('GET /indexer/nft/v1/collections/by_account/:account', () => {
  for (const vm of VMS) {
    it(`returns the ${vm} collections in which the account owns tokens, newest first, for every address form`, async () => {
      const t = await makeTestApp(vm);
      const [hex] = ownersByTokenCount(t.dump)[0];
      const expected = {
        collections: cols(reversed(collectionsOfOwner(t.dump, hex))),
        pagination: { previous_key: null, next_key: null, total: String(collectionsOfOwner(t.dump, hex).length) },
      };
      expect(expected.collections.length).to.be.greaterThan(1);
      for (const [form, value] of Object.entries(addressForms(Buffer.from(hex, 'hex'), t.dump.prefix))) {
        expect(await getList(t, `/indexer/nft/v1/collections/by_account/${value}`, 'collections'), form).to.deep.equal(expected);
      }
    });
  }

  it('answers Celatone\'s request (count_total=false, limit 1000, reverse=false)', async () => {
    const t = await makeTestApp('wasm');
    const [hex] = ownersByTokenCount(t.dump)[1];
    const body = await getList(t, `/indexer/nft/v1/collections/by_account/${bech32Of(Buffer.from(hex, 'hex'), t.dump.prefix)}?pagination.count_total=false&pagination.limit=1000&pagination.reverse=false`, 'collections');
    expect(body).to.deep.equal({ collections: cols(collectionsOfOwner(t.dump, hex)), pagination: { previous_key: null, next_key: null, total: '0' } });
  });

  it('accepts a rollytics {"height":n} key, and answers 400 (not rollytics\' 500) for {"height":"x"}', async () => {
    const t = await makeTestApp('move');
    const [hex] = [...ownersByTokenCount(t.dump)].sort((a, b) => collectionsOfOwner(t.dump, b[0]).length - collectionsOfOwner(t.dump, a[0]).length)[0];
    const held = collectionsOfOwner(t.dump, hex);
    expect(held.length).to.be.greaterThan(2);
    const pivot = held[Math.floor(held.length / 2)].height;
    const path = `/indexer/nft/v1/collections/by_account/0x${hex}`;
    const desc = await getList(t, `${path}${qs({ 'pagination.key': rollyticsKey({ height: pivot }) })}`, 'collections');
    expect(desc.collections).to.deep.equal(cols(reversed(held.filter((c) => c.height < pivot))));
    const bad = await t.api.get(`${path}${qs({ 'pagination.key': rollyticsKey({ height: 'x' }) })}`);
    expect(bad.status).to.equal(400);
    expect(bad.body.code).to.equal(3);
    expect(bad.body.message).to.contain('pagination.key');
  });

  it('returns 200 with an empty list for an account without tokens', async () => {
    const t = await makeTestApp('move');
    const body = await getList(t, `/indexer/nft/v1/collections/by_account/0x${'77'.repeat(20)}`, 'collections');
    expect(body).to.deep.equal(emptyList('collections'));
  });
});

describe('GET /indexer/nft/v1/collections/by_name/:name', () => {
  const matching = (rows: CollectionRow[], q: string): CollectionRow[] => {
    const n = normalizeName(q);
    return reversed(collectionsAsc({ collections: rows } as never).filter((c) => normalizeName(c.name).includes(n) || normalizeName(c.originName).includes(n)));
  };

  it('finds a name with a space sent as %20', async () => {
    const t = await makeTestApp('move');
    const body = await getList(t, '/indexer/nft/v1/collections/by_name/Cool%20Cats', 'collections');
    const expected = matching(t.dump.collections, 'Cool Cats');
    expect(expected.map((c) => c.name)).to.include('Cool Cats');
    expect(body).to.deep.equal({ collections: cols(expected), pagination: { previous_key: null, next_key: null, total: String(expected.length) } });
  });

  it('finds non-ASCII names sent percent-encoded, ignoring case', async () => {
    for (const vm of VMS) {
      const t = await makeTestApp(vm);
      for (const q of ['日本のアート', 'Ünïcode Ëlves', 'ÜNÏCODE']) {
        const expected = matching(t.dump.collections, q);
        expect(expected, `${vm} ${q}`).to.have.length(1);
        const body = await getList(t, `/indexer/nft/v1/collections/by_name/${encodeURIComponent(q)}`, 'collections');
        expect(body.collections, `${vm} ${q}`).to.deep.equal(cols(expected));
      }
    }
  });

  it('matches the origin name of an IBC collection', async () => {
    const t = await makeTestApp('wasm');
    const ibc = t.dump.collections.find((c) => c.originName !== '') as CollectionRow;
    const body = await getList(t, `/indexer/nft/v1/collections/by_name/${encodeURIComponent(ibc.originName.toLowerCase())}`, 'collections');
    expect(body.collections).to.deep.equal(cols(matching(t.dump.collections, ibc.originName)));
    expect(body.collections).to.deep.include(ibc.obj);
  });

  it('returns every collection a substring matches, with the exact total, in both orders', async () => {
    const t = await makeTestApp('evm');
    const expected = matching(t.dump.collections, 'E');
    expect(expected.length).to.be.greaterThan(2);
    const body = await getList(t, '/indexer/nft/v1/collections/by_name/E?pagination.limit=2', 'collections');
    expect(body.collections).to.deep.equal(cols(expected.slice(0, 2)));
    expect(body.pagination.total).to.equal(String(expected.length));
    const asc = await getList(t, '/indexer/nft/v1/collections/by_name/e?pagination.reverse=false', 'collections');
    expect(asc.collections).to.deep.equal(cols(reversed(expected)));
  });

  it('decodes %2F and %2f inside the name segment (an ibc/… collection name)', async () => {
    const t = await makeTestApp('move');
    const ibc = t.dump.collections.find((c) => c.name.startsWith('ibc/')) as CollectionRow;
    const q = ibc.name.slice(0, 10);
    for (const path of [q.replace('/', '%2F'), q.replace('/', '%2f').toLowerCase()]) {
      const body = await getList(t, `/indexer/nft/v1/collections/by_name/${path}`, 'collections');
      expect(body.collections, path).to.deep.equal(cols(matching(t.dump.collections, q)));
      expect(body.collections, path).to.deep.include(ibc.obj);
    }
  });

  it('returns 200 with an empty list when nothing matches', async () => {
    const t = await makeTestApp('move');
    expect(await getList(t, '/indexer/nft/v1/collections/by_name/no%20such%20collection%20xyzzy', 'collections')).to.deep.equal(emptyList('collections'));
  });
});

describe('GET /indexer/nft/v1/tokens/by_account/:account', () => {
  for (const vm of VMS) {
    it(`returns the ${vm} account's tokens by token_id descending by default, with the exact total`, async () => {
      const t = await makeTestApp(vm);
      const [hex, count] = ownersByTokenCount(t.dump)[0];
      const rows = sortTokens(t.dump.tokens.filter((k) => k.owner.toString('hex') === hex), 'token_id');
      const body = await getList(t, `/indexer/nft/v1/tokens/by_account/${bech32Of(Buffer.from(hex, 'hex'), t.dump.prefix)}?pagination.limit=30`, 'tokens');
      expect(body.tokens).to.deep.equal(toks(reversed(rows).slice(0, 30)));
      expect(body.pagination.total).to.equal(String(count));
    });
  }

  it('orders by height with order_by=height, ascending with reverse=false, for every address form', async () => {
    const t = await makeTestApp('evm');
    const [hex] = ownersByTokenCount(t.dump)[1];
    const rows = t.dump.tokens.filter((k) => k.owner.toString('hex') === hex);
    for (const [form, value] of Object.entries(addressForms(Buffer.from(hex, 'hex'), t.dump.prefix))) {
      const h = await getList(t, `/indexer/nft/v1/tokens/by_account/${value}?order_by=height&pagination.limit=12`, 'tokens');
      expect(h.tokens, form).to.deep.equal(toks(reversed(sortTokens(rows, 'height')).slice(0, 12)));
    }
    const asc = await getList(t, `/indexer/nft/v1/tokens/by_account/0x${hex}?order_by=token_id&pagination.reverse=false&pagination.limit=12`, 'tokens');
    expect(asc.tokens).to.deep.equal(toks(sortTokens(rows, 'token_id').slice(0, 12)));
  });

  it('restricts to one collection with collection_addr in any address form', async () => {
    for (const vm of VMS) {
      const t = await makeTestApp(vm);
      const [hex] = ownersByTokenCount(t.dump)[0];
      const col = collectionsOfOwner(t.dump, hex)[0];
      const rows = sortTokens(t.dump.tokens.filter((k) => k.owner.toString('hex') === hex && k.collection.equals(col.addr)), 'token_id');
      for (const [form, value] of Object.entries(addressForms(col.addr, t.dump.prefix))) {
        const body = await getList(t, `/indexer/nft/v1/tokens/by_account/0x${hex}${qs({ collection_addr: value })}`, 'tokens');
        expect(body, `${vm} ${form}`).to.deep.equal({
          tokens: toks(reversed(rows)), pagination: { previous_key: null, next_key: null, total: String(rows.length) },
        });
      }
    }
  });

  it('finds one token with token_id, also when the explorer double-encodes it', async () => {
    const t = await makeTestApp('move');
    const token = t.dump.tokens.find((k) => k.tokenId.includes('#')) as TokenRow;
    const owner = bech32Of(token.owner, t.dump.prefix);
    const expected = { tokens: [token.obj], pagination: { previous_key: null, next_key: null, total: '1' } };
    // Celatone applies encodeURIComponent and axios encodes again (client-explorer Q4)
    for (const q of [qs({ token_id: token.tokenId }), qs({ token_id: encodeURIComponent(token.tokenId) }),
      qs({ token_id: token.tokenId, collection_addr: hexOf(token.collection) })]) {
      expect(await getList(t, `/indexer/nft/v1/tokens/by_account/${owner}${q}`, 'tokens'), q).to.deep.equal(expected);
    }
  });

  it('treats an empty collection_addr or token_id as no filter', async () => {
    const t = await makeTestApp('wasm');
    const [hex, count] = ownersByTokenCount(t.dump)[0];
    const rows = sortTokens(t.dump.tokens.filter((k) => k.owner.toString('hex') === hex), 'token_id');
    const body = await getList(t, `/indexer/nft/v1/tokens/by_account/0x${hex}?collection_addr=&token_id=&pagination.limit=10`, 'tokens');
    expect({ tokens: body.tokens, total: body.pagination.total }).to.deep.equal({ tokens: toks(reversed(rows).slice(0, 10)), total: String(count) });
  });

  it('returns 200 with an empty list for an account without tokens', async () => {
    const t = await makeTestApp('wasm');
    expect(await getList(t, `/indexer/nft/v1/tokens/by_account/0x${'31'.repeat(20)}`, 'tokens')).to.deep.equal(emptyList('tokens'));
  });

  it('returns 400 naming order_by when it is neither token_id nor height', async () => {
    const t = await makeTestApp('move');
    const [hex] = ownersByTokenCount(t.dump)[0];
    const res = await t.api.get(`/indexer/nft/v1/tokens/by_account/0x${hex}?order_by=name`);
    expect(res.status).to.equal(400);
    expect(res.body.code).to.equal(3);
    expect(res.body.message).to.contain('order_by').and.contain('name');
  });
});

describe('GET /indexer/nft/v1/tokens/by_collection/:collection_addr', () => {
  for (const vm of VMS) {
    it(`returns the ${vm} collection's tokens in both orders, for every address form of the collection`, async () => {
      const t = await makeTestApp(vm);
      const col = biggestCollection(t.dump.collections);
      const rows = t.dump.tokens.filter((k) => k.collection.equals(col.addr));
      const expected = {
        tokens: toks(reversed(sortTokens(rows, 'token_id')).slice(0, 20)),
        pagination: { total: String(rows.length) },
      };
      for (const [form, value] of Object.entries(addressForms(col.addr, t.dump.prefix))) {
        const body = await getList(t, `/indexer/nft/v1/tokens/by_collection/${encodeURIComponent(value)}?pagination.limit=20`, 'tokens');
        expect({ tokens: body.tokens, pagination: { total: body.pagination.total } }, form).to.deep.equal(expected);
      }
      const byHeight = await getList(t, `/indexer/nft/v1/tokens/by_collection/${hexOf(col.addr)}?order_by=height&pagination.reverse=false&pagination.limit=20`, 'tokens');
      expect(byHeight.tokens).to.deep.equal(toks(sortTokens(rows, 'height').slice(0, 20)));
    });
  }

  it('returns the exact supply as total with count_total=true and no limit (Celatone\'s supply patch)', async () => {
    const t = await makeTestApp('wasm');
    const col = biggestCollection(t.dump.collections);
    const body = await getList(t, `/indexer/nft/v1/tokens/by_collection/${bech32Of(col.addr, t.dump.prefix)}?pagination.count_total=true`, 'tokens');
    expect(body.pagination.total).to.equal(String(col.obj.collection.nfts.length));
    expect(body.tokens).to.have.length(Math.min(100, col.obj.collection.nfts.length));
  });

  it('finds one token with token_id: "#", "/" and spaces, plain or double-encoded', async () => {
    for (const vm of ['move', 'wasm'] as const) {
      const t = await makeTestApp(vm);
      for (const token of [t.dump.tokens.find((k) => k.tokenId.includes('#')), t.dump.tokens.find((k) => k.tokenId.includes('/'))] as TokenRow[]) {
        const expected = { tokens: [token.obj], pagination: { previous_key: null, next_key: null, total: '1' } };
        for (const q of [qs({ token_id: token.tokenId }), qs({ token_id: encodeURIComponent(token.tokenId) })]) {
          expect(await getList(t, `/indexer/nft/v1/tokens/by_collection/${hexOf(token.collection)}${q}`, 'tokens'), `${vm} ${q}`).to.deep.equal(expected);
        }
      }
    }
  });

  it('returns 200 with an empty list for a collection without tokens', async () => {
    const t = await makeTestApp('evm');
    expect(await getList(t, `/indexer/nft/v1/tokens/by_collection/0x${'ab'.repeat(20)}`, 'tokens')).to.deep.equal(emptyList('tokens'));
  });

  it('accepts a rollytics {"height":n,"token_id":"s"} key', async () => {
    const t = await makeTestApp('move');
    const col = biggestCollection(t.dump.collections);
    const rows = sortTokens(t.dump.tokens.filter((k) => k.collection.equals(col.addr)), 'token_id');
    const pivot = rows[Math.floor(rows.length / 2)];
    const key = rollyticsKey({ height: pivot.height, token_id: pivot.tokenId });
    const body = await getList(t, `/indexer/nft/v1/tokens/by_collection/${hexOf(col.addr)}${qs({ 'pagination.key': key, 'pagination.limit': 5 })}`, 'tokens');
    expect(body.tokens).to.deep.equal(toks(reversed(rows.slice(0, Math.floor(rows.length / 2))).slice(0, 5)));
    const asc = await getList(t, `/indexer/nft/v1/tokens/by_collection/${hexOf(col.addr)}${qs({ 'pagination.key': key, 'pagination.limit': 5, 'pagination.reverse': false })}`, 'tokens');
    expect(asc.tokens).to.deep.equal(toks(rows.slice(Math.floor(rows.length / 2) + 1, Math.floor(rows.length / 2) + 6)));
  });

  it('serves owner bech32 on every VM, object_addr "" off Move, height a number and µs timestamps', async () => {
    for (const vm of VMS) {
      const t = await makeTestApp(vm, { validateResponses: false });
      const col = biggestCollection(t.dump.collections);
      const res = await t.api.get(`/indexer/nft/v1/tokens/by_collection/${hexOf(col.addr)}?pagination.limit=1000`);
      for (const k of res.body.tokens as Record<string, unknown>[]) {
        expect(Object.keys(k)).to.deep.equal(['collection_addr', 'collection_name', 'collection_origin_name', 'object_addr', 'owner', 'nft', 'height', 'timestamp']);
        expect(Object.keys(k.nft as object)).to.deep.equal(['token_id', 'uri']);
        expect(k.owner).to.match(new RegExp(`^${t.dump.prefix}1([02-9ac-hj-np-z]{38}|[02-9ac-hj-np-z]{58})$`));
        expect(k.object_addr).to.match(vm === 'move' ? /^0x[0-9a-f]{64}$/ : /^$/);
        expect(k.collection_addr).to.equal(hexOf(col.addr));
        expect(k.height).to.be.a('number');
        expect(k.timestamp).to.match(TIME_US);
      }
    }
  });
});

describe('GET /indexer/nft/v1/txs/:collection_addr/:token_id', () => {
  for (const vm of VMS) {
    it(`returns the txs of the ${vm} NFT with the longest history, newest first, with the exact total`, async () => {
      const t = await makeTestApp(vm);
      const token = longestHistory(t.dump);
      const rows = nftTxs(t.dump, token);
      expect(rows.length).to.be.greaterThan(1);
      const body = await getList(t, `/indexer/nft/v1/txs/${hexOf(token.collection)}/${encodeURIComponent(token.tokenId)}`, 'txs');
      expect(body).to.deep.equal({
        txs: reversed(rows).map((x) => x.obj), pagination: { previous_key: null, next_key: null, total: String(rows.length) },
      });
    });
  }

  it('decodes token ids with "#", "/" and spaces in the path, and every collection address form', async () => {
    for (const vm of ['move', 'wasm'] as const) {
      const t = await makeTestApp(vm);
      for (const pred of [(id: string) => id.includes('#'), (id: string) => id.includes('/'), (id: string) => id.startsWith('token ')]) {
        const token = t.dump.tokens.find((k) => pred(k.tokenId) && nftTxs(t.dump, k).length > 0) as TokenRow;
        const rows = reversed(nftTxs(t.dump, token)).map((x) => x.obj);
        for (const [form, value] of Object.entries(addressForms(token.collection, t.dump.prefix))) {
          const body = await getList(t, `/indexer/nft/v1/txs/${value}/${encodeURIComponent(token.tokenId)}`, 'txs');
          expect(body.txs, `${vm} ${form} ${token.tokenId}`).to.deep.equal(rows);
        }
      }
    }
  });

  it('returns 200 with an empty list for an unknown NFT', async () => {
    const t = await makeTestApp('wasm');
    const col = t.dump.collections[0];
    expect(await getList(t, `/indexer/nft/v1/txs/${hexOf(col.addr)}/no%20such%20token`, 'txs')).to.deep.equal(emptyList('txs'));
  });
});
