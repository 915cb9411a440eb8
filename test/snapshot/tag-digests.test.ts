/**
 * The NFT and rich-list tags' digests (src/snapshot/tag-digests.ts, schema v4): a function of the
 * rows their answers read, written by every writer, read as the tags' versions — so a restart, a
 * file built independently or another replica decides a conditional GET of an NFT or rich-list
 * page without computing it, and a changed page never keeps its ETag (docs/response-cache.md
 * "ETags from versions"). The follow and import suites compare a followed file's digests with a
 * fresh import's, tag by tag (test/helpers/follow.ts differences).
 */
import { expect } from 'chai';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runImport } from '../../src/import/run';
import { openSnapshot } from '../../src/snapshot/open';
import { openDatabase } from '../../src/sqlite';
import { DIGESTS_SCHEMA_VERSION, EMPTY_DIGEST, writeDigests } from '../../src/snapshot/tag-digests';
import { DEMO, get, getJson, metric, startServe, type ServeProcess } from '../helpers/serve';
import { demoDump } from '../helpers/same-answers';

/** The versions of `tags` on a fresh state of `file`. */
function versionsOf(file: string, tags: string[]): (string | undefined)[] {
  const s = openSnapshot(file);
  try {
    return tags.map((t) => s.versions.of(t));
  } finally {
    s.close();
  }
}

/** Every (tag, digest) of a file, in tag order. */
function digestRows(file: string): [string, string | null][] {
  const db = openDatabase(file, { readonly: true, fileMustExist: true });
  try {
    return db.prepare('SELECT tag, hex(digest) FROM tag_digests ORDER BY tag').raw().all() as [string, string | null][];
  } finally {
    db.close();
  }
}

