/**
 * The live replica's caches never answer stale (issue #30, docs/response-cache.md): a real
 * `serve` (one worker, then two) reads a file that a real `follow` grows batch by batch from a
 * growing API source, while a client polls every route family — pages by offset and by key,
 * `msgs` and `is_signer` filters, NFT routes, answers about things not yet present, other
 * spellings of one account — with and without If-None-Match and with and without gzip. After each
 * step every 200 and every 304 is compared with what a fresh server over the same file answers
 * (bodies, ETags); a follow killed mid-batch, a restart of serve, a hot swap to a copy of the same
 * data and one to a later file of the chain imported independently happen on the way — after
 * each of the last three, the ETags the client holds are asked again and every unchanged answer
 * whose ETag the versions decide must be a 304 without its page computed (issue #42); and one
 * ETag must name one body for the whole run, across all of them and the workers. The rich list (the
 * demo chain has none: the test writes one of three versions into each height's file) changes
 * twice, through `follow`'s own refresh (`--denoms`), once before and once after the hot swap.
 *
 * The suite runs from three files, one per variant: live-cache.test.ts (one worker),
 * live-cache-workers2.test.ts, live-cache-validators.test.ts.
 *
 * The server is the default one: each follow batch's new state is begun on the spare connection
 * of the previous one (src/snapshot/holder.ts renewSnapshot) while the background client's
 * requests are in flight across the batches.
 */
import { config as chaiConfig, expect } from 'chai';
import { copyFileSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { tmpdir } from 'node:os';
import { request } from 'node:http';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { runImport } from '../../src/import/run';
import { canonicalAddress, toHex0x } from '../../src/lib/address';
import { amountKey } from '../../src/lib/amount';
import { openDatabase } from '../../src/sqlite';
import { createRequestListener } from '../../src/serve/routing';
import { loadOpenApi } from '../../src/serve/openapi';
import { listen } from '../../src/serve/server';
import { openSnapshot } from '../../src/snapshot/open';
import { DEMO, metric, startServe, type ServeProcess } from '../helpers/serve';
import { eventually, growingSource, sleep, startFollow, type FollowProcess, type GrowingSource } from '../helpers/follow';
import { appOptions } from '../helpers/app-options';
import { writeRanks } from '../../src/snapshot/richlist-ranks';
import { writeDigests } from '../../src/snapshot/tag-digests';
import { denomTag } from '../../src/snapshot/tags';

// a failed comparison shows both answers whole (status, ETag, body), not '…(2)'
chaiConfig.truncateThreshold = 0;

interface Answer { status: number; etag: string | undefined; body: string }

/** One GET on a fresh connection (so a cluster spreads them over its workers). */
function fetchRaw(url: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((done, fail) => {
    const req = request(url, { headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        let body = Buffer.concat(chunks);
        if (res.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
        done({ status: res.statusCode ?? 0, etag: res.headers.etag, body: body.toString('utf8') });
      });
      res.on('error', fail);
    });
    req.on('error', fail);
    req.end();
  });
}

/** A server with no response cache over the file as it is now (one read transaction). */
async function freshServer(file: string): Promise<{ url: string; close(): Promise<void> }> {
  const snapshot = openSnapshot(file);
  const app = createRequestListener({ snapshots: { current: () => snapshot }, openapi: loadOpenApi(), options: appOptions({ corsOrigin: '', logError: () => undefined }) });
  const running = await listen(app, '127.0.0.1', 0);
  return { url: running.url, async close() { await running.close(); snapshot.close(); } };
}

const HEIGHTS = [150, 163, 181, 200, 222, 250, 271, 300, 333, 366, 400];

/**
 * The rich list each step's source shows: [rich_list_height, version]. It changes at step 2 (a
 * holder gone, one new, amounts moved) and at step 8, after the hot swap (another holder gone,
 * one new, a tie broken by the account).
 */
const RICH = (step: number): [number, number] => (step < 2 ? [150, 0] : step < 8 ? [181, 1] : [333, 2]);
const DENOM = 'uinit';

