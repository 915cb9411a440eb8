import { expect } from 'chai';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runImport } from '../../src/import/run';
import { generateDump } from '../../src/generate/index';
import { openDatabase } from '../../src/sqlite';
import { canonicalAddress } from '../../src/lib/address';
import { nftStateProbe } from '../../src/snapshot/queries/nft-state';
import { openApiSource } from '../../src/sources/api/source';
import { resolveHttp } from '../../src/sources/options';
import { openSnapshot } from '../../src/snapshot/open';
import { DEMO } from '../helpers/serve';
import { differences, growingSource, startFollow } from '../helpers/follow';

type Vm = 'move' | 'wasm' | 'evm';

/** Heights of the demo chain's txs that burn an NFT (the generator's burn messages). */
function burnHeights(dump: string, vm: Vm): number[] {
  const out: number[] = [];
  for (const line of readFileSync(join(dump, 'txs.ndjson'), 'utf8').split('\n')) {
    if (!line) continue;
    const t = (JSON.parse(line) as { tx: { height: string; tx: { body: { messages: Record<string, unknown>[] } } } }).tx;
    const burns = t.tx.body.messages.some((m) => (vm === 'wasm' ? (m.msg as Record<string, unknown> | undefined)?.burn !== undefined
      : vm === 'move' ? m.module_name === 'simple_nft' && m.function_name === 'burn'
        : typeof m.input === 'string' && m.input.startsWith('0x42966c68')));
    if (burns) out.push(Number(t.height));
  }
  return out;
}

/** `SELECT` rows of a snapshot as strings (one column). */
function strings(file: string, sql: string): Set<string> {
  const db = openDatabase(file, { readonly: true, fileMustExist: true });
  try { return new Set(db.prepare(sql).pluck().all() as string[]); } finally { db.close(); }
}

const LINKS = "SELECT hex(collection_addr) || ' ' || token_id || ' ' || sequence FROM nft_txs";
const LIVE_COUNTS = `SELECT hex(k.collection_addr) || ' ' || k.token_id || ' ' || k.tx_count FROM nft_tx_counts k
  JOIN nfts n ON n.collection_addr = k.collection_addr AND n.token_id = k.token_id`;

/**
 * NFT ↔ tx links: a crawl cannot see the history of burned NFTs (api.ts), so a fresh import
 * lacks the links of NFTs burned after the follower's start that the follower had read while
 * they lived. Those, and only those, may differ: the fresh import's links are ours, each link
 * only we have belongs to an NFT the fresh import does not hold, every link of ours is one of
 * the chain's (the demo fixture, imported from its dump), the live NFTs' counts are the same.
 */
function linkDifferences(ours: string, fresh: string, chain: string): string[] {
  const out: string[] = [];
  const mine = strings(ours, LINKS);
  const theirs = strings(fresh, LINKS);
  const all = strings(chain, LINKS);
  const live = strings(fresh, "SELECT hex(collection_addr) || ' ' || token_id FROM nfts");
  for (const l of theirs) if (!mine.has(l)) out.push(`link ${l}: only in the fresh import`);
  for (const l of mine) {
    if (!all.has(l)) out.push(`link ${l}: not a link of the chain`);
    if (!theirs.has(l) && live.has(l.slice(0, l.lastIndexOf(' ')))) out.push(`link ${l} of a live NFT: only in ours`);
  }
  const a = strings(ours, LIVE_COUNTS);
  const b = strings(fresh, LIVE_COUNTS);
  for (const c of a) if (!b.has(c)) out.push(`live NFT tx count ${c}: only in ours`);
  for (const c of b) if (!a.has(c)) out.push(`live NFT tx count ${c}: only in the fresh import`);
  return out;
}

/**
 * The source grows as the chain did: every few heights it serves the chain as it was at that
 * height (the generator's prefix of the demo chain: same blocks and txs, the NFT state of that
 * moment), so each batch's NFT changes are real mints, transfers and burns.
 */
