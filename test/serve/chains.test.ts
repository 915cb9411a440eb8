/**
 * Many chains in one replica (issue #31): `serve --db a --db b …` / `--db-dir` serves each chain
 * under `/{chain_id}/` with the whole API, explorer and Swagger; `/` lists them; per-chain ready,
 * metrics and log fields; a damaged or missing file takes only its own chain out; unsafe,
 * reserved and colliding chain ids are refused at start naming the files; one response-cache
 * budget where one chain's batch or swap never empties another's entries; the real clients' URL
 * building under `http://host/{chain_id}` pages as at the root. Real servers on 127.0.0.1.
 */
import { expect } from 'chai';
import { execFile, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { etagOf } from '../../src/http/etag';
import { ResponseCache, type CacheState } from '../../src/cache/store';
import { createLogger } from '../../src/lib/log';
import { defaultServeSettings } from '../../src/settings/serve';
import { chainIdOf, createRequestListener } from '../../src/serve/routing';
import { assembleServeStack, ServeStack } from '../../src/serve/assembly';
import { loadOpenApi } from '../../src/serve/openapi';
import { listen } from '../../src/serve/server';
import { openSnapshot } from '../../src/snapshot/open';
import { appOptions } from '../helpers/app-options';
import { chainIdProblem, ChainSetError } from '../../src/serve/chains';
import { openDatabase } from '../../src/sqlite';
import { pagesAsAtRoot, routePaths } from './client-urls';
import { CLI, cleanEnv, DEMO, eventually, get, metric, startServe, withChainId } from '../helpers/serve';

const IDS = { move: 'minimove-demo-1', wasm: 'miniwasm-demo-1', evm: 'minievm-demo-1' } as const;

/** a plain `serve`'s settings, but a free port, no start-up check and no commit watch */
const REST = { ...defaultServeSettings(), port: 0, verifyAtStart: false, commitPollMs: 0, clusterWorker: false };

interface Opts { baseUrl?: string; dir?: string; files?: string[]; watchPollMs?: number; cacheBytes?: number; lines?: string[] }

function chainsStack(o: Opts): Promise<ServeStack> {
  const logger = o.lines ? createLogger('info', (t) => { o.lines?.push(...t.split('\n').filter((l) => l !== '')); }) : createLogger('error');
  return assembleServeStack({
    ...REST, file: '', chains: { files: o.files ?? [], dir: o.dir }, logger, baseUrl: o.baseUrl ?? '',
    cacheBytes: o.cacheBytes ?? 8 * 1024 * 1024, cacheEntries: 10_000, watchPollMs: o.watchPollMs,
  });
}

function singleStack(file: string): Promise<ServeStack> {
  return assembleServeStack({ ...REST, file, logger: createLogger('error'), baseUrl: '', cacheBytes: 0, cacheEntries: 0, watchPollMs: undefined });
}

describe('serve: many chains in one replica', function () {
  this.timeout(120_000);
  let tmp: string;
  before(() => { tmp = mkdtempSync(join(tmpdir(), 'indexer-api-chains-')); });
  after(() => { rmSync(tmp, { recursive: true, force: true }); });

  describe('three demo chains, each under /{chain_id}/', () => {
    let multi: ServeStack;
    const roots: Record<string, ServeStack> = {};
    let origin: string;
    before(async () => {
      multi = await chainsStack({ files: [DEMO('move'), DEMO('wasm'), DEMO('evm')] });
      for (const vm of ['move', 'evm'] as const) roots[vm] = await singleStack(DEMO(vm));
      origin = multi.url;
    });
    after(async () => {
      await multi?.close(1000);
      for (const s of Object.values(roots)) await s.close(1000);
    });

    it('GET / lists the chains as JSON for a client that asks for it, the picker for a browser', async () => {
      const list = JSON.parse((await get(`${origin}/`, { accept: 'application/json' })).body) as { chains: Record<string, unknown>[] };
      expect(list.chains).to.deep.equal([
        { chain_id: IDS.evm, vm_type: 'evm', height: 400, path: `/${IDS.evm}/`, ready: true },
        { chain_id: IDS.move, vm_type: 'move', height: 400, path: `/${IDS.move}/`, ready: true },
        { chain_id: IDS.wasm, vm_type: 'wasm', height: 400, path: `/${IDS.wasm}/`, ready: true },
      ]);
      const html = await get(`${origin}/`, { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' });
      expect(html.headers['content-type']).to.match(/^text\/html/);
      for (const id of Object.values(IDS)) expect(html.body).to.contain(`href="/${id}/"`);
      const css = /href="([^"]+\.css)"/.exec(html.body)?.[1] as string;
      expect((await get(origin + css)).status, css).to.equal(200);
      // the heading in the explorer's column (main), under its top bar
      expect(html.body).to.match(/<header class="top">[^]*<\/header>\s*<main><h1>Chains<\/h1>/);
      // the hint is a command that runs as printed: the full URL this request reached
      const hint = /<code>(curl [^<]+)<\/code>/.exec(html.body)?.[1].replace(/&#39;/g, "'") as string;
      expect(hint).to.equal(`curl -H 'Accept: application/json' '${origin}/'`);
      // run by a shell, asynchronously: this process serves the answer
      const out = await new Promise<string>((done, fail) => execFile('sh', ['-c', hint], (e, stdout) => (e ? fail(e) : done(stdout))));
      expect(JSON.parse(out)).to.deep.equal(list);
    });

    it('every route family answers under /{chain_id}/ the same status and bytes as a replica of that chain alone', async () => {
      for (const vm of ['move', 'evm'] as const) {
        for (const p of await routePaths(roots[vm].url, vm)) {
          const a = await get(roots[vm].url + p);
          const b = await get(`${origin}/${IDS[vm]}${p}`);
          expect(b.status, p).to.equal(a.status);
          expect(b.body, p).to.equal(a.body);
          expect(b.headers.etag, p).to.equal(a.headers.etag);
        }
      }
    });

    it('a path outside every chain is the JSON 404 naming where the chains are; so is an unknown chain', async () => {
      for (const p of ['/status', '/indexer/tx/v1/txs', '/minimove-demo-2/status', '/MINIMOVE-DEMO-1/status']) {
        const r = await get(origin + p);
        expect(r.status, p).to.equal(404);
        expect(JSON.parse(r.body).message, p).to.contain('under /{chain_id}/').and.contain(IDS.move);
      }
    });

    it('/ready answers 200 with a per-chain breakdown; each chain has its own /ready, /health and /metrics', async () => {
      const r = JSON.parse((await get(`${origin}/ready`)).body) as { status: string; chains: Record<string, { status: string; height: number }> };
      expect(r.status).to.equal('ready');
      expect(Object.keys(r.chains)).to.have.members(Object.values(IDS));
      for (const id of Object.values(IDS)) {
        expect(r.chains[id]).to.include({ status: 'ready', height: 400 });
        expect(JSON.parse((await get(`${origin}/${id}/ready`)).body)).to.include({ status: 'ready', height: 400 });
        expect((await get(`${origin}/${id}/health`)).status).to.equal(200);
      }
    });

    it('metrics carry the chain: requests by `chain`, the snapshot gauges by `chain_id`', async () => {
      await get(`${origin}/${IDS.wasm}/indexer/block/v1/blocks?pagination.limit=1`);
      const text = (await get(`${origin}/metrics`)).body;
      expect(metric(text, 'indexer_api_http_requests_total', `method="GET",route="/indexer/block/v1/blocks",status="200",chain="${IDS.wasm}"`)).to.be.at.least(1);
      for (const id of Object.values(IDS)) expect(metric(text, 'indexer_api_snapshot_height', `chain_id="${id}"`), id).to.equal(400);
      expect((await get(`${origin}/${IDS.move}/metrics`)).body).to.contain(`chain_id="${IDS.evm}"`);
    });

    it('Swagger UI and doc.json of a chain name its prefix; the explorer shell carries it', async () => {
      for (const id of Object.values(IDS)) {
        const doc = JSON.parse((await get(`${origin}/${id}/swagger/doc.json`)).body) as { servers: unknown };
        expect(doc.servers).to.deep.equal([{ url: `/${id}` }]);
        const page = await get(`${origin}/${id}/swagger`);
        expect(page.body).to.contain(`/${id}/swagger/swagger-ui-bundle.js`);
        for (const p of ['/', '/blocks/1']) {
          const shell = await get(`${origin}/${id}${p}`);
          expect(shell.headers['content-type'], p).to.match(/^text\/html/);
          expect(shell.body).to.contain(`<meta name="indexer-api-base" content="/${id}">`).and.contain(`href="/${id}/explorer/explorer.css"`);
        }
        expect((await get(`${origin}/${id}/explorer/explorer.js`)).status).to.equal(200);
      }
    });

    it('the real clients\' URL building from http://host/{chain_id} pages and parses as at the root', async () => {
      expect(await pagesAsAtRoot(roots.evm.url, [`${origin}/${IDS.evm}`, `${origin}/${IDS.evm}/`])).to.be.at.least(2);
    });
  });

  describe('admission sees the request as the app routes it', () => {
    it('the wrap around the app gets the target with the base URL and the chain cut, and the chain id (its fair-share group)', async () => {
      const snapshots = new Map([[IDS.move, openSnapshot(DEMO('move'))], [IDS.wasm, openSnapshot(DEMO('wasm'))]]);
      const routes = [...snapshots].map(([id, s]) => ({ id, base: `/p/${id}`, holder: { current: () => s } }));
      const seen: { url: string; chain: string }[] = [];
      const listener = createRequestListener({
        chains: { find: (id) => routes.find((r) => r.id === id), list: () => routes, refused: () => [] },
        openapi: loadOpenApi(), options: appOptions({ baseUrl: '/p', logError: () => undefined }),
      }, (inner) => (req, res) => { seen.push({ url: req.url as string, chain: chainIdOf(req) }); inner(req, res); });
      const running = await listen(listener, '127.0.0.1', 0);
      try {
        for (const p of [`/p/${IDS.wasm}/status`, `/p/${IDS.move}/indexer/tx/v1/txs?pagination.limit=1`, '/p/', '/elsewhere']) await get(running.url + p);
      } finally {
        await running.close(10_000);
        for (const s of snapshots.values()) s.close();
      }
      expect(seen).to.deep.equal([
        { url: '/status', chain: IDS.wasm }, { url: '/indexer/tx/v1/txs?pagination.limit=1', chain: IDS.move },
        { url: '/', chain: '' }, { url: '/elsewhere', chain: '' },
      ]);
    });
  });

  describe('under a base URL', () => {
    let s: ServeStack;
    before(async () => { s = await chainsStack({ files: [DEMO('move'), DEMO('wasm')], baseUrl: '/indexers' }); });
    after(async () => { await s?.close(1000); });

    it('serves /PREFIX/{chain_id}/…, lists under /PREFIX/, and nothing outside it', async () => {
      const origin = s.url.slice(0, -'/indexers'.length);
      const list = JSON.parse((await get(`${s.url}/`, { accept: 'application/json' })).body) as { chains: { path: string }[] };
      expect(list.chains.map((c) => c.path)).to.deep.equal([`/indexers/${IDS.move}/`, `/indexers/${IDS.wasm}/`]);
      expect(JSON.parse((await get(`${s.url}/${IDS.wasm}/status`)).body)).to.include({ chain_id: IDS.wasm });
      expect((await get(`${s.url}/${IDS.wasm}/swagger/doc.json`)).body).to.contain(`"servers":[{"url":"/indexers/${IDS.wasm}"}]`);
      expect((await get(`${origin}/${IDS.wasm}/status`)).status).to.equal(404);
      expect((await get(`${s.url}/ready`)).status).to.equal(200);
    });
  });

  describe('one response-cache budget, kept per chain', () => {
    const state = (fileKey: string, changeSeq: number, records: { seq: number; tags: string[] }[] = []): CacheState => ({
      fileKey, changeSeq, meta: { snapshotId: `${fileKey}-${changeSeq}`, wireFormat: 2 },
      changes: { seq: () => changeSeq, since: (from: number, to: number) => records.filter((r) => r.seq > from && r.seq <= to) } as unknown as CacheState['changes'],
    });
    const entry = (body: string): { body: Buffer; etag: string; route: string; headers: string[]; headers304: string[] } => ({ body: Buffer.from(body), etag: etagOf('seed.2.', Buffer.from(body)), route: '/r', headers: [], headers304: [] });

    it('a change record or another file of one chain drops only that chain\'s entries', () => {
      const cache = new ResponseCache(1 << 20, Infinity, false);
      const a = cache.part('a');
      const b = cache.part('b');
      const a1 = state('fa', 1);
      const b1 = state('fb', 1);
      a.sync(a1); b.sync(b1);
      a.set(a1, '/x', entry('a-x'), ['a:acc1']);
      a.set(a1, '/y', entry('a-y'), ['a:acc2']);
      b.set(b1, '/x', entry('b-x'), ['a:acc1']);
      expect(a.get('/x')?.body.toString()).to.equal('a-x');
      expect(b.get('/x')?.body.toString()).to.equal('b-x');
      // chain a's batch names a:acc1: a's /x goes, a's /y and b's /x (same tag, other chain) stay
      a.sync(state('fa', 2, [{ seq: 2, tags: ['a:acc1'] }]));
      expect(a.get('/x')).to.equal(undefined);
      expect(a.get('/y')?.body.toString()).to.equal('a-y');
      expect(b.get('/x')?.body.toString()).to.equal('b-x');
      // another file for chain a empties a only
      a.sync(state('fa-2', 5));
      expect(a.get('/y')).to.equal(undefined);
      expect(b.get('/x')?.body.toString()).to.equal('b-x');
      cache.dropPart('b');
      expect(cache.part('b').get('/x')).to.equal(undefined);
      expect(cache.size).to.equal(0);
      expect(cache.bytes).to.equal(0);
    });

    it('the byte cap is one budget: bodies of every chain count against it and are evicted in one order', () => {
      const cache = new ResponseCache(64 * 1024, Infinity, false);
      const parts = ['a', 'b', 'c'].map((id) => cache.part(id));
      const states = parts.map((_, i) => state(`f${i}`, 1));
      parts.forEach((p, i) => p.sync(states[i]));
      for (let n = 0; n < 60; n++) parts[n % 3].set(states[n % 3], `/u${n}`, entry('x'.repeat(2000)), [`t${n}`]);
      expect(cache.bytes).to.be.at.most(64 * 1024);
      const held = cache.size;
      expect(held).to.be.within(20, 59);
      // every chain holds bodies of the one budget, and keeps a validator for every answer
      for (const p of parts) expect(p.size).to.be.greaterThan(0);
      expect(parts.reduce((sum, p) => sum + p.size, 0)).to.equal(held);
      expect(cache.validators).to.equal(60);
      // a newcomer of chain c asked for more than the bodies held takes one's place, of whichever chain
      for (let i = 0; i < 3; i++) expect(parts[2].get('/u59'), 'no body yet').to.equal(undefined);
      parts[2].set(states[2], '/u59', entry('x'.repeat(2000)), ['t59']);
      expect(parts[2].get('/u59')).to.not.equal(undefined);
      expect(cache.size).to.equal(held);
      expect(cache.bytes).to.be.at.most(64 * 1024);
    });

    it('end to end: a hot swap of one chain\'s file leaves the other chain\'s cached answers hits', async () => {
      const dir = join(tmp, 'swap');
      mkdirSync(dir);
      const a = join(dir, 'a.sqlite');
      const b = join(dir, 'b.sqlite');
      copyFileSync(DEMO('move'), a);
      copyFileSync(DEMO('wasm'), b);
      const s = await chainsStack({ files: [a, b], watchPollMs: 50 });
      try {
        const hits = async (): Promise<number> => metric((await get(`${s.url}/metrics`)).body, 'indexer_api_response_cache_hits_total') ?? 0;
        const urlB = `${s.url}/${IDS.wasm}/indexer/tx/v1/txs?pagination.limit=3`;
        const urlA = `${s.url}/${IDS.move}/indexer/tx/v1/txs?pagination.limit=3`;
        for (let i = 0; i < 3; i++) { await get(urlA); await get(urlB); }
        const before = await hits();
        // a new file of chain A renamed over its path
        withChainId(DEMO('move'), join(dir, '.a.next'), IDS.move);
        const db = openDatabase(join(dir, '.a.next'), { fileMustExist: true });
        db.prepare("UPDATE meta SET value = 'swapped' WHERE key = 'snapshot_id'").run();
        db.close();
        renameSync(join(dir, '.a.next'), a);
        await eventually('chain A swapped', async () => (JSON.parse((await get(`${s.url}/${IDS.move}/ready`)).body).snapshot_id === 'swapped' ? true : undefined));
        const mid = await hits();
        await get(urlB);
        expect(await hits(), 'B answered from the cache after A\'s swap').to.equal(mid + 1);
        await get(urlA);
        expect(await hits(), 'A computed again after its swap').to.equal(mid + 1);
        expect(mid).to.be.at.least(before);
      } finally { await s.close(1000); }
    });
  });

  describe('a damaged or missing file takes only its own chain out', () => {
    it('at start: the other chains serve, the root /ready names the file not served', async () => {
      const bad = join(tmp, 'damaged.sqlite');
      writeFileSync(bad, 'SQLite format 3\0 but not really a database, just text');
      const lines: string[] = [];
      const s = await chainsStack({ files: [DEMO('move'), bad, join(tmp, 'missing.sqlite')], lines });
      try {
        const ready = await get(`${s.url}/ready`);
        expect(ready.status).to.equal(200);
        const body = JSON.parse(ready.body) as { files_not_served: { file: string; error: string }[] };
        expect(body.files_not_served.map((f) => f.file)).to.have.members([bad, join(tmp, 'missing.sqlite')]);
        expect((await get(`${s.url}/${IDS.move}/status`)).status).to.equal(200);
        const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'snapshot file not served');
        expect(logged.map((l) => l.file)).to.include(bad);
      } finally { await s.close(1000); }
    });

    it('at run time: a chain whose file is found damaged is 503 on its /ready, the root stays ready', async () => {
      const s = await chainsStack({ files: [DEMO('move'), DEMO('wasm')] });
      try {
        const chain = s.chains?.find(IDS.wasm);
        chain?.holder.reportFault(chain.holder.current()!, Object.assign(new Error('database disk image is malformed'), { code: 'SQLITE_CORRUPT' }));
        expect((await get(`${s.url}/${IDS.wasm}/ready`)).status).to.equal(503);
        expect((await get(`${s.url}/${IDS.move}/ready`)).status).to.equal(200);
        const root = await get(`${s.url}/ready`);
        expect(root.status).to.equal(200);
        expect(JSON.parse(root.body).chains[IDS.wasm].message).to.contain('damaged');
      } finally { await s.close(1000); }
    });

    it('refuses to start when no file opens, naming them', async () => {
      let err: Error | undefined;
      try { await chainsStack({ files: [join(tmp, 'nope-1.sqlite'), join(tmp, 'nope-2.sqlite')] }); } catch (e) { err = e as Error; }
      expect(err).to.be.instanceOf(ChainSetError);
      expect(err?.message).to.contain('nope-1.sqlite').and.contain('nope-2.sqlite');
    });
  });

  describe('chain ids that cannot be served are refused at start, naming the files', () => {
    it('two files of one chain', async () => {
      const copy = join(tmp, 'move-copy.sqlite');
      copyFileSync(DEMO('move'), copy);
      let err: Error | undefined;
      try { await chainsStack({ files: [DEMO('move'), copy] }); } catch (e) { err = e as Error; }
      expect(err?.message).to.contain(`chain id "${IDS.move}" is in 2 files`).and.contain(copy).and.contain(DEMO('move'));
    });

    it('a reserved segment and an unsafe one', async () => {
      const reserved = withChainId(DEMO('wasm'), join(tmp, 'reserved.sqlite'), 'status');
      const unsafe = withChainId(DEMO('wasm'), join(tmp, 'unsafe.sqlite'), 'a/b');
      let err: Error | undefined;
      try { await chainsStack({ files: [DEMO('move'), reserved, unsafe] }); } catch (e) { err = e as Error; }
      expect(err?.message).to.contain(reserved).and.contain('chain id "status"').and.contain('reserved');
      expect(err?.message).to.contain(unsafe).and.contain('"/" is not safe in a path segment');
    });

    it('knows every segment the server answers itself', () => {
      for (const id of ['health', 'ready', 'metrics', 'status', 'swagger', 'indexer', 'explorer', 'search', 'blocks', 'txs', 'evm-txs', 'accounts', 'nft-collections', 'richlist', 'Status']) {
        expect(chainIdProblem(id), id).to.contain('reserved');
      }
      for (const id of ['', '.', '..', 'a b', 'a%2F', 'ä']) expect(chainIdProblem(id), id).to.be.a('string');
      for (const id of ['minimove-1', 'initiation-2', 'a.b_c~d']) expect(chainIdProblem(id), id).to.equal(undefined);
    });
  });

  describe('--db-dir', () => {
    it('serves every *.sqlite of the directory; a file added or removed is served or dropped without a restart', async () => {
      const dir = join(tmp, 'dir');
      mkdirSync(dir);
      copyFileSync(DEMO('move'), join(dir, 'move.sqlite'));
      writeFileSync(join(dir, 'notes.txt'), 'not a snapshot');
      const lines: string[] = [];
      const s = await chainsStack({ dir, watchPollMs: 50, lines });
      try {
        const ids = async (): Promise<string[]> => (JSON.parse((await get(`${s.url}/`, { accept: 'application/json' })).body) as { chains: { chain_id: string }[] }).chains.map((c) => c.chain_id);
        expect(await ids()).to.deep.equal([IDS.move]);
        // a temporary (dot file) is not a chain; once renamed into place it is
        copyFileSync(DEMO('wasm'), join(dir, '.wasm.sqlite.tmp'));
        renameSync(join(dir, '.wasm.sqlite.tmp'), join(dir, 'wasm.sqlite'));
        await eventually('wasm served', async () => ((await ids()).includes(IDS.wasm) ? true : undefined));
        // served once its file passed its check (quick on a demo file)
        await eventually('wasm ready', async () => ((await get(`${s.url}/${IDS.wasm}/ready`)).status === 200 ? true : undefined));
        expect(JSON.parse((await get(`${s.url}/${IDS.wasm}/status`)).body)).to.include({ chain_id: IDS.wasm });
        unlinkSync(join(dir, 'move.sqlite'));
        await eventually('move dropped', async () => ((await ids()).includes(IDS.move) ? undefined : true));
        expect((await get(`${s.url}/${IDS.move}/status`)).status).to.equal(404);
        // the log is written in batches (within 10 ms): wait for the lines
        const logged = (msg: string): Promise<Record<string, unknown>> => eventually(msg, async () => lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === msg));
        expect(await logged('chain added')).to.include({ chain: IDS.wasm });
        expect(await logged('chain removed')).to.include({ chain: IDS.move });
      } finally { await s.close(1000); }
      // stopping is not a chain leaving the replica: no 'chain removed' for the chains still served
      await new Promise((done) => setTimeout(done, 50));
      const removed = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'chain removed');
      expect(removed.map((l) => l.chain)).to.deep.equal([IDS.move]);
    });
  });

  describe('--db-dir without --watch (or with --watch-poll-ms 0)', () => {
    for (const watchPollMs of [undefined, 0]) {
      it(`still looks at the directory every 2 s (watchPollMs ${watchPollMs})`, async () => {
        const dir = join(tmp, `dir-nowatch-${watchPollMs}`);
        mkdirSync(dir);
        const s = await chainsStack({ dir, watchPollMs });
        try {
          expect(s.chains?.list()).to.have.length(0);
          copyFileSync(DEMO('wasm'), join(dir, 'wasm.sqlite'));
          await eventually('wasm served', async () => ((await get(`${s.url}/${IDS.wasm}/status`)).status === 200 ? true : undefined));
        } finally { await s.close(1000); }
      });
    }
  });

  describe('the CLI', () => {
    const cli = (args: string[]): { status: number | null; stderr: string } => {
      const r = spawnSync(process.execPath, [CLI, 'serve', ...args], { encoding: 'utf8', env: cleanEnv() });
      return { status: r.status, stderr: r.stderr };
    };

    it('refuses --pull with several chains and --db-dir beside --db (usage errors, exit 2)', () => {
      const pull = cli(['--pull', 'http://127.0.0.1:9/manifest.json', '--db', 'a.sqlite', '--db', 'b.sqlite']);
      expect(pull.status).to.equal(2);
      expect(pull.stderr).to.contain('--pull serves one chain');
      const both = cli(['--db-dir', tmp, '--db', 'a.sqlite']);
      expect(both.status).to.equal(2);
      expect(both.stderr).to.contain('--db-dir').and.contain('give the files one way');
      expect(cli(['--help']).stderr + spawnSync(process.execPath, [CLI, 'serve', '--help'], { encoding: 'utf8' }).stdout).to.contain('--db-dir');
    });

    it('serve --db a --db b --get /{chain_id}/status answers from that chain; --get / lists the chains', () => {
      const one = spawnSync(process.execPath, [CLI, 'serve', '--db', DEMO('move'), '--db', DEMO('evm'), '--get', `/${IDS.evm}/status`], { encoding: 'utf8', env: cleanEnv() });
      expect(one.status, one.stderr).to.equal(0);
      expect(JSON.parse(one.stdout)).to.include({ chain_id: IDS.evm });
      const list = spawnSync(process.execPath, [CLI, 'serve', '--db', DEMO('move'), '--db', DEMO('evm'), '--get', '/'], { encoding: 'utf8', env: cleanEnv() });
      expect((JSON.parse(list.stdout) as { chains: { chain_id: string }[] }).chains.map((c) => c.chain_id)).to.deep.equal([IDS.evm, IDS.move]);
    });

    for (const workers of ['1', '2']) {
      it(`serve --db a --db b --db c (--workers ${workers}): one "serving" line, every chain answered by every worker`, async () => {
        const s = await startServe(['--db', DEMO('move'), '--db', DEMO('wasm'), '--db', DEMO('evm'), '--workers', workers, '--log-level', 'warn']);
        try {
          expect(s.stderr).to.match(/serving 3 chains \(minievm-demo-1: evm, height 400; minimove-demo-1: move, height 400; miniwasm-demo-1: wasm, height 400\) under \/\{chain_id\}\/ on http/);
          for (let i = 0; i < 4; i++) {
            for (const id of Object.values(IDS)) expect(JSON.parse((await get(`${s.url}/${id}/status`)).body)).to.include({ chain_id: id });
          }
          expect((await get(`${s.url}/ready`)).status).to.equal(200);
        } finally {
          expect((await s.stop()).code).to.equal(0);
        }
      });
    }
  });
});