/** Version `v` of the rich list over `accounts` (canonical bytes): [account, amount]. */
function richList(accounts: Buffer[], v: number): [Buffer, string][] {
  const out = new Map<number, string>();
  for (let i = 0; i < 30; i++) out.set(i, String((1000n + BigInt(i) * 37n) * 1_000_000n));
  if (v >= 1) { out.delete(3); out.set(30, '5000000000'); out.set(6, '9999000000'); out.set(5, '1'); }
  if (v >= 2) { out.delete(7); out.set(31, '777'); out.set(0, out.get(12) as string); out.set(6, '2000000'); }
  return [...out].map(([i, amount]) => [accounts[i], amount]);
}

/** Writes rich-list version `v` (and its rich_list_height) into a snapshot file, as an import of it would hold it. */
function writeRichList(file: string, accounts: Buffer[], [height, v]: [number, number]): void {
  const db: Database.Database = openDatabase(file);
  try {
    db.exec('BEGIN');
    db.exec('DELETE FROM richlist; DELETE FROM richlist_denoms;');
    const ins = db.prepare("INSERT INTO richlist (denom, amount_key, account, json) VALUES (?, ?, ?, '')");
    const rows = richList(accounts, v);
    for (const [account, amount] of rows) ins.run(DENOM, amountKey(amount), account);
    db.prepare('INSERT INTO richlist_denoms (denom, holder_count) VALUES (?, ?)').run(DENOM, rows.length);
    db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('rich_list_height', ?)").run(String(height));
    // and its rank marks and digest, as an import writes them with the list (src/snapshot/richlist-ranks.ts, tag-digests.ts)
    writeRanks(db, [DENOM]);
    db.exec("DELETE FROM tag_digests WHERE tag >= 'r:' AND tag < 'r;'");
    writeDigests(db, [denomTag(DENOM)]);
    db.exec('COMMIT');
  } finally {
    db.close();
  }
}

export interface LiveVariant { workers: number; bodies: boolean }

/**
 * The suite over the given variants. Each variant is a file of its own (live-cache*.test.ts), a
 * few minutes each: under `make test --parallel` they run on different workers, at the cost of
 * building the cuts once per file.
 */