describe('snapshot: NFT and rich-list tag digests (schema v4)', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tag-digests-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('an import writes a digest for every owner, collection, the collection list and every rich list — the same as writing them all again', () => {
    for (const vm of ['move', 'wasm', 'evm'] as const) {
      const file = join(dir, `${vm}.sqlite`);
      copyFileSync(DEMO(vm), file);
      const before = digestRows(file);
      const kinds = new Set(before.map(([t]) => (t === 'cl' ? 'cl' : t.slice(0, 2))));
      expect([...kinds].sort(), vm).to.deep.equal(vm === 'evm' ? ['c:', 'cl', 'o:', 'r:'] : ['c:', 'cl', 'o:']);
      const db = openDatabase(file);
      try {
        expect(db.pragma('user_version', { simple: true })).to.equal(DIGESTS_SCHEMA_VERSION);
        db.transaction(() => writeDigests(db, 'all'))();
      } finally {
        db.close();
      }
      expect(digestRows(file), vm).to.deep.equal(before);
    }
  });

  it('a digest moves with any row its answers read and comes back with the rows (a function of the data, not of the writes)', () => {
    const file = join(dir, 'moves.sqlite');
    copyFileSync(DEMO('evm'), file);
    const db = openDatabase(file);
    try {
      const nft = db.prepare('SELECT n.collection_addr, n.token_id, n.json, a.addr FROM nfts n JOIN accounts a ON a.id = n.owner_id LIMIT 1').raw().get() as [Buffer, string, Buffer, Buffer];
      const [coll, token, json, owner] = nft;
      const denom = db.prepare('SELECT denom FROM richlist_denoms LIMIT 1').pluck().get() as string;
      const tags = [`o:${owner.toString('hex')}`, `c:${coll.toString('hex')}`, 'cl', `r:${denom}`];
      const v0 = versionsOf(file, tags);
      for (const v of v0) expect(v).to.be.a('string').and.not.equal(EMPTY_DIGEST);
      // the NFT's stored JSON changes: its owner's and its collection's digests move, the others stay
      const write = (fn: () => void): void => db.transaction(() => { fn(); writeDigests(db, tags); })();
      write(() => db.prepare('UPDATE nfts SET json = ? WHERE collection_addr = ? AND token_id = ?').run(Buffer.concat([json, Buffer.from(' ')]), coll, token));
      const v1 = versionsOf(file, tags);
      expect(v1[0], 'owner').to.not.equal(v0[0]);
      expect(v1[1], 'collection').to.not.equal(v0[1]);
      expect(v1[2], 'collection list').to.equal(v0[2]);
      expect(v1[3], 'rich list').to.equal(v0[3]);
      // the same rows again: the same digests
      write(() => db.prepare('UPDATE nfts SET json = ? WHERE collection_addr = ? AND token_id = ?').run(json, coll, token));
      expect(versionsOf(file, tags)).to.deep.equal(v0);
      // a holder's amount, a collection's name: the rich list's and the list of collections' move
      write(() => db.prepare("UPDATE richlist SET json = json || ' ' WHERE denom = ? AND account = (SELECT account FROM richlist WHERE denom = ? LIMIT 1)").run(denom, denom));
      write(() => db.prepare("UPDATE collections SET name = name || '!' WHERE addr = ?").run(coll));
      const v2 = versionsOf(file, tags);
      expect(v2[2], 'collection list').to.not.equal(v0[2]);
      expect(v2[1], 'collection').to.not.equal(v0[1]);
      expect(v2[3], 'rich list').to.not.equal(v0[3]);
      // a tag without rows has the empty version; an unknown kind none
      expect(versionsOf(file, [`o:${'00'.repeat(20)}`, `c:${'11'.repeat(32)}`, 'r:nosuchdenom'])).to.deep.equal([EMPTY_DIGEST, EMPTY_DIGEST, EMPTY_DIGEST]);
      // an NFT tag over the row cap: no version (the answer keeps the ETag of its bytes); a rich list has no cap
      db.transaction(() => writeDigests(db, tags, 1))();
      expect(versionsOf(file, tags)).to.deep.equal([undefined, undefined, undefined, v2[3]]);
    } finally {
      db.close();
    }
  });

  it('a file before schema 4 has no digests (NFT answers keep the ETag of their bytes)', () => {
    const file = join(dir, 'v3.sqlite');
    copyFileSync(DEMO('wasm'), file);
    const db = openDatabase(file);
    try {
      db.exec("DROP TABLE tag_digests; UPDATE meta SET value = '3' WHERE key = 'schema_version'; PRAGMA user_version = 3;");
    } finally {
      db.close();
    }
    const s = openSnapshot(file);
    try {
      const owner = (s.db.prepare('SELECT a.addr FROM nfts n JOIN accounts a ON a.id = n.owner_id LIMIT 1').pluck().get() as Buffer).toString('hex');
      expect([s.versions.of(`o:${owner}`), s.versions.of('cl')]).to.deep.equal([undefined, undefined]);
    } finally {
      s.close();
    }
  });

  describe('served: a restart and a file built independently decide NFT and rich-list pages without them', () => {
    let file: string;
    let urls: string[];
    const served: ServeProcess[] = [];
    const etags = async (s: ServeProcess): Promise<Map<string, string>> => {
      const out = new Map<string, string>();
      for (const u of urls) {
        const r = await get(s.url + u, { 'accept-encoding': 'gzip' });
        expect(r.status, u).to.equal(200);
        out.set(u, r.headers.etag as string);
      }
      return out;
    };
    const counter = async (s: ServeProcess, name: string): Promise<number> => metric((await get(`${s.url}/metrics`)).body, name) ?? 0;

    before(async () => {
      file = join(dir, 'served.sqlite');
      copyFileSync(DEMO('evm'), file);
      const s = await startServe(['--db', file, '--log-level', 'warn']);
      served.push(s);
      const cols = (await getJson<{ collections: { object_addr: string }[] }>(`${s.url}/indexer/nft/v1/collections?pagination.limit=2`)).collections;
      const tokens = (await getJson<{ tokens: { owner: string; nft: { token_id: string } }[] }>(`${s.url}/indexer/nft/v1/tokens/by_collection/${cols[0].object_addr}?pagination.limit=2`)).tokens;
      const owner = tokens[0].owner;
      urls = [
        '/indexer/nft/v1/collections?pagination.limit=3',
        `/indexer/nft/v1/collections/${cols[0].object_addr}`,
        `/indexer/nft/v1/collections/by_account/${owner}`,
        `/indexer/nft/v1/tokens/by_account/${owner}?pagination.limit=5`,
        `/indexer/nft/v1/tokens/by_account/${owner}?collection_addr=${cols[0].object_addr}`,
        `/indexer/nft/v1/tokens/by_collection/${cols[1].object_addr}?pagination.limit=4`,
        '/indexer/richlist/v1/umin?pagination.limit=5',
      ];
    });
    after(async () => {
      for (const s of served) await s.stop();
    });

    it('after a restart every unchanged NFT and rich-list page is a 304 decided from the versions, no page computed', async () => {
      const held = await etags(served[0]);
      await served[0].stop();
      const s = await startServe(['--db', file, '--log-level', 'warn']);
      served.push(s);
      const misses = await counter(s, 'indexer_api_response_cache_misses_total');
      for (const [u, etag] of held) {
        const r = await get(s.url + u, { 'accept-encoding': 'gzip', 'if-none-match': etag });
        expect(r.status, u).to.equal(304);
        expect(r.headers.etag, u).to.equal(etag);
      }
      expect(await counter(s, 'indexer_api_response_cache_version_hits_total')).to.equal(held.size);
      expect(await counter(s, 'indexer_api_response_cache_misses_total'), 'pages computed').to.equal(misses);
    });

    it('a file imported again from the same dump (another file, built independently) gives every page the same ETag', async () => {
      const again = join(dir, 'again.sqlite');
      await runImport({ fromDump: await demoDump('evm'), out: again, force: true, quiet: true, json: false });
      const a = await startServe(['--db', file, '--log-level', 'warn']);
      const b = await startServe(['--db', again, '--log-level', 'warn']);
      served.push(a, b);
      expect(await etags(b)).to.deep.equal(await etags(a));
    });
  });
});
