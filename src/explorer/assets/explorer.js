// The built-in explorer (docs/explorer.md): renders every page in the browser from the public
// API of the server that served it — nothing else. Plain browser JavaScript, no build step.
'use strict';
(function explorer() {
  const PAGE_SIZE = 25;
  const STATUS_POLL_MS = 2000;
  const main = document.getElementById('main');
  // serve --base-url: the prefix every path of this server carries ('' at the root), named by the shell
  const baseMeta = document.querySelector('meta[name="indexer-api-base"]');
  const BASE = baseMeta ? baseMeta.getAttribute('content') || '' : '';
  let generation = 0; // bumped on every navigation: late answers for an old page are dropped
  let poll; // the home page's status timer
  let chain; // { vm } once known (the API does not name the VM; see vmOf)

  // ---- DOM -------------------------------------------------------------------------------
  /** An element; attributes set as given (`on*` as listeners), children as text or nodes. */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }
  /**
   * Replaces el's children. Unlike el.replaceChildren, skips null/undefined/false (the DOM would
   * show them as the text "null"), so optional parts can be written `cond ? node : null`.
   */
  function put(el, ...children) {
    el.replaceChildren(...children.flat(Infinity).filter((c) => c !== undefined && c !== null && c !== false));
  }
  const link = (href, text, cls) => h('a', { href, 'data-nav': true, class: cls }, text);
  const mono = (text) => h('span', { class: 'mono' }, text);

  // ---- paths ------------------------------------------------------------------------------
  const seg = encodeURIComponent;
  // the explorer's pages, prefixed; API paths are written from the root and prefixed by api()
  const paths = {
    home: () => `${BASE}/`,
    block: (height) => `${BASE}/blocks/${seg(height)}`,
    tx: (hash) => `${BASE}/txs/${seg(hash)}`,
    evmTx: (hash) => `${BASE}/evm-txs/${seg(hash)}`,
    account: (a) => `${BASE}/accounts/${seg(a)}`,
    collection: (a) => `${BASE}/nft-collections/${seg(a)}`,
    token: (a, id) => `${BASE}/nft-collections/${seg(a)}/${seg(id)}`,
    richlist: (denom) => `${BASE}/richlist/${seg(denom)}`,
    search: (q) => withQuery(`${BASE}/search`, { q }),
  };
  const accountLink = (a) => (a ? link(paths.account(a), a, 'mono') : '');

  // ---- API --------------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, message, path) { super(message); this.status = status; this.path = path; }
  }
  /** GET of an API path; the JSON body, or an ApiError carrying the API's own message. */
  async function api(path) {
    let res;
    try {
      res = await fetch(BASE + path, { headers: { accept: 'application/json' }, cache: 'no-cache' });
    } catch (e) {
      throw new ApiError(0, `the server did not answer (${e.message})`, path);
    }
    let body;
    try { body = await res.json(); } catch { throw new ApiError(res.status, `HTTP ${res.status}: not a JSON answer`, path); }
    if (!res.ok) throw new ApiError(res.status, body && body.message ? body.message : `HTTP ${res.status}`, path);
    return body;
  }
  /** The answer, or undefined on a 404 (and 400: not a valid id of that kind); other errors thrown. */
  async function maybe(path) {
    try { return await api(path); } catch (e) {
      if (e instanceof ApiError && (e.status === 404 || e.status === 400)) return undefined;
      throw e;
    }
  }
  const withQuery = (path, params) => {
    const q = Object.entries(params).filter(([, v]) => v !== undefined && v !== null).map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');
    return q ? `${path}${path.includes('?') ? '&' : '?'}${q}` : path;
  };

  // ---- formatting -------------------------------------------------------------------------
  const hexToDec = (x) => (typeof x === 'string' && /^0x[0-9a-f]+$/i.test(x) ? BigInt(x).toString() : String(x ?? ''));
  const coins = (list) => (Array.isArray(list) && list.length ? list.map((c) => `${c.amount}${c.denom}`).join(', ') : '—');
  const msgTypes = (tx) => {
    const msgs = (tx.tx && tx.tx.body && tx.tx.body.messages) || [];
    return msgs.map((m) => String(m['@type'] || '').split('.').pop()).join(', ');
  };
  /** A base-unit amount with its digits grouped (90,375,217,…); anything not all digits as given. */
  const grouped = (x) => (/^\d+$/.test(String(x)) ? String(x).replace(/\B(?=(\d{3})+(?!\d))/g, ',') : String(x ?? ''));
  /** An amount cell/field: grouped digits, the exact value in data-value. */
  const amount = (x) => h('span', { 'data-value': String(x ?? '') }, grouped(x));
  const short = (s) => (s && s.length > 17 ? `${s.slice(0, 8)}…${s.slice(-6)}` : s);
  /** 0x hashes and addresses, two hex digits shorter than short(): five columns fit a home card. */
  const shortHex = (s) => (s && s.length > 17 ? `${s.slice(0, 8)}…${s.slice(-4)}` : s);
  const when = (ts) => String(ts || '').replace('T', ' ').replace(/\.\d+/, '').replace(/Z$/, '');

  // bech32 (BIP-173) decoding, to compare a bech32 account with the 0x accounts of a rich list
  const CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
  function bech32ToHex(addr) {
    const s = addr.toLowerCase();
    const sep = s.lastIndexOf('1');
    if (sep < 1 || s.length - sep < 8) return undefined;
    const words = [];
    for (const ch of s.slice(sep + 1)) { const v = CHARSET.indexOf(ch); if (v < 0) return undefined; words.push(v); }
    const data = words.slice(0, -6);
    let acc = 0, bits = 0; const bytes = [];
    for (const w of data) { acc = (acc << 5) | w; bits += 5; while (bits >= 8) { bits -= 8; bytes.push((acc >> bits) & 0xff); } }
    return '0x' + bytes.map((b) => b.toString(16).padStart(2, '0')).join('');
  }
  /** An account as lower-case 0x hex of 20 bytes when it is one (leading zero padding dropped). */
  function accountHex(a) {
    let hex = /^0x[0-9a-f]+$/i.test(a) ? a.toLowerCase() : bech32ToHex(a);
    if (!hex) return undefined;
    const digits = hex.slice(2).replace(/^0+/, '');
    return digits.length <= 40 ? '0x' + digits.padStart(40, '0') : hex;
  }

  // ---- building blocks --------------------------------------------------------------------
  function card(title, ...body) {
    return h('section', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', {}, title)), body);
  }
  /** A definition list; each value's dd carries data-field for the browser test. */
  function fields(rows) {
    return h('dl', {}, rows.filter(Boolean).map(([label, key, value]) => [
      h('dt', {}, label), h('dd', { 'data-field': key }, value === undefined || value === '' ? '—' : value),
    ]));
  }

  /**
   * A paginated list over one API list route: the API's own `next_key` forward, the keys seen
   * kept for going back, the API's exact `total`. Rows carry data-key for the browser test.
   */
  function list({ name, title, path, items, columns, key, empty = 'Nothing here.', noun = 'items' }) {
    const gen = generation;
    const box = h('section', { class: 'card', 'data-list': name });
    const keys = [null];
    let page = 0;
    async function load() {
      const body = await api(withQuery(path, { 'pagination.limit': PAGE_SIZE, 'pagination.key': keys[page] || undefined }));
      if (gen !== generation) return;
      const rows = body[items] || [];
      const total = body.pagination && body.pagination.total != null ? body.pagination.total : undefined;
      const next = body.pagination ? body.pagination.next_key : null;
      if (next && keys.length === page + 1) keys.push(next);
      const pages = total !== undefined ? Math.max(1, Math.ceil(Number(total) / PAGE_SIZE)) : undefined;
      const prevBtn = h('button', { type: 'button', 'data-action': 'prev', disabled: page === 0, onclick: () => { page--; reload(); } }, '← Prev');
      const nextBtn = h('button', { type: 'button', 'data-action': 'next', disabled: !next, onclick: () => { page++; reload(); } }, 'Next →');
      put(box,
        h('div', { class: 'card-head' }, h('h2', {}, title),
          total !== undefined ? h('span', { class: 'total', 'data-total': total }, `${Number(total).toLocaleString('en-US')} ${noun}`) : null),
        rows.length === 0 ? h('p', { class: 'empty' }, empty) : h('div', { class: 'table-wrap' }, h('table', {},
          h('thead', {}, h('tr', {}, columns.map((c) => h('th', { class: c.cls }, c.label)))),
          h('tbody', {}, rows.map((r, i) => h('tr', { 'data-key': key(r, page * PAGE_SIZE + i) },
            columns.map((c) => h('td', { class: c.cls }, c.cell(r, page * PAGE_SIZE + i)))))))),
        (page > 0 || next) ? h('div', { class: 'pager' }, prevBtn,
          h('span', { 'data-page': page + 1 }, pages ? `page ${page + 1} of ${pages}` : `page ${page + 1}`), nextBtn) : null,
      );
      box.setAttribute('data-loaded', `${page + 1}`);
    }
    function reload() {
      box.removeAttribute('data-loaded');
      load().catch((e) => { if (gen === generation) put(box, h('div', { class: 'card-head' }, h('h2', {}, title)), errorNote(e)); });
    }
    box.append(h('div', { class: 'card-head' }, h('h2', {}, title)), h('p', { class: 'loading' }, 'Loading…'));
    reload();
    return box;
  }
  const errorNote = (e) => h('p', { class: 'fail', 'data-error': e.status ?? '' }, e.message);

  // ---- columns ----------------------------------------------------------------------------
  const blockColumns = [
    { label: 'Height', cell: (b) => link(paths.block(b.height), b.height) },
    { label: 'Time (UTC)', cell: (b) => when(b.timestamp), cls: 'hide-narrow' },
    { label: 'Txs', cell: (b) => b.tx_count, cls: 'num' },
    { label: 'Hash', cell: (b) => mono(short(b.hash)), cls: 'hide-narrow' },
  ];
  const txColumns = [
    { label: 'Hash', cell: (t) => link(paths.tx(t.txhash), short(t.txhash), 'mono') },
    { label: 'Height', cell: (t) => link(paths.block(t.height), t.height) },
    { label: 'Messages', cell: (t) => msgTypes(t), cls: 'wrap' },
    { label: 'Result', cell: (t) => (t.code === 0 ? h('span', { class: 'ok' }, 'ok') : h('span', { class: 'fail' }, `code ${t.code}`)) },
  ];
  const evmTxColumns = [
    { label: 'Hash', cell: (t) => link(paths.evmTx(t.transactionHash), shortHex(t.transactionHash), 'mono') },
    { label: 'Block', cell: (t) => link(paths.block(hexToDec(t.blockNumber)), hexToDec(t.blockNumber)) },
    { label: 'From', cell: (t) => link(paths.account(t.from), shortHex(t.from), 'mono') },
    { label: 'To', cell: (t) => (t.to ? link(paths.account(t.to), shortHex(t.to), 'mono') : 'contract creation'), cls: 'hide-narrow' },
    { label: 'Status', cell: (t) => (t.status === '0x1' ? h('span', { class: 'ok' }, 'ok') : h('span', { class: 'fail' }, 'failed')) },
  ];
  const tokenColumns = (withCollection) => [
    { label: 'Token', cell: (n) => link(paths.token(n.collection_addr, n.nft.token_id), n.nft.token_id) },
    withCollection ? { label: 'Collection', cell: (n) => link(paths.collection(n.collection_addr), n.collection_name || short(n.collection_addr)), cls: 'wrap' } : undefined,
    { label: 'Owner', cell: (n) => link(paths.account(n.owner), short(n.owner), 'mono') },
    { label: 'Height', cell: (n) => link(paths.block(n.height), n.height), cls: 'num hide-narrow' },
  ].filter(Boolean);
  const collectionColumns = [
    // names can be one long unbroken word (ibc/<64 hex digits>): wrapped, not a scrollbar
    { label: 'Name', cell: (c) => link(paths.collection(c.object_addr), c.collection.name || '(no name)'), cls: 'wrap' },
    { label: 'Tokens', cell: (c) => c.collection.nfts.length, cls: 'num' },
    { label: 'Address', cell: (c) => mono(short(c.object_addr)), cls: 'hide-narrow' },
  ];

  // ---- pages ------------------------------------------------------------------------------
  /** The VM, which /status does not name: EVM routes answer only on EVM; else the message types. */
  async function vmOf() {
    if (chain) return chain.vm;
    let vm = 'cosmos';
    if (await maybe('/indexer/tx/v1/evm-txs?pagination.limit=1&pagination.count_total=false')) vm = 'evm';
    else {
      const txs = await api('/indexer/tx/v1/txs?pagination.limit=20&pagination.count_total=false');
      const types = txs.txs.flatMap((t) => ((t.tx && t.tx.body && t.tx.body.messages) || []).map((m) => String(m['@type'])));
      if (types.some((t) => t.startsWith('/initia.move.'))) vm = 'move';
      else if (types.some((t) => t.startsWith('/cosmwasm.'))) vm = 'wasm';
    }
    chain = { vm };
    return vm;
  }

  async function home() {
    const gen = generation;
    const status = h('div', { class: 'stats', id: 'status' });
    const lists = h('div', {});
    const richForm = h('form', { class: 'inline-form', id: 'richlist-form', onsubmit: (ev) => {
      ev.preventDefault();
      const d = new FormData(ev.target).get('denom').trim();
      if (d) navigate(paths.richlist(d));
    } }, h('input', { name: 'denom', placeholder: 'denom, e.g. an ERC-20 address or evm/…', 'aria-label': 'Denom' }), h('button', { type: 'submit' }, 'Rich list'));
    put(main, h('h1', {}, 'Chain overview'), status, lists, card('Rich list', richForm));
    let seen;
    async function refresh() {
      const s = await api('/status');
      const text = JSON.stringify(s);
      if (gen !== generation || text === seen) return;
      // a different snapshot may be a different chain
      if (seen !== undefined) chain = undefined;
      seen = text;
      const vm = await vmOf();
      if (gen !== generation) return;
      const stat = (label, key, value) => h('div', { class: 'stat' }, h('small', {}, label), h('b', { 'data-field': key }, value));
      put(status,
        stat('Chain id', 'chain_id', s.chain_id), stat('VM', 'vm', vm),
        stat('Latest height', 'height', link(paths.block(s.height), s.height)),
        stat('Indexer', 'version', `${s.version}`),
      );
      status.setAttribute('data-snapshot', text);
      put(lists, h('div', { class: 'grid' },
        list({ name: 'blocks', title: 'Latest blocks', path: '/indexer/block/v1/blocks', items: 'blocks', columns: blockColumns, key: (b) => b.height, noun: 'blocks' }),
        list({ name: 'txs', title: 'Latest transactions', path: '/indexer/tx/v1/txs', items: 'txs', columns: txColumns, key: (t) => t.txhash, noun: 'txs' }),
        vm === 'evm' ? list({ name: 'evm-txs', title: 'Latest EVM transactions', path: '/indexer/tx/v1/evm-txs', items: 'txs', columns: evmTxColumns, key: (t) => t.transactionHash, noun: 'EVM txs' }) : null,
        list({ name: 'collections', title: 'NFT collections', path: '/indexer/nft/v1/collections', items: 'collections', columns: collectionColumns, key: (c) => c.object_addr, noun: 'collections' }),
      ));
    }
    await refresh();
    // Live: a new snapshot swapped in under the server shows up without a reload.
    poll = setInterval(() => { refresh().catch(() => { /* server restarting: try again next tick */ }); }, STATUS_POLL_MS);
  }

  async function blockPage(height) {
    if (!/^\d+$/.test(height)) throw new ApiError(400, `not a block height: ${height}`);
    const [{ block: b }, status] = await Promise.all([api(`/indexer/block/v1/blocks/${seg(height)}`), api('/status')]);
    const vm = await vmOf();
    const n = BigInt(b.height);
    // no link past the latest block: that height does not exist (yet)
    const tip = BigInt(status.height);
    put(main,
      h('h1', {}, `Block ${b.height}`),
      card('Block', fields([
        ['Height', 'height', b.height], ['Hash', 'hash', mono(b.hash)], ['Time', 'timestamp', b.timestamp],
        ['Transactions', 'tx_count', b.tx_count], ['Gas used / wanted', 'gas', `${b.gas_used} / ${b.gas_wanted}`],
        ['Fee', 'total_fee', coins(b.total_fee)], ['Proposer', 'proposer', b.proposer ? `${b.proposer.moniker} (${b.proposer.operator_address})` : ''],
        ['Neighbours', 'nav', h('span', {}, n > 1n ? link(paths.block(String(n - 1n)), `← ${n - 1n}`) : '', ' ',
          n < tip ? link(paths.block(String(n + 1n)), `${n + 1n} →`) : h('span', { class: 'total' }, 'latest block'))],
      ])),
      list({ name: 'block-txs', title: 'Transactions', path: `/indexer/tx/v1/txs/by_height/${seg(b.height)}`, items: 'txs', columns: txColumns, key: (t) => t.txhash, noun: 'txs', empty: 'No transactions in this block.' }),
      vm === 'evm' ? list({ name: 'block-evm-txs', title: 'EVM transactions', path: `/indexer/tx/v1/evm-txs/by_height/${seg(b.height)}`, items: 'txs', columns: evmTxColumns, key: (t) => t.transactionHash, noun: 'EVM txs', empty: 'No EVM transactions in this block.' }) : null,
    );
  }

  async function txPage(hash) {
    const { tx: t } = await api(`/indexer/tx/v1/txs/${seg(hash)}`);
    const body = (t.tx && t.tx.body) || {};
    const fee = t.tx && t.tx.auth_info && t.tx.auth_info.fee;
    put(main,
      h('h1', {}, 'Transaction'),
      card('Transaction', fields([
        ['Hash', 'txhash', mono(t.txhash)], ['Height', 'height', link(paths.block(t.height), t.height)], ['Time', 'timestamp', t.timestamp],
        ['Result', 'code', t.code === 0 ? h('span', { class: 'ok' }, 'success (code 0)') : h('span', { class: 'fail' }, `failed: code ${t.code} ${t.codespace}`)],
        ['Messages', 'messages', msgTypes(t)], ['Gas used / wanted', 'gas', `${t.gas_used} / ${t.gas_wanted}`],
        ['Fee', 'fee', fee ? coins(fee.amount) : ''], ['Memo', 'memo', body.memo || ''],
        t.raw_log ? ['Log', 'raw_log', t.raw_log] : null,
      ])),
      card('Messages', h('pre', { 'data-field': 'messages-json' }, JSON.stringify(body.messages || [], null, 2))),
      card('Events', h('details', {}, h('summary', {}, `${(t.events || []).length} events`), h('pre', {}, JSON.stringify(t.events || [], null, 2)))),
    );
  }

  async function evmTxPage(hash) {
    const { tx: t } = await api(`/indexer/tx/v1/evm-txs/${seg(hash)}`);
    const height = hexToDec(t.blockNumber);
    put(main,
      h('h1', {}, 'EVM transaction'),
      card('EVM transaction', fields([
        ['Hash', 'transactionHash', mono(t.transactionHash)], ['Block', 'blockNumber', link(paths.block(height), height)],
        ['Status', 'status', t.status === '0x1' ? h('span', { class: 'ok' }, 'success') : h('span', { class: 'fail' }, `failed (${t.status})`)],
        ['From', 'from', accountLink(t.from)], ['To', 'to', t.to ? accountLink(t.to) : 'contract creation'],
        t.contractAddress ? ['Created contract', 'contractAddress', mono(t.contractAddress)] : null,
        ['Gas used', 'gasUsed', hexToDec(t.gasUsed)], ['Gas price', 'effectiveGasPrice', hexToDec(t.effectiveGasPrice)],
        ['Logs', 'logs', String((t.logs || []).length)],
      ])),
      list({ name: 'evm-internal-txs', title: 'Internal transactions', path: `/indexer/tx/v1/evm-internal-txs/${seg(t.transactionHash)}`, items: 'internal_txs',
        key: (x) => `${x.parent_index}/${x.index}`, noun: 'internal txs', empty: 'No internal transactions.', columns: [
          // index counts the tx's calls; parent_index is the calling call's, -1 for the tx's own call
          { label: '#', cell: (x) => String(x.index), cls: 'num' },
          { label: 'Called by', cell: (x) => (x.parent_index < 0 ? 'the tx' : `#${x.parent_index}`) },
          { label: 'Type', cell: (x) => x.type },
          { label: 'From', cell: (x) => link(paths.account(x.from), short(x.from), 'mono') },
          { label: 'To', cell: (x) => (x.to ? link(paths.account(x.to), short(x.to), 'mono') : '—') },
          { label: 'Value', cell: (x) => amount(hexToDec(x.value)), cls: 'num' },
        ] }),
      card('Logs', h('details', {}, h('summary', {}, `${(t.logs || []).length} logs`), h('pre', {}, JSON.stringify(t.logs || [], null, 2)))),
    );
  }

  async function accountPage(address) {
    // A bad address is the API's 400, shown as the error page, before any list is drawn.
    await api(withQuery(`/indexer/tx/v1/txs/by_account/${seg(address)}`, { 'pagination.limit': 1, 'pagination.count_total': 'false' }));
    const vm = await vmOf();
    const hex = accountHex(address);
    const result = h('div', { id: 'balance-result' });
    const balanceForm = h('form', { class: 'inline-form', id: 'balance-form', onsubmit: (ev) => {
      ev.preventDefault();
      const denom = new FormData(ev.target).get('denom').trim();
      if (denom) findBalance(address, hex, denom, result);
    } }, h('input', { name: 'denom', placeholder: 'denom (an ERC-20 address or evm/… on EVM)', 'aria-label': 'Denom' }), h('button', { type: 'submit' }, 'Look up'));
    put(main,
      h('h1', {}, 'Account'),
      card('Account', fields([['Address', 'address', mono(address)], hex && hex !== address.toLowerCase() ? ['Hex', 'hex', mono(hex)] : null])),
      list({ name: 'account-txs', title: 'Transactions', path: `/indexer/tx/v1/txs/by_account/${seg(address)}`, items: 'txs', columns: txColumns, key: (t) => t.txhash, noun: 'txs', empty: 'No transactions.' }),
      vm === 'evm' ? list({ name: 'account-evm-txs', title: 'EVM transactions', path: `/indexer/tx/v1/evm-txs/by_account/${seg(address)}`, items: 'txs', columns: evmTxColumns, key: (t) => t.transactionHash, noun: 'EVM txs', empty: 'No EVM transactions.' }) : null,
      list({ name: 'account-nfts', title: 'NFTs', path: `/indexer/nft/v1/tokens/by_account/${seg(address)}`, items: 'tokens', columns: tokenColumns(true), key: (n) => `${n.collection_addr}/${n.nft.token_id}`, noun: 'NFTs', empty: 'No NFTs.' }),
      card('Balances', h('p', { class: 'total' }, 'The API keeps balances per denom (the rich list): name a denom to find this account in it.'), balanceForm, result),
    );
  }

  /** Walks the denom's rich list (1000 a page, by next_key) until the account is found. */
  async function findBalance(address, hex, denom, out) {
    const gen = generation;
    out.removeAttribute('data-done');
    put(out, h('p', { class: 'loading' }, `Searching the ${denom} rich list…`));
    try {
      let key = null, scanned = 0, rank = 0, found;
      do {
        const body = await api(withQuery(paths.richlistApi(denom), { 'pagination.limit': 1000, 'pagination.key': key || undefined, 'pagination.count_total': key ? 'false' : undefined }));
        if (gen !== generation) return;
        for (const holder of body.holders) {
          rank++;
          if (holder.account === address || (hex && accountHex(holder.account) === hex)) { found = holder; break; }
        }
        scanned += body.holders.length;
        key = body.pagination.next_key;
        put(out, h('p', { class: 'loading' }, `Searched ${scanned} holders of ${denom}…`));
      } while (!found && key);
      put(out, found
        ? fields([['Denom', 'denom', link(paths.richlist(denom), denom)], ['Amount', 'amount', amount(found.amount)], ['Rank', 'rank', String(rank)]])
        : h('p', { class: 'empty', 'data-field': 'amount' }, `No ${denom} balance (not among its ${scanned} holders).`));
    } catch (e) {
      put(out, errorNote(e));
    }
    out.setAttribute('data-done', '');
  }
  paths.richlistApi = (denom) => `/indexer/richlist/v1/${seg(denom)}`;

  async function collectionPage(address) {
    const { collection: c } = await api(`/indexer/nft/v1/collections/${seg(address)}`);
    const col = c.collection;
    put(main,
      h('h1', {}, col.name || 'NFT collection'),
      card('Collection', fields([
        ['Name', 'name', col.name], ['Address', 'object_addr', mono(c.object_addr)], ['Creator', 'creator', accountLink(col.creator)],
        col.origin_name ? ['Origin name', 'origin_name', col.origin_name] : null,
        ['Tokens', 'length', String(col.nfts.length)], ['Created at height', 'height', link(paths.block(c.height), c.height)], ['Time', 'timestamp', c.timestamp],
      ])),
      list({ name: 'collection-tokens', title: 'Tokens', path: `/indexer/nft/v1/tokens/by_collection/${seg(c.object_addr)}`, items: 'tokens', columns: tokenColumns(false), key: (n) => n.nft.token_id, noun: 'tokens', empty: 'No tokens.' }),
    );
  }

  async function tokenPage(address, tokenId) {
    const found = await api(withQuery(`/indexer/nft/v1/tokens/by_collection/${seg(address)}`, { token_id: tokenId }));
    const n = found.tokens.find((t) => t.nft.token_id === tokenId);
    if (!n) throw new ApiError(404, `no token ${JSON.stringify(tokenId)} in collection ${address}`);
    put(main,
      h('h1', {}, `${n.collection_name || 'NFT'} · ${n.nft.token_id}`),
      card('Token', fields([
        ['Token id', 'token_id', n.nft.token_id], ['Collection', 'collection', link(paths.collection(n.collection_addr), n.collection_name || n.collection_addr)],
        ['Owner', 'owner', accountLink(n.owner)], ['URI', 'uri', n.nft.uri], n.object_addr ? ['Object address', 'object_addr', mono(n.object_addr)] : null,
        ['Height', 'height', link(paths.block(n.height), n.height)], ['Time', 'timestamp', n.timestamp],
      ])),
      list({ name: 'token-txs', title: 'History', path: `/indexer/nft/v1/txs/${seg(n.collection_addr)}/${seg(n.nft.token_id)}`, items: 'txs', columns: txColumns, key: (t) => t.txhash, noun: 'txs', empty: 'No transactions.' }),
    );
  }

  async function richlistPage(denom) {
    await api(withQuery(paths.richlistApi(denom), { 'pagination.limit': 1, 'pagination.count_total': 'false' }));
    put(main,
      h('h1', {}, `Rich list · ${denom}`),
      list({ name: 'holders', title: 'Holders', path: paths.richlistApi(denom), items: 'holders', noun: 'holders', empty: 'No holders indexed for this denom.',
        key: (x) => x.account, columns: [
          { label: '#', cell: (_x, i) => String(i + 1), cls: 'num' },
          { label: 'Account', cell: (x) => link(paths.account(x.account), x.account, 'mono') },
          { label: 'Amount', cell: (x) => amount(x.amount), cls: 'num' },
        ] }),
    );
  }

  // ---- search -----------------------------------------------------------------------------
  /** Where a search goes: the first kind of object the API knows under that text. */
  async function resolveSearch(q) {
    const s = q.trim();
    if (/^\d+$/.test(s)) return paths.block(s.replace(/^0+(?=\d)/, ''));
    const hex64 = /^(0x)?[0-9a-f]{64}$/i.test(s);
    const isEvm = (await vmOf()) === 'evm';
    if (hex64) {
      const tries = s.startsWith('0x') && isEvm ? ['evm', 'tx'] : isEvm ? ['tx', 'evm'] : ['tx'];
      for (const t of tries) {
        if (t === 'tx' && await maybe(`/indexer/tx/v1/txs/${seg(s)}`)) return paths.tx(s.replace(/^0x/i, '').toUpperCase());
        if (t === 'evm' && await maybe(`/indexer/tx/v1/evm-txs/${seg(s)}`)) return paths.evmTx(s.toLowerCase().replace(/^(?!0x)/, '0x'));
      }
    }
    const looksAddress = /^0x[0-9a-f]{1,64}$/i.test(s) || /^[a-z]{1,20}1[qpzry9x8gf2tvdw0s3jn54khce6mua7l]{38,90}$/i.test(s);
    if (looksAddress || hex64) {
      const col = await maybe(`/indexer/nft/v1/collections/${seg(s)}`);
      if (col) return paths.collection(col.collection.object_addr);
      if (!hex64 || s.startsWith('0x')) return paths.account(s);
    }
    const named = await maybe(withQuery(`/indexer/nft/v1/collections/by_name/${seg(s)}`, { 'pagination.limit': 2 }));
    if (named && named.collections.length === 1) return paths.collection(named.collections[0].object_addr);
    return paths.search(s);
  }

  /** /search?q=: collections whose name matches, or a clear "nothing found". */
  async function searchPage(q) {
    if (!q) throw new ApiError(400, 'empty search');
    const found = await api(withQuery(`/indexer/nft/v1/collections/by_name/${seg(q)}`, { 'pagination.limit': PAGE_SIZE }));
    if (found.collections.length === 0) {
      throw new ApiError(404, `nothing found for ${JSON.stringify(q)}: not a block height, a transaction hash, an account address, an NFT collection address or a collection name`);
    }
    put(main, h('h1', {}, `Collections named like “${q}”`),
      list({ name: 'search-collections', title: 'Collections', path: `/indexer/nft/v1/collections/by_name/${seg(q)}`, items: 'collections', columns: collectionColumns, key: (c) => c.object_addr, noun: 'collections' }));
  }

  // ---- routing ----------------------------------------------------------------------------
  function errorPage(e, path) {
    const notFound = e.status === 404;
    put(main, h('div', { class: 'error-box', 'data-error': e.status ?? 'error' },
      h('h1', {}, notFound ? 'Not found' : e.status === 400 ? 'Not a valid request' : 'Something went wrong'),
      h('p', { 'data-field': 'message' }, e.message),
      h('p', { class: 'total' }, `${path}${e.path ? ` (API: ${e.path}, HTTP ${e.status})` : ''}`),
      h('p', {}, link(paths.home(), '← Back to the overview'))));
  }

  async function render() {
    generation++;
    clearInterval(poll);
    const path = location.pathname;
    let parts;
    try {
      // outside the base: not a page of this explorer (the server would not have sent the shell)
      const under = path === BASE ? '/' : path.startsWith(`${BASE}/`) ? path.slice(BASE.length) : '/\u0000';
      parts = under.split('/').slice(1).map(decodeURIComponent);
    } catch {
      errorPage(new ApiError(400, `badly encoded path: ${path}`), path);
      return;
    }
    put(main, h('p', { class: 'loading' }, 'Loading…'));
    main.removeAttribute('data-ready');
    const [kind, a, ...rest] = parts;
    const gen = generation;
    try {
      if (kind === '' && parts.length === 1) await home();
      else if (kind === 'search') await searchPage(new URLSearchParams(location.search).get('q') || '');
      else if (kind === 'blocks' && a && !rest.length) await blockPage(a);
      else if (kind === 'txs' && a && !rest.length) await txPage(a);
      else if (kind === 'evm-txs' && a && !rest.length) await evmTxPage(a);
      else if (kind === 'accounts' && a && !rest.length) await accountPage(a);
      else if (kind === 'nft-collections' && a && !rest.length) await collectionPage(a);
      else if (kind === 'nft-collections' && a && rest.length) await tokenPage(a, rest.join('/'));
      else if (kind === 'richlist' && a && !rest.length) await richlistPage(a);
      else throw new ApiError(404, `no explorer page at ${path}`);
      document.title = `${(main.querySelector('h1') || {}).textContent || 'Explorer'} · indexer-api`;
    } catch (e) {
      if (gen !== generation) return;
      errorPage(e instanceof ApiError ? e : new ApiError(0, String(e && e.message ? e.message : e)), path);
      document.title = 'Error · indexer-api';
    }
    if (gen === generation) main.setAttribute('data-ready', '');
  }

  function navigate(href) {
    history.pushState(null, '', href);
    window.scrollTo(0, 0);
    render();
  }

  document.addEventListener('click', (ev) => {
    const a = ev.target.closest && ev.target.closest('a[data-nav]');
    if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
    ev.preventDefault();
    navigate(a.getAttribute('href'));
  });
  window.addEventListener('popstate', render);
  document.getElementById('search').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const q = document.getElementById('q').value;
    if (!q.trim()) return;
    main.removeAttribute('data-ready');
    try {
      navigate(await resolveSearch(q));
    } catch (e) {
      generation++;
      errorPage(e instanceof ApiError ? e : new ApiError(0, String(e.message || e)), `search: ${q}`);
      main.setAttribute('data-ready', '');
    }
  });
  render();
})();