export function liveCacheSuite(variants: LiveVariant[]): void {
  describe('live replica: answers and ETags across follow batches equal a fresh server\'s', function () {
    this.timeout(900_000);
    let dir: string;
    let src: GrowingSource;
    const cuts = new Map<number, string>();
    let urls: string[] = [];

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'indexer-api-live-cache-'));
      src = await growingSource(DEMO('wasm'));
      for (const h of HEIGHTS.slice(0, -1)) {
        const out = join(dir, `cut-${h}.sqlite`);
        await runImport({ fromApi: src.url, toHeight: h, out, force: true, quiet: true, json: false });
        cuts.set(h, out);
      }
      // the whole chain's file is shared by every test: this one writes its rich list into a copy
      const whole = join(dir, 'cut-400.sqlite');
      copyFileSync(DEMO('wasm'), whole);
      cuts.set(400, whole);
      const holders = accountsOf(whole, 32);
      for (const [step, h] of HEIGHTS.entries()) writeRichList(cuts.get(h) as string, holders, RICH(step));
      urls = [...await urlsToPoll(src.url), ...await richListUrls(cuts.get(HEIGHTS[2]) as string)];
    });
    after(async () => {
      await src?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    for (const { workers, bodies } of variants) {
      it(`--workers ${workers}${bodies ? '' : ', --cache-bytes 0 (validators only)'}: every 200 and 304 matches a fresh server over the same file, through batches, a hot swap and a follow killed mid-batch`, async () => {
        const db = join(dir, `live-${workers}-${bodies ? 'bodies' : 'validators'}.sqlite`);
        copyFileSync(cuts.get(HEIGHTS[0]) as string, db);
        src.show(cuts.get(HEIGHTS[0]) as string);
        const followArgs = ['--db', db, '--from-api', src.url, '--interval', '100ms', '--batch-blocks', '7', '--collections-audit-interval', '1s',
          '--denoms', DENOM, '--richlist-interval', '1s'];
        let follow: FollowProcess = startFollow(followArgs);
        const serveArgs = ['--db', db, '--workers', String(workers), '--commit-poll-ms', '20', '--log-level', 'info',
          ...(bodies ? [] : ['--cache-bytes', '0'])];
        let serve: ServeProcess = await startServe(serveArgs);
        const before = new Map<string, string>();
        const tally = { compared: 0, notModified: 0, changed: 0, richListChanged: 0 };
        // one ETag names one body for the whole run: across batches, the restart, the swaps and the workers
        const bodies1 = new EtagBodies();
        // a client polling all along, batches or not: its answers are stored from whatever state they were computed on
        let polling = true;
        // paused while the held ETags are asked again after a restart or a swap (what those count is theirs alone)
        let paused = false;
        const background = (async () => {
          for (let i = 0; polling; i++) {
            if (paused) { await sleep(20); continue; }
            const a = await fetchRaw(serve.url + urls[(i * 7) % urls.length], { 'accept-encoding': i % 2 ? 'gzip' : 'identity' }).catch(() => undefined);
            if (a !== undefined) bodies1.seen(a, `background poll ${urls[(i * 7) % urls.length]}`);
          }
        })();
        /**
         * A hot swap: the cut at `height` renamed over the path (the cache starts over; ETags stay),
         * follow stopped around it and then going on from the new file. The ETags the client holds
         * are then asked again: decided from the new file's versions, without the pages.
         */
        const swapIn = async (height: number, richHeight: number, what: string, wal: boolean): Promise<void> => {
          await follow.stop('SIGTERM');
          await sleep(200);
          paused = true;
          const swaps = await metricSum(serve.url, 'indexer_api_snapshot_swaps_total');
          const copy = `${db}.swap`;
          copyFileSync(cuts.get(height) as string, copy);
          // In WAL mode, as a file a follower keeps is (serve reads each state in one read
          // transaction), or as the import wrote it, in rollback-journal mode (read statement by
          // statement: until the holder has the follower's first state, an answer computed after
          // the follower's first commit has the ETag of its bytes, src/snapshot/open.ts versionsHold)
          if (wal) {
            const w = openDatabase(copy);
            w.pragma('journal_mode = WAL');
            w.close();
          }
          // the followed file's WAL and its index belong to it, not to what replaces it (the
          // readers that hold them keep reading the old file through them)
          for (const f of [`${db}-wal`, `${db}-shm`]) rmSync(f, { force: true });
          renameSync(copy, db);
          // nothing else swaps while follow is stopped (the cluster's counter is not a sum over
          // the workers: wait for the flush of each worker's cache as well)
          await eventually('the swap', 60_000, async () => (await metricSum(serve.url, 'indexer_api_snapshot_swaps_total')) > swaps || undefined);
          await sleep(2500);
          follow = startFollow(followArgs);
          // follow's start writes the file (a file imported in rollback-journal mode is switched to WAL, its
          // indexes built) before it says it follows: compared once that is done, as every step compares a
          // file at rest (a fresh server opened before the switch would read it statement by statement and
          // give the ETags of the bytes once it moved; serve's commit watch begins its state again)
          await follow.until('follow going on from the swapped-in file', /follow: following .* from height/);
          await sleep(300);
          await eventually(`serve at ${height} after the swap`, 60_000, async () => await allWorkersAt(serve.url, height, workers, richHeight) || undefined);
          await heldAnsweredWithoutPages(serve.url, before, urls, `after the swap to ${what} (height ${height})`);
          paused = false;
        };
        let refreshedAfterSwap = false;
        try {
          for (const [step, height] of HEIGHTS.entries()) {
            if (step > 0) src.show(cuts.get(height) as string);
            if (step === 9) {
              // follow's rich-list refresh after the first swap wrote (the log of the follow that the next swap stops)
              refreshedAfterSwap = /rich list at height 333: .* written in place/.test(follow.stderr);
              // a later file of the chain, built independently (an import to this height), renamed over the followed one
              await swapIn(height, RICH(step)[0], 'a later file imported independently', false);
            }
            if (step === 4) {
              // killed in the middle of a batch: its transaction never commits, and neither does its change record
              await follow.until(`a batch past ${HEIGHTS[3]}`, new RegExp(`heights ${HEIGHTS[3] + 1}\\.\\.`));
              await follow.stop('SIGKILL');
              follow = startFollow(followArgs);
            }
            const [richHeight] = RICH(step);
            await eventually(`follow at ${height}`, 120_000, async () => (await statusHeightOf(db)) === height || undefined);
            // the rich list is refreshed apart from the batches (every second): its own write, its own change record
            await eventually(`follow's rich list at ${richHeight}`, 60_000, async () => (await richListHeightOf(db)) === richHeight || undefined);
            await eventually(`serve at ${height}`, 60_000, async () => await allWorkersAt(serve.url, height, workers, richHeight) || undefined);
            if (step === 5) {
              // the same answers, the same ETags, on a replica imported from the chain at this height
              const imported = await freshServer(cuts.get(height) as string);
              try {
                for (const path of urls) {
                  for (const enc of ['identity', 'gzip']) {
                    const [a, b] = await Promise.all([fetchRaw(serve.url + path, { 'accept-encoding': enc }), fetchRaw(imported.url + path, { 'accept-encoding': enc })]);
                    expect({ status: a.status, etag: a.etag }, `followed vs imported replica: ${path} (${enc})`).to.deep.equal({ status: b.status, etag: b.etag });
                    bodies1.seen(a, `followed replica ${path}`);
                    bodies1.seen(b, `imported replica ${path}`);
                  }
                }
              } finally {
                await imported.close();
              }
            }
            if (step === 3) {
              // a restart: a new process, nothing in memory — the ETags the client holds are still decided without the pages
              paused = true;
              await serve.stop();
              serve = await startServe(serveArgs);
              await eventually(`serve at ${height} after the restart`, 60_000, async () => await allWorkersAt(serve.url, height, workers, richHeight) || undefined);
              await heldAnsweredWithoutPages(serve.url, before, urls, 'after the restart');
              paused = false;
            }
            if (step === 6) await swapIn(height, RICH(step)[0], 'a copy of the same data', true);
            await compareAll(db, serve.url, urls, before, tally, `step ${step} (height ${height})`, bodies1);
          }
          polling = false;
          await background;
          // polls of what the batches did not touch were answered 304 / from the cache, batch after batch
          expect(tally.notModified, JSON.stringify(tally)).to.be.greaterThan(tally.compared / 4);
          expect(tally.changed, 'answers that changed').to.be.greaterThan(0);
          // the rich-list answers a client held changed (twice: before and after the hot swap) and were answered anew
          expect(tally.richListChanged, 'rich-list answers that changed').to.be.greaterThan(0);
          expect(refreshedAfterSwap, 'a refresh after the hot swap wrote').to.equal(true);
          if (bodies) expect(await metricSum(serve.url, 'indexer_api_response_cache_hits_total'), 'cache hits').to.be.greaterThan(0);
          else expect(await metricSum(serve.url, 'indexer_api_response_cache_hits_total'), 'no body kept, none answered').to.equal(0);
          // without bodies, revalidations the batches did not touch were answered from a validator alone
          if (!bodies) expect(await metricSum(serve.url, 'indexer_api_response_cache_validator_hits_total'), 'validator hits').to.be.greaterThan(0);
          expect(await metricSum(serve.url, 'indexer_api_response_cache_invalidated_total'), 'entries a change record dropped').to.be.greaterThan(0);
          // emptied only by the hot swaps (once per worker each), never by a batch
          expect(await metricSum(serve.url, 'indexer_api_response_cache_flushes_total'), 'flushes').to.be.at.most(2 * workers);
        } catch (e) {
          const events = serve.lines.filter((l) => l.msg !== 'request').map((l) => JSON.stringify(l)).slice(-15);
          throw new Error(`${(e as Error).stack}\nserve's last events:\n${events.join('\n')}\nfollow's stderr (end):\n${follow.stderr.slice(-3000)}`);
        } finally {
          polling = false;
          await background;
          await serve.stop();
          await follow.stop('SIGTERM');
        }
      });
    }
  });
}