describe('follow --from-api: only the changed NFTs of each batch (demo chains)', function () {
  this.timeout(300_000);
  const START = 340;
  const STEP = 5;
  const TOP = 400;

  for (const vm of ['move', 'wasm', 'evm'] as const) {
    it(`${vm}: reads the changed tokens only (and a burning collection's whole), ending table-for-table equal to a fresh import (NFT links: but those of burned NFTs)`, async () => {
      const tmp = mkdtempSync(join(tmpdir(), `indexer-api-follow-nft-${vm}-`));
      const whole = join(tmp, 'dump-whole');
      await generateDump({ vm, out: whole, preset: 'demo', force: true });
      const burns = burnHeights(whole, vm);
      const cuts: [number, string][] = [];
      for (let h = START; h < TOP; h += STEP) {
        const dump = join(tmp, `dump-${h}`);
        await generateDump({ vm, out: dump, preset: 'demo', untilHeight: h, force: true });
        const file = join(tmp, `at-${h}.sqlite`);
        await runImport({ fromDump: dump, out: file, force: true, quiet: true, json: false });
        cuts.push([h, file]);
      }
      cuts.push([TOP, DEMO(vm)]);
      const src = await growingSource(cuts[0][1]);
      const db = join(tmp, 'live.sqlite');
      const follow = startFollow(['--db', db, '--from-api', src.url, '--vm-type', vm, '--interval', '50ms', '--batch-blocks', '2']);
      try {
        await follow.until('the first import', new RegExp(`following api .* from height ${START}`));
        for (const [h, file] of cuts.slice(1)) {
          src.show(file);
          await follow.until(`height ${h}`, new RegExp(`heights \\d+\\.\\.${h} `));
        }
        expect(await follow.stop('SIGTERM')).to.deep.equal({ code: 0, signal: null });
        const fresh = join(tmp, 'fresh.sqlite');
        await runImport({ fromApi: src.url, out: fresh, force: true, quiet: true, json: false });
        // without --denoms follow reads no rich list, so its rich_list_height stays that of the first
        // import (docs/follow.md "The rich list"), where a fresh import takes the source's /status value
        expect(differences(db, fresh).filter((d) => !/^(nft_tx(s|_counts): |tag_digests c:)/.test(d) && !/^meta rich_list_height: /.test(d))).to.deep.equal([]);
        expect(linkDifferences(db, fresh, DEMO(vm))).to.deep.equal([]);
      } finally {
        await follow.stop('SIGKILL');
        await src.close();
      }
      // Every batch says how it read the NFT state: the changed tokens, plus the whole of a
      // collection in which an NFT we hold burned (between the batch's first height and the
      // source's); nothing here makes it read every token.
      const batches = follow.lines.flatMap((l) => {
        const m = /heights (\d+)\.\.(\d+) .*source at (\d+),.*; NFT state(?:: (\d+) changed tokens of \d+ collections read(?: \(\d+ rechecked[^)]*\))?(?: \((\d+) collections? with a burn read whole\))?| read whole: (.*))$/.exec(l);
        return m ? [{ from: Number(m[1]), source: Number(m[3]), changed: m[4] === undefined ? undefined : Number(m[4]), burnt: Number(m[5] ?? 0), whole: m[6] }] : [];
      });
      expect(batches.length, follow.stderr).to.be.at.least((TOP - START) / 2);
      for (const b of batches) {
        expect(b.whole, JSON.stringify(b)).to.equal(undefined);
        const burnt = burns.some((h) => h >= b.from && h <= b.source);
        if (!burnt) expect(b.burnt, `no burn in ${b.from}..${b.source}: ${JSON.stringify(b)}`).to.equal(0);
      }
      expect(batches.filter((b) => (b.changed ?? 0) > 0).length, 'batches applying changed tokens').to.be.at.least(3);
      if (burns.some((h) => h > START)) expect(batches.filter((b) => b.burnt > 0).length, 'batches re-reading a collection after a burn').to.be.at.least(1);
    });
  }
});

