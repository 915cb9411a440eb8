/**
 * The built-in explorer in a real browser (chromium via playwright-core) against a real `serve`
 * process on each demo snapshot: every page type is opened, lists are followed to their last page
 * by the explorer's own Next button, the search box is used, and what the page shows is compared
 * with what the API answers for the same thing.
 */
import { expect } from 'chai';
import Database from 'better-sqlite3';
import { copyFileSync, mkdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { canonicalAddress, toHex0x } from '../../src/lib/address';
import { chromiumOrSkip } from '../support/browser';
import { DEMO, get, getJson, ROOT, serveTmp, ServeProcess, smallSnapshots, startServe } from '../helpers/serve';

type Json = Record<string, unknown>;
interface Page1 { pagination: { next_key: string | null; total: string } }
interface Block { height: string; hash: string; tx_count: string }
interface Tx { txhash: string; height: string }
interface EvmTx { transactionHash: string; blockNumber: string; from: string }
interface Nft { collection_addr: string; collection_name: string; owner: string; nft: { token_id: string; uri: string } }
interface Collection { object_addr: string; collection: { name: string; nfts: { length: number } } }
interface Holder { account: string; amount: string }

/** Every item of an API list, following next_key (1000 a page). */
async function apiAll<T>(base: string, path: string, items: string): Promise<{ all: T[]; total: string }> {
  const all: T[] = [];
  let key: string | null = null;
  let total = '';
  do {
    const url: string = `${base}${path}${path.includes('?') ? '&' : '?'}pagination.limit=1000${key ? `&pagination.key=${encodeURIComponent(key)}` : ''}`;
    const body: Json & Page1 = await getJson<Json & Page1>(url);
    all.push(...(body[items] as T[]));
    if (!key) total = body.pagination.total;
    key = body.pagination.next_key;
  } while (key);
  return { all, total };
}

async function open(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await page.waitForSelector('main[data-ready]');
}

const field = async (page: Page, key: string): Promise<string> => ((await page.textContent(`main [data-field="${key}"]`)) ?? '').trim();

/** Follows a list's Next button to the last page; the row keys of every page and the total shown. */
async function walk(page: Page, list: string): Promise<{ keys: string[]; total: string; pages: number }> {
  const sel = `[data-list="${list}"]`;
  const keys: string[] = [];
  let pages = 0;
  for (;;) {
    await page.waitForSelector(`${sel}[data-loaded="${pages + 1}"]`);
    pages++;
    keys.push(...await page.$$eval(`${sel} tbody tr`, (rows) => rows.map((r) => r.getAttribute('data-key') ?? '')));
    const next = await page.$(`${sel} button[data-action="next"]`);
    if (!next || await next.isDisabled()) break;
    await next.click();
  }
  const total = (await page.getAttribute(`${sel} [data-total]`, 'data-total')) ?? '';
  return { keys, total, pages };
}

/** Waits until every list on the page has loaded its page. */
async function listsLoaded(page: Page): Promise<void> {
  await page.waitForFunction(() => [...document.querySelectorAll('[data-list]')].every((l) => l.hasAttribute('data-loaded')));
}

/** Text nodes in main that read "null" (what replaceChildren makes of a null child). */
const nullTexts = (page: Page): Promise<number> => page.evaluate(() => {
  const walker = document.createTreeWalker(document.querySelector('main') as Node, NodeFilter.SHOW_TEXT);
  let n = 0;
  while (walker.nextNode()) if ((walker.currentNode.textContent ?? '').trim() === 'null') n++;
  return n;
});

/** A run of digits grouped by commas in threes. */
const GROUPED = /^\d{1,3}(,\d{3})*$/;

async function search(page: Page, text: string): Promise<string> {
  await page.fill('#q', text);
  await page.click('#search button');
  await page.waitForSelector('main[data-ready]');
  return new URL(page.url()).pathname + new URL(page.url()).search;
}

describe('the built-in explorer in a browser', function () {
  this.timeout(180_000);
  let browser: Browser | undefined;

  before(async function () {
    browser = await chromiumOrSkip(this);
  });
  after(async () => { await browser?.close(); });

  // the last run: every page, link, search and API call of the explorer under serve --base-url
  for (const [vm, prefix] of [['move', ''], ['wasm', ''], ['evm', ''], ['evm', '/minimove-1']] as const) {
    describe(`on the ${vm} demo${prefix ? ` under --base-url ${prefix}/` : ''}`, () => {
      let server: ServeProcess;
      let page: Page;
      let base: string;
      const errors: string[] = [];
      const elsewhere: string[] = [];

      before(async () => {
        server = await startServe(['--db', DEMO(vm), '--log-level', 'error', ...(prefix ? ['--base-url', `${prefix}/`] : [])]);
        // under --base-url the "serving … on URL" line ends with the prefix
        expect(server.url.endsWith(prefix)).to.equal(true);
        base = server.url;
        page = await browser!.newPage({ viewport: { width: 1280, height: 800 } });
        page.on('pageerror', (e) => errors.push(e.message));
        // offline: nothing but this server (no CDN, no web fonts)
        page.on('request', (r) => { if (!r.url().startsWith(`${base}/`) && !r.url().startsWith('data:')) elsewhere.push(r.url()); });
      });
      after(async () => {
        await page?.close();
        await server?.stop();
      });
      afterEach(() => {
        expect(errors, 'script errors on the page').to.deep.equal([]);
        expect(elsewhere, 'requests to anything but this server').to.deep.equal([]);
      });

      it('shows the chain, its VM and height, the latest blocks and txs with exact totals', async () => {
        await open(page, `${base}/`);
        const status = await getJson<{ chain_id: string; height: number }>(`${base}/status`);
        expect(await field(page, 'chain_id')).to.equal(status.chain_id);
        expect(await field(page, 'height')).to.equal(String(status.height));
        expect(await field(page, 'vm')).to.equal(vm);
        for (const [list, path, items, key] of [
          ['blocks', '/indexer/block/v1/blocks', 'blocks', (b: Json) => b.height],
          ['txs', '/indexer/tx/v1/txs', 'txs', (t: Json) => t.txhash],
          ...(vm === 'evm' ? [['evm-txs', '/indexer/tx/v1/evm-txs', 'txs', (t: Json) => t.transactionHash]] : []),
        ] as [string, string, string, (x: Json) => unknown][]) {
          await page.waitForSelector(`[data-list="${list}"][data-loaded="1"]`);
          const api = await getJson<Json & Page1>(`${base}${path}?pagination.limit=25`);
          const shown = await page.$$eval(`[data-list="${list}"] tbody tr`, (rows) => rows.map((r) => r.getAttribute('data-key')));
          expect(shown, list).to.deep.equal((api[items] as Json[]).map((x) => String(key(x))));
          expect(await page.getAttribute(`[data-list="${list}"] [data-total]`, 'data-total'), list).to.equal(api.pagination.total);
        }
        if (vm === 'evm') {
          mkdirSync(join(ROOT, 'build'), { recursive: true });
          await page.screenshot({ path: join(ROOT, 'build', 'explorer.png') });
          // README's picture: regenerated on request (fonts differ between machines)
          if (process.env.UPDATE_SCREENSHOTS) await page.screenshot({ path: join(ROOT, 'docs', 'explorer.png') });
        }
      });

      it('shows no stray "null" under lists that fit on one page', async () => {
        const { blocks } = await getJson<{ blocks: Block[] }>(`${base}/indexer/block/v1/blocks?pagination.limit=50`);
        const b = blocks.find((x) => Number(x.tx_count) >= 1 && Number(x.tx_count) < 25) as Block;
        const { collections } = await getJson<{ collections: Collection[] }>(`${base}/indexer/nft/v1/collections?pagination.limit=1`);
        const { tokens } = await getJson<{ tokens: Nft[] }>(`${base}/indexer/nft/v1/tokens/by_collection/${collections[0].object_addr}?pagination.limit=1`);
        const paths = ['/', `/blocks/${b.height}`, `/search?q=${encodeURIComponent(collections[0].collection.name)}`,
          `/nft-collections/${collections[0].object_addr}/${encodeURIComponent(tokens[0].nft.token_id)}`];
        if (vm === 'evm') {
          const { txs } = await getJson<{ txs: EvmTx[] }>(`${base}/indexer/tx/v1/evm-txs?pagination.limit=1`);
          paths.push(`/evm-txs/${txs[0].transactionHash}`);
        }
        for (const path of paths) {
          await open(page, `${base}${path}`);
          await listsLoaded(page);
          expect(await page.$$eval('[data-list]', (l) => l.length), path).to.be.greaterThan(0);
          expect(await nullTexts(page), path).to.equal(0);
        }
      });

      it('links a block to its neighbours, but not past the latest block', async () => {
        const { height } = await getJson<{ height: number }>(`${base}/status`);
        const hrefs = (): Promise<string[]> => page.$$eval('main [data-field="nav"] a', (as) => as.map((a) => a.getAttribute('href') ?? ''));
        await open(page, `${base}/blocks/${height}`);
        expect(await hrefs()).to.deep.equal([`${prefix}/blocks/${height - 1}`]);
        expect(await field(page, 'nav')).to.match(/latest block/);
        await open(page, `${base}/blocks/${height - 1}`);
        expect(await hrefs()).to.deep.equal([`${prefix}/blocks/${height - 2}`, `${prefix}/blocks/${height}`]);
      });

      it('keeps the home page lists inside their cards (a long ibc/… collection name wraps)', async () => {
        const { collections } = await getJson<{ collections: Collection[] }>(`${base}/indexer/nft/v1/collections?pagination.limit=100`);
        expect(collections.some((c) => c.collection.name.length > 60), 'the demo has a long collection name').to.equal(true);
        await open(page, `${base}/`);
        await listsLoaded(page);
        const overflowing = await page.$$eval('[data-list] .table-wrap', (ws) => ws.filter((w) => w.scrollWidth > w.clientWidth)
          .map((w) => w.closest('[data-list]')?.getAttribute('data-list')));
        expect(overflowing).to.deep.equal([]);
      });

      it('pages through every block to the last page by next_key', async () => {
        await open(page, `${base}/`);
        const shown = await walk(page, 'blocks');
        const api = await apiAll<Block>(base, '/indexer/block/v1/blocks', 'blocks');
        expect(shown.keys).to.deep.equal(api.all.map((b) => b.height));
        expect(shown.total).to.equal(api.total);
        expect(shown.pages).to.equal(Math.ceil(api.all.length / 25));
      });

      it('shows a block with its transactions', async () => {
        const { blocks } = await getJson<{ blocks: Block[] }>(`${base}/indexer/block/v1/blocks?pagination.limit=50`);
        const b = blocks.find((x) => Number(x.tx_count) >= 2) as Block;
        await open(page, `${base}/blocks/${b.height}`);
        expect(await field(page, 'height')).to.equal(b.height);
        expect(await field(page, 'hash')).to.equal(b.hash);
        expect(await field(page, 'tx_count')).to.equal(b.tx_count);
        const txs = await apiAll<Tx>(base, `/indexer/tx/v1/txs/by_height/${b.height}`, 'txs');
        expect((await walk(page, 'block-txs')).keys).to.deep.equal(txs.all.map((t) => t.txhash));
      });

      it('shows a transaction, reached from its block', async () => {
        const { txs } = await getJson<{ txs: Tx[] }>(`${base}/indexer/tx/v1/txs?pagination.limit=1`);
        await open(page, `${base}/blocks/${txs[0].height}`);
        await page.waitForSelector('[data-list="block-txs"][data-loaded]');
        await page.click(`[data-list="block-txs"] tr[data-key="${txs[0].txhash}"] a`);
        await page.waitForSelector('main[data-ready]');
        expect(new URL(page.url()).pathname).to.equal(`${prefix}/txs/${txs[0].txhash}`);
        expect(await field(page, 'txhash')).to.equal(txs[0].txhash);
        expect(await field(page, 'height')).to.equal(txs[0].height);
      });

      describe('NFTs and accounts', () => {
        let token: Nft;
        let collection: Collection;

        before(async () => {
          // a token whose id needs encoding in a path: `/`, `#`, a space — in that order of preference
          const { all: cols } = await apiAll<Collection>(base, '/indexer/nft/v1/collections', 'collections');
          const tokens: Nft[] = [];
          for (const c of cols) tokens.push(...(await apiAll<Nft>(base, `/indexer/nft/v1/tokens/by_collection/${c.object_addr}`, 'tokens')).all);
          token = ['/', '#', ' '].map((ch) => tokens.find((t) => t.nft.token_id.includes(ch))).find(Boolean) ?? tokens[0];
          collection = cols.find((c) => c.object_addr === token.collection_addr) as Collection;
        });

        it('shows a collection and pages through all its tokens', async () => {
          await open(page, `${base}/nft-collections/${collection.object_addr}`);
          expect(await field(page, 'name')).to.equal(collection.collection.name);
          expect(await field(page, 'length')).to.equal(String(collection.collection.nfts.length));
          const shown = await walk(page, 'collection-tokens');
          const api = await apiAll<Nft>(base, `/indexer/nft/v1/tokens/by_collection/${collection.object_addr}`, 'tokens');
          expect(shown.keys).to.deep.equal(api.all.map((t) => t.nft.token_id));
          expect(shown.total).to.equal(api.total);
        });

        it(`opens a token whose id needs encoding from its collection's list, with its history`, async () => {
          await open(page, `${base}/nft-collections/${collection.object_addr}`);
          const sel = '[data-list="collection-tokens"]';
          for (let n = 1; ; n++) {
            await page.waitForSelector(`${sel}[data-loaded="${n}"]`);
            const row = await page.$(`${sel} tr[data-key="${token.nft.token_id.replace(/["\\]/g, '\\$&')}"] a`);
            if (row) { await row.click(); break; }
            await page.click(`${sel} button[data-action="next"]`);
          }
          await page.waitForSelector('main[data-ready]');
          expect(new URL(page.url()).pathname).to.equal(`${prefix}/nft-collections/${collection.object_addr}/${encodeURIComponent(token.nft.token_id)}`);
          expect(await field(page, 'token_id')).to.equal(token.nft.token_id);
          expect(await field(page, 'owner')).to.equal(token.owner);
          expect(await field(page, 'uri')).to.equal(token.nft.uri || '—');
          const txs = await apiAll<Tx>(base, `/indexer/nft/v1/txs/${collection.object_addr}/${encodeURIComponent(token.nft.token_id)}`, 'txs');
          const shown = await walk(page, 'token-txs');
          expect(shown.keys).to.deep.equal(txs.all.map((t) => t.txhash));
          expect(shown.total).to.equal(txs.total);
        });

        it("shows an account's txs and NFTs, every page", async () => {
          await open(page, `${base}/accounts/${token.owner}`);
          expect(await field(page, 'address')).to.equal(token.owner);
          const lists: [string, string, string, (x: Json) => string][] = [
            ['account-txs', `/indexer/tx/v1/txs/by_account/${token.owner}`, 'txs', (t) => String(t.txhash)],
            ['account-nfts', `/indexer/nft/v1/tokens/by_account/${token.owner}`, 'tokens', (n) => `${n.collection_addr}/${(n.nft as Json).token_id}`],
          ];
          if (vm === 'evm') lists.push(['account-evm-txs', `/indexer/tx/v1/evm-txs/by_account/${token.owner}`, 'txs', (t) => String(t.transactionHash)]);
          for (const [list, path, items, key] of lists) {
            const shown = await walk(page, list);
            const api = await apiAll<Json>(base, path, items);
            expect(shown.keys, list).to.deep.equal(api.all.map(key));
            expect(shown.total, list).to.equal(api.total);
          }
        });

        it('finds by search: a height, a tx hash, an account, a collection address and name', async () => {
          await open(page, `${base}/`);
          const { txs } = await getJson<{ txs: Tx[] }>(`${base}/indexer/tx/v1/txs?pagination.limit=1`);
          expect(await search(page, '7')).to.equal(`${prefix}/blocks/7`);
          expect(await field(page, 'height')).to.equal('7');
          expect(await search(page, txs[0].txhash.toLowerCase())).to.equal(`${prefix}/txs/${txs[0].txhash}`);
          expect(await search(page, token.owner)).to.equal(`${prefix}/accounts/${token.owner}`);
          expect(await search(page, collection.object_addr)).to.equal(`${prefix}/nft-collections/${collection.object_addr}`);
          const named = await getJson<{ collections: Collection[] }>(`${base}/indexer/nft/v1/collections/by_name/${encodeURIComponent(collection.collection.name)}`);
          const where = await search(page, collection.collection.name);
          if (named.collections.length === 1) expect(where).to.equal(`${prefix}/nft-collections/${collection.object_addr}`);
          else {
            await page.waitForSelector('[data-list="search-collections"][data-loaded]');
            const shown = await page.$$eval('[data-list="search-collections"] tbody tr', (rows) => rows.map((r) => r.getAttribute('data-key')));
            expect(shown).to.deep.equal(named.collections.map((c) => c.object_addr));
          }
          await search(page, 'no such thing anywhere');
          expect(await page.getAttribute('main .error-box', 'data-error')).to.equal('404');
          expect(await field(page, 'message')).to.match(/^nothing found for "no such thing anywhere"/);
        });
      });

      it('shows a clear error page for an unknown hash, a bad address, a missing block', async () => {
        for (const [path, status, message] of [
          [`/txs/${'ab'.repeat(32)}`, '404', /not found/],
          ['/accounts/not-an-address', '400', /not-an-address/],
          ['/blocks/999999', '404', /999999/],
          ['/nft-collections/0x1234/no-such-token', '404', /no-such-token/],
        ] as const) {
          await open(page, `${base}${path}`);
          expect(await page.getAttribute('main .error-box', 'data-error'), path).to.equal(status);
          expect(await field(page, 'message'), path).to.match(message);
        }
      });

      it('fits a phone-width screen without sideways scrolling', async () => {
        const phone = await browser!.newPage({ viewport: { width: 375, height: 740 } });
        try {
          for (const path of ['/', `/blocks/5`, '/accounts/not-an-address']) {
            await open(phone, `${base}${path}`);
            const [scroll, width] = await phone.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
            expect(scroll, path).to.be.at.most(width);
          }
        } finally {
          await phone.close();
        }
      });

      if (vm === 'evm') {
        it('shows an EVM tx, searched by its hash', async () => {
          const { txs } = await getJson<{ txs: EvmTx[] }>(`${base}/indexer/tx/v1/evm-txs?pagination.limit=1`);
          await open(page, `${base}/`);
          expect(await search(page, txs[0].transactionHash.toUpperCase().replace('0X', '0x'))).to.equal(`${prefix}/evm-txs/${txs[0].transactionHash}`);
          expect(await field(page, 'transactionHash')).to.equal(txs[0].transactionHash);
          expect(await field(page, 'blockNumber')).to.equal(BigInt(txs[0].blockNumber).toString());
          expect(await field(page, 'from')).to.equal(txs[0].from);
          const internal = await apiAll<{ parent_index: number; index: number }>(base, `/indexer/tx/v1/evm-internal-txs/${txs[0].transactionHash}`, 'internal_txs');
          expect(internal.all.length, 'the demo has internal txs to show').to.be.greaterThan(0);
          await page.waitForSelector('[data-list="evm-internal-txs"][data-loaded="1"]');
          // the call's own index, and who called it: "the tx" for the top-level call, never "-1"
          const cells = await page.$$eval('[data-list="evm-internal-txs"] tbody tr', (rows) => rows.map((r) => [...r.querySelectorAll('td')].slice(0, 2).map((td) => td.textContent)));
          expect(cells).to.deep.equal(internal.all.slice(0, 25).map((x) => [String(x.index), x.parent_index < 0 ? 'the tx' : `#${x.parent_index}`]));
          const shown = await walk(page, 'evm-internal-txs');
          expect(shown.keys).to.deep.equal(internal.all.map((x) => `${x.parent_index}/${x.index}`));
          expect(shown.total).to.equal(internal.total);
        });

        it("pages through a denom's whole rich list and finds an account's balance in it", async () => {
          const db = new Database(DEMO('evm'), { readonly: true });
          const { denom } = db.prepare('SELECT denom FROM richlist_denoms ORDER BY denom LIMIT 1').get() as { denom: string };
          db.close();
          await open(page, `${base}/richlist/${denom}`);
          const api = await apiAll<Holder>(base, `/indexer/richlist/v1/${denom}`, 'holders');
          await page.waitForSelector('[data-list="holders"][data-loaded="1"]');
          // amounts in base units are long: shown with grouped digits, the exact value kept
          const amounts = await page.$$eval('[data-list="holders"] tbody tr td:last-child', (tds) => tds.map((td) => td.textContent ?? ''));
          expect(amounts.every((a) => GROUPED.test(a)), amounts.join(' ')).to.equal(true);
          expect(amounts.map((a) => a.replace(/,/g, ''))).to.deep.equal(api.all.slice(0, 25).map((x) => x.amount));
          expect(amounts.some((a) => a.includes(',')), 'some amount has 4+ digits').to.equal(true);
          const shown = await walk(page, 'holders');
          expect(shown.keys).to.deep.equal(api.all.map((x) => x.account));
          expect(shown.total).to.equal(api.total);
          // a bech32 account's balance, matched to the rich list's 0x accounts
          const { txs } = await getJson<{ txs: { tx: { body: { messages: { sender?: string }[] } } }[] }>(`${base}/indexer/tx/v1/txs?pagination.limit=50`);
          const senders = txs.map((t) => t.tx.body.messages[0]?.sender).filter((s): s is string => !!s);
          const held = senders.find((s) => api.all.some((x) => x.account === toHex0x(canonicalAddress(s, 'init')))) as string;
          const holder = api.all.find((x) => x.account === toHex0x(canonicalAddress(held, 'init'))) as Holder;
          await open(page, `${base}/accounts/${held}`);
          await page.fill('#balance-form input', denom);
          await page.click('#balance-form button');
          await page.waitForSelector('#balance-result[data-done]');
          expect((await field(page, 'amount')).replace(/,/g, '')).to.equal(holder.amount);
          expect(await field(page, 'amount')).to.match(GROUPED);
          expect(await field(page, 'rank')).to.equal(String(api.all.indexOf(holder) + 1));
        });
      }
    });
  }

  describe('live home page', () => {
    it('shows a new snapshot swapped in under the server without a reload', async () => {
      // two heights of one chain: a replica never changes chains unless told to (docs/scaling.md)
      const [before, after] = await smallSnapshots();
      const db = join(serveTmp(), 'explorer-live.sqlite');
      copyFileSync(before.file, db);
      const server = await startServe(['--db', db, '--log-level', 'error', '--watch-poll-ms', '100']);
      const page = await browser!.newPage();
      try {
        await open(page, `${server.url}/`);
        expect(await field(page, 'height')).to.equal(String(before.height));
        await page.evaluate(() => { (window as unknown as { stayed: boolean }).stayed = true; });
        copyFileSync(after.file, `${db}.incoming`);
        renameSync(`${db}.incoming`, db);
        await page.waitForFunction((h) => document.querySelector('[data-field="height"]')?.textContent === h, String(after.height), { timeout: 20_000 });
        expect(await page.evaluate(() => (window as unknown as { stayed?: boolean }).stayed)).to.equal(true);
        expect(await field(page, 'vm')).to.equal('wasm');
        await page.waitForSelector('[data-list="txs"][data-loaded="1"]');
        const api = await getJson<{ txs: Tx[] }>(`${server.url}/indexer/tx/v1/txs?pagination.limit=25`);
        const shown = await page.$$eval('[data-list="txs"] tbody tr', (rows) => rows.map((r) => r.getAttribute('data-key')));
        expect(shown).to.deep.equal(api.txs.map((t) => t.txhash));
      } finally {
        await page.close();
        await server.stop();
      }
    });
  });
});

describe('serve --explorer / --no-explorer (HTTP)', () => {
  let withIt: ServeProcess;
  let without: ServeProcess;
  before(async () => {
    [withIt, without] = await Promise.all([
      startServe(['--demo', 'wasm', '--log-level', 'error']),
      startServe(['--demo', 'wasm', '--log-level', 'error', '--no-explorer']),
    ]);
  });
  after(async () => { await Promise.all([withIt?.stop(), without?.stop()]); });

  it('answers the HTML shell for the explorer pages, and the script and stylesheet', async () => {
    for (const path of ['/', '/blocks/1', '/txs/AB', '/accounts/init1x', '/nft-collections/0x1/a%2Fb%20c', '/nft-collections/0x1/a/b', '/richlist/uinit', '/evm-txs/0x1', '/search?q=x']) {
      const r = await get(withIt.url + path);
      expect(r.status, path).to.equal(200);
      expect(r.headers['content-type'], path).to.match(/^text\/html/);
      expect(r.body, path).to.contain('/explorer/explorer.js');
    }
    expect((await get(`${withIt.url}/explorer/explorer.js`)).headers['content-type']).to.match(/javascript/);
    expect((await get(`${withIt.url}/explorer/explorer.css`)).headers['content-type']).to.match(/^text\/css/);
  });

  it('leaves every other path to the API: JSON answers and the JSON 404', async () => {
    for (const server of [withIt, without]) {
      const miss = await get(`${server.url}/no-such-page`);
      expect(miss.status).to.equal(404);
      expect(JSON.parse(miss.body)).to.deep.equal({ code: 5, message: 'not found: GET /no-such-page', details: [] });
      const status = await get(`${server.url}/status`);
      expect(status.headers['content-type']).to.match(/^application\/json/);
    }
    const block = await get(`${withIt.url}/indexer/block/v1/blocks/1`);
    expect(block.status).to.equal(200);
    expect(block.body).to.equal((await get(`${without.url}/indexer/block/v1/blocks/1`)).body);
  });

  it('with --no-explorer, / is the JSON 404 and the explorer files are gone', async () => {
    for (const path of ['/', '/blocks/1', '/explorer/explorer.js']) {
      const r = await get(without.url + path);
      expect(r.status, path).to.equal(404);
      expect(JSON.parse(r.body).message, path).to.equal(`not found: GET ${path}`);
    }
  });
});