/** Every 200 with an ETag seen in a run: one ETag must name one body (the ETag is a hash of what decides the bytes). */
class EtagBodies {
  private readonly map = new Map<string, { body: string; where: string }>();
  seen(a: Answer, where: string): void {
    if (a.status !== 200 || a.etag === undefined) return;
    const had = this.map.get(a.etag);
    if (had === undefined) { this.map.set(a.etag, { body: a.body, where }); return; }
    expect(a.body, `ETag ${a.etag} named another body at ${had.where}; now ${where}`).to.equal(had.body);
  }
}

/**
 * After a restart or a swap (nothing else asking): every URL the client holds an ETag of, asked
 * with it. Some must be 304; and every 304 of an answer whose ETag the versions decide must come
 * without its page computed — the app's misses grow only by the 200s and the 304s of the other
 * answers.
 */
async function heldAnsweredWithoutPages(live: string, before: Map<string, string>, urls: string[], when: string): Promise<void> {
  const out = { asked: 0, notModified: 0, versioned: 0 };
  const misses = await metricSum(live, 'indexer_api_response_cache_misses_total');
  for (const path of urls) {
    for (const enc of ['identity', 'gzip']) {
      const held = before.get(`${enc} ${path}`);
      if (held === undefined) continue;
      out.asked++;
      const got = await fetchRaw(live + path, { 'accept-encoding': enc, 'if-none-match': held });
      if (got.status !== 304) continue;
      out.notModified++;
      if (decidedByVersions(path)) out.versioned++;
    }
  }
  const computed = await metricSum(live, 'indexer_api_response_cache_misses_total') - misses;
  expect(out.versioned, `${when}: 304s decided by the versions (${JSON.stringify(out)})`).to.be.greaterThan(0);
  expect(computed, `${when}: pages computed (${JSON.stringify(out)})`).to.be.at.most(out.asked - out.versioned);
}