interface DumpToken { collection_addr: string; token_id: string; owner: string; height: number }

function dumpTokens(dump: string): DumpToken[] {
  return readFileSync(join(dump, 'tokens.ndjson'), 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as DumpToken);
}

const perCollection = (tokens: DumpToken[]): string => {
  const n = new Map<string, number>();
  for (const t of tokens) n.set(t.collection_addr, (n.get(t.collection_addr) ?? 0) + 1);
  return JSON.stringify([...n].sort());
};

/**
 * A block whose only NFT change is a transfer leaves every count as it was: only the names in
 * its txs' events (Wasm: the contract, EVM: the log's contract, Move: the NFT object, mapped to
 * its collection through our snapshot) can tell the source which collection to read.
 */
describe('API source, nftChangesSince: a transfer alone is found through the events', function () {
  this.timeout(120_000);
  for (const vm of ['move', 'wasm', 'evm'] as const) {
    it(`${vm}: the transferred NFT is delivered as a changed row, with its new owner`, async () => {
      const tmp = mkdtempSync(join(tmpdir(), `indexer-api-nft-transfer-${vm}-`));
      const dumpAt = async (h: number): Promise<string> => {
        const dir = join(tmp, `dump-${h}`);
        await generateDump({ vm, out: dir, preset: 'demo', untilHeight: h, force: true });
        return dir;
      };
      // The first height after 300 whose block transfers an NFT and changes no count.
      let before = await dumpAt(300);
      let at = '';
      let moved: DumpToken | undefined;
      let h = 301;
      for (; h <= 400 && !moved; h++) {
        at = await dumpAt(h);
        const a = dumpTokens(before);
        const b = dumpTokens(at);
        if (perCollection(a) === perCollection(b)) {
          const owners = new Map(a.map((t) => [`${t.collection_addr} ${t.token_id}`, t.owner]));
          moved = b.find((t) => owners.get(`${t.collection_addr} ${t.token_id}`) !== t.owner);
        }
        if (!moved) before = at;
      }
      expect(moved, 'a block with a transfer only').to.not.equal(undefined);
      const t = h - 1;
      const ours = join(tmp, 'ours.sqlite');
      const theirs = join(tmp, 'theirs.sqlite');
      await runImport({ fromDump: before, out: ours, force: true, quiet: true, json: false });
      await runImport({ fromDump: at, out: theirs, force: true, quiet: true, json: false });
      const snap = openSnapshot(ours);
      const prefix = snap.meta.prefix;
      snap.close();
      const src = await growingSource(theirs);
      const db = openDatabase(ours, { readonly: true, fileMustExist: true });
      try {
        const s = await openApiSource({
          url: src.url, vmType: vm, prefix, fromHeight: t, toHeight: t, denoms: [], linkTokensSince: t, http: resolveHttp({}),
          nftChangesSince: { height: t, ours: nftStateProbe(db) },
        });
        try {
          const tokens: DumpToken[] = [];
          for await (const r of s.records('tokens') ?? []) tokens.push(JSON.parse(r.text) as DumpToken);
          expect(s.fullStateReason?.()).to.equal(undefined);
          expect([...(s.partialKinds?.() ?? [])]).to.deep.equal(['collections', 'tokens']);
          const got = tokens.find((x) => x.token_id === moved?.token_id && x.height === t);
          const owner = (x: DumpToken | undefined): string | undefined => x && canonicalAddress(x.owner, prefix).toString('hex');
          expect(owner(got), `tokens delivered: ${JSON.stringify(tokens)}`).to.equal(owner(moved));
          expect(tokens.every((x) => x.height >= t), 'only tokens changed at the batch\'s heights').to.equal(true);
        } finally {
          await s.close();
        }
      } finally {
        db.close();
        await src.close();
      }
    });
  }
});