/**
 * Whether the ETag of `path`'s answer is decided by the file's tag versions (src/snapshot/tag-versions.ts):
 * every route but a tx by hash (it reads none) — the NFT and rich-list routes by their digests
 * (src/snapshot/tag-digests.ts; the test's lists are far below the digests' row cap).
 */
function decidedByVersions(path: string): boolean {
  return !/^\/indexer\/tx\/v1\/txs\/[0-9A-Fa-f]{64}$/.test(path);
}

/** The rich list's height the file holds (0: none). */
async function richListHeightOf(file: string): Promise<number> {
  const s = openSnapshot(file);
  try { return s.meta.richListHeight; } finally { s.close(); }
}

/** `n` accounts of the chain (canonical bytes), in id order. */
function accountsOf(file: string, n: number): Buffer[] {
  const s = openSnapshot(file);
  try { return s.db.prepare('SELECT addr FROM accounts WHERE length(addr) = 20 ORDER BY id LIMIT ?').pluck().all(n) as Buffer[]; } finally { s.close(); }
}

/** The rich-list routes: pages by offset, both orders, a second page by key (taken on `file`), a denom without holders. */
async function richListUrls(file: string): Promise<string[]> {
  const base = `/indexer/richlist/v1/${DENOM}`;
  const out = [base, `${base}?pagination.limit=5`, `${base}?pagination.limit=4&pagination.offset=3`,
    `${base}?pagination.limit=6&pagination.reverse=false`, '/indexer/richlist/v1/uother?pagination.limit=5'];
  const fresh = await freshServer(file);
  try {
    const first = JSON.parse((await fetchRaw(`${fresh.url}${base}?pagination.limit=5`, {})).body) as { pagination: { next_key: string | null } };
    if (first.pagination.next_key) out.push(`${base}?pagination.limit=5&pagination.key=${encodeURIComponent(first.pagination.next_key)}`);
  } finally {
    await fresh.close();
  }
  return out;
}

/** The height the file holds (a read of its own, not through any server). */
async function statusHeightOf(file: string): Promise<number> {
  const s = openSnapshot(file);
  try { return s.meta.height; } finally { s.close(); }
}

/** Whether every worker serves `height` and the rich list of `richHeight` (each answer comes from the worker its new connection reached). */
async function allWorkersAt(url: string, height: number, workers: number, richHeight: number): Promise<boolean> {
  for (let i = 0; i < 6 * workers; i++) {
    const r = await fetchRaw(`${url}/status`, { 'accept-encoding': 'identity' });
    const status = JSON.parse(r.body) as { height: number; rich_list_height?: number };
    if (status.height !== height || (status.rich_list_height ?? 0) !== richHeight) return false;
  }
  return true;
}

/** A counter summed over the workers (the cluster's /metrics aggregates them). */
async function metricSum(url: string, name: string): Promise<number> {
  const text = (await fetchRaw(`${url}/metrics`, {})).body;
  return metric(text, name) ?? 0;
}

/**
 * Every URL, as identity and as gzip: the live server's plain answer, its repeat (a cache hit),
 * and its answer to the ETag the client held from the step before must all be what the fresh
 * server says now — the same status, body and ETag; a 304 exactly when the fresh ETag is the
 * one the client held.
 */
async function compareAll(db: string, live: string, urls: string[], before: Map<string, string>,
  tally: { compared: number; notModified: number; changed: number; richListChanged: number }, when: string, seen: EtagBodies): Promise<void> {
  const fresh = await freshServer(db);
  try {
    for (const path of urls) {
      for (const enc of ['identity', 'gzip']) {
        const key = `${enc} ${path}`;
        const want = await fetchRaw(fresh.url + path, { 'accept-encoding': enc });
        seen.seen(want, `${when}: fresh server ${path} (${enc})`);
        for (const attempt of ['first', 'repeat']) {
          const got = await fetchRaw(live + path, { 'accept-encoding': enc });
          seen.seen(got, `${when}: ${attempt} GET ${path} (${enc})`);
          expect({ status: got.status, body: got.body, etag: got.etag }, `${when}: ${attempt} GET ${path} (${enc})`).to.deep.equal({ status: want.status, body: want.body, etag: want.etag });
        }
        const held = before.get(key);
        if (held !== undefined && want.status === 200) {
          const got = await fetchRaw(live + path, { 'accept-encoding': enc, 'if-none-match': held });
          if (held === want.etag) {
            expect(got.status, `${when}: GET ${path} (${enc}) with the unchanged ETag`).to.equal(304);
            tally.notModified++;
          } else {
            expect({ status: got.status, body: got.body, etag: got.etag }, `${when}: GET ${path} (${enc}) with an ETag of older data`).to.deep.equal({ status: 200, body: want.body, etag: want.etag });
            tally.changed++;
            if (path.startsWith('/indexer/richlist/')) tally.richListChanged++;
          }
          tally.compared++;
        }
        if (want.status === 200 && want.etag !== undefined) before.set(key, want.etag);
      }
    }
  } finally {
    await fresh.close();
  }
}

/**
 * What the test polls, chosen on the whole chain: accounts (bech32 and 0x spellings) of txs and
 * NFT owners, txs and heights that exist only later, collections, tokens and their txs, pages
 * by offset and by key, filters.
 */
async function urlsToPoll(full: string): Promise<string[]> {
  const json = async (path: string): Promise<Record<string, unknown>> => JSON.parse((await fetchRaw(full + path, {})).body) as Record<string, unknown>;
  const txs = await json('/indexer/tx/v1/txs?pagination.limit=60&pagination.reverse=false');
  const text = JSON.stringify(txs);
  const accounts = [...new Set(text.match(/init1[02-9ac-hj-np-z]{38}(?![02-9ac-hj-np-z])/g) ?? [])].slice(0, 14);
  const hashes = (txs.txs as { txhash: string }[]).map((t) => t.txhash);
  const collections = (await json('/indexer/nft/v1/collections?pagination.limit=4')).collections as { object_addr: string; collection: { name: string } }[];
  const tokens: { collection: string; id: string; owner: string }[] = [];
  for (const c of collections.slice(0, 3)) {
    const page = (await json(`/indexer/nft/v1/tokens/by_collection/${c.object_addr}?pagination.limit=3`)).tokens as { owner: string; nft: { token_id: string } }[];
    for (const t of page) tokens.push({ collection: c.object_addr, id: t.nft.token_id, owner: t.owner });
  }
  const owners = [...new Set(tokens.map((t) => t.owner))].slice(0, 6);
  const out = [
    '/status', '/indexer/block/v1/avg_blocktime', '/indexer/block/v1/blocks?pagination.limit=5',
    '/indexer/block/v1/blocks?pagination.limit=3&pagination.offset=4', '/indexer/block/v1/blocks?pagination.limit=3&pagination.reverse=false',
    '/indexer/tx/v1/txs?pagination.limit=5', '/indexer/tx/v1/txs?pagination.limit=4&pagination.offset=6',
    '/indexer/tx/v1/txs?pagination.limit=3&msgs=cosmwasm.wasm.v1.MsgExecuteContract',
    '/indexer/nft/v1/collections?pagination.limit=5', '/indexer/nft/v1/collections?pagination.limit=2&pagination.offset=1',
  ];
  for (const h of [20, 149, 170, 260, 390, 5000]) {
    out.push(`/indexer/block/v1/blocks/${h}`, `/indexer/tx/v1/txs/by_height/${h}`);
  }
  for (const hash of [hashes[0], hashes[Math.floor(hashes.length / 2)], hashes[hashes.length - 1]]) out.push(`/indexer/tx/v1/txs/${hash}`);
  for (const [i, a] of accounts.entries()) {
    out.push(`/indexer/tx/v1/txs/by_account/${a}?pagination.reverse=true&pagination.limit=10`);
    if (i % 3 === 0) out.push(`/indexer/tx/v1/txs/by_account/${a}?is_signer=true&pagination.limit=2&pagination.offset=1`);
    if (i % 4 === 0) out.push(`/indexer/tx/v1/txs/by_account/${toHex0x(canonicalAddress(a, 'init'))}?pagination.limit=10`);
    if (i % 5 === 0) out.push(`/indexer/tx/v1/txs/by_account/${a}?msgs=cosmwasm.wasm.v1.MsgExecuteContract&pagination.limit=3`);
  }
  for (const o of owners) {
    out.push(`/indexer/nft/v1/tokens/by_account/${o}?pagination.limit=5`, `/indexer/nft/v1/collections/by_account/${o}`);
  }
  for (const c of collections) {
    out.push(`/indexer/nft/v1/collections/${c.object_addr}`, `/indexer/nft/v1/tokens/by_collection/${c.object_addr}?pagination.limit=4`,
      `/indexer/nft/v1/collections/by_name/${encodeURIComponent(c.collection.name.split(' ')[0])}`);
  }
  for (const t of tokens.slice(0, 4)) out.push(`/indexer/nft/v1/txs/${t.collection}/${encodeURIComponent(t.id)}`);
  // second pages by key, as the full chain has them (the key stays valid as the lists grow)
  for (const p of ['/indexer/tx/v1/txs?pagination.limit=4', `/indexer/tx/v1/txs/by_account/${accounts[0]}?pagination.limit=2`, '/indexer/block/v1/blocks?pagination.limit=6']) {
    const next = ((await json(p)).pagination as { next_key: string | null }).next_key;
    if (next) out.push(`${p}&pagination.key=${encodeURIComponent(next)}`);
  }
  return out;
}
