/**
 * src/serve/openapi.ts: openapi.yaml as shipped (build/openapi.json) and the document the validator is
 * given (validatorDocument: $refs inlined, response bodies dropped unless validated). The
 * validator must accept, reject and coerce exactly as it does with openapi.yaml as written.
 */
import { expect } from 'chai';
import express, { ErrorRequestHandler, RequestHandler } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import yaml from 'js-yaml';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadOpenApi, OpenApiDocument, validatorDocument } from '../../src/serve/openapi';
import { RunningServer, listen } from '../../src/serve/server';
import { makeTestApp, ROOT } from '../helpers/app';

const fromYaml = (): OpenApiDocument => yaml.load(readFileSync(join(ROOT, 'openapi.yaml'), 'utf8')) as OpenApiDocument;

function refsIn(node: unknown, at = '#', out: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((v, i) => refsIn(v, `${at}/${i}`, out));
  else if (node !== null && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref') out.push(at);
      refsIn(v, `${at}/${k}`, out);
    }
  }
  return out;
}

/** Every route of the document with valid and invalid path parameters, and query variations. */
function urls(doc: OpenApiDocument): string[] {
  const out = new Set<string>(['/no/such/route', '/indexer/block/v1/blocks/', '//indexer/block/v1/blocks']);
  const pathValues = ['7', '0', '-1', 'abc', '0x1', 'init1abc', '35E11D229411BE8F55E76355AB4DA63BC3ABCB5FD1E487B9F015FF7D2F8522A0', 'umin', '%20'];
  const queries = [
    '', '?pagination.limit=2', '?pagination.limit=0', '?pagination.limit=abc', '?pagination.limit=1001', '?pagination.offset=-1',
    '?pagination.reverse=maybe', '?pagination.reverse=false&pagination.count_total=false', '?pagination.key=eyJ4IjoxfQ==',
    '?order_by=height', '?order_by=sideways', '?is_signer=true', '?is_signer=yes',
    '?msgs=cosmos.bank.v1beta1.MsgSend&msgs=/initia.move.v1.MsgExecute', '?unknown=1',
  ];
  for (const path of Object.keys(doc.paths as Record<string, unknown>)) {
    for (const v of pathValues) {
      const p = path.replace(/\{[^}]+\}/g, v);
      for (const q of queries) out.add(p + q);
    }
  }
  return [...out];
}

/** eov over `spec`, answering with what it made of the request (or its error). */
async function validatorServer(spec: OpenApiDocument, validateResponses: boolean): Promise<RunningServer> {
  const app = express();
  app.set('query parser', 'simple');
  app.use(OpenApiValidator.middleware({
    apiSpec: spec as never,
    validateRequests: { coerceTypes: true, allowUnknownQueryParameters: true },
    validateResponses,
    validateApiSpec: false,
    useRequestUrl: true,
  }) as RequestHandler[]);
  const echo: RequestHandler = (req, res) => {
    const openapi = (req as { openapi?: { expressRoute?: string; pathParams?: unknown } }).openapi;
    // a body no response schema allows, to see response validation at work
    if (validateResponses) { res.json({ unexpected: true }); return; }
    res.json({ query: req.query, route: openapi?.expressRoute, pathParams: openapi?.pathParams });
  };
  app.use(echo);
  const onError: ErrorRequestHandler = (err: { status?: number; message: string; errors?: unknown }, _req, res, _next) => {
    res.status(err.status ?? 500).json({ message: err.message, errors: err.errors });
  };
  app.use(onError);
  return listen(app, '127.0.0.1', 0);
}

async function answer(base: string, url: string): Promise<{ status: number; body: string }> {
  const res = await fetch(base + url);
  return { status: res.status, body: await res.text() };
}

describe('openapi.yaml at start-up (src/serve/openapi.ts)', function () {
  this.timeout(60_000);

  it('loadOpenApi() is openapi.yaml, from build/openapi.json', () => {
    expect(JSON.parse(readFileSync(join(ROOT, 'build', 'openapi.json'), 'utf8'))).to.deep.equal(fromYaml());
    expect(loadOpenApi()).to.deep.equal(fromYaml());
  });

  it('validatorDocument() has no $ref and no components, and leaves the document it is given as it was', () => {
    const doc = fromYaml();
    expect(refsIn(doc)).to.not.have.lengthOf(0);
    for (const withResponses of [false, true]) {
      const v = validatorDocument(doc, withResponses);
      expect(refsIn(v), `withResponses ${withResponses}`).to.deep.equal([]);
      expect(v).to.not.have.property('components');
      expect(validatorDocument(doc, withResponses)).to.equal(v); // memoized
    }
    expect(doc).to.deep.equal(fromYaml());
    // a parameter by $ref became the parameter itself
    const blocks = (validatorDocument(doc, false).paths as Record<string, { get: { parameters: { name: string }[] } }>)['/indexer/block/v1/blocks'];
    expect(blocks.get.parameters.map((p) => p.name)).to.include('pagination.limit');
  });

  it('refuses $refs it cannot inline faithfully', () => {
    const base = { openapi: '3.0.3', info: { title: 't', version: '1' }, paths: {} };
    expect(() => validatorDocument({ ...base, components: { schemas: { A: { $ref: '#/components/schemas/A' } } } }, false)).to.throw(/circular/);
    expect(() => validatorDocument({ ...base, components: { schemas: { A: { $ref: 'other.yaml#/A' } } } }, false)).to.throw(/only local/);
    expect(() => validatorDocument({ ...base, components: { schemas: { A: { $ref: '#/components/schemas/B', description: 'x' }, B: {} } } }, false)).to.throw(/sibling/);
    expect(() => validatorDocument({ ...base, components: { schemas: { A: { $ref: '#/components/schemas/B' } } } }, false)).to.throw(/does not resolve/);
  });

  describe('the validator accepts, rejects and coerces as with openapi.yaml as written', () => {
    const servers: Record<string, RunningServer> = {};
    before(async () => {
      servers.asWritten = await validatorServer(fromYaml(), false);
      servers.inlined = await validatorServer(validatorDocument(fromYaml(), false), false);
      servers.asWrittenResponses = await validatorServer(fromYaml(), true);
      servers.inlinedResponses = await validatorServer(validatorDocument(fromYaml(), true), true);
    });
    after(async () => { for (const s of Object.values(servers)) await s.close(); });

    it('request validation: same status and body for every route, valid and invalid', async () => {
      const all = urls(fromYaml());
      expect(all.length).to.be.greaterThan(500);
      const statuses = new Set<number>();
      for (const url of all) {
        const a = await answer(servers.asWritten.url, url);
        const b = await answer(servers.inlined.url, url);
        expect(b, url).to.deep.equal(a);
        statuses.add(a.status);
      }
      expect([...statuses]).to.include.members([200, 400, 404]);
    });

    it('response validation: the same responses are refused', async () => {
      for (const url of urls(fromYaml()).filter((_, i) => i % 7 === 0)) {
        const a = await answer(servers.asWrittenResponses.url, url);
        const b = await answer(servers.inlinedResponses.url, url);
        expect(b.status, url).to.equal(a.status);
        if (a.status === 200) expect(b.body, url).to.equal(a.body);
      }
      expect((await answer(servers.inlinedResponses.url, '/indexer/block/v1/blocks')).status).to.equal(500);
    });
  });
});

describe('openapi.yaml tells the truth about errors (/swagger shows it)', function () {
  this.timeout(60_000);
  const text = (): string => readFileSync(join(ROOT, 'openapi.yaml'), 'utf8');

  it('every error message it quotes for height abc is the one the server answers', async () => {
    const t = await makeTestApp('move');
    const answer = (await t.api.get('/indexer/block/v1/blocks/abc')).body as { message: string };
    const quoted = text().match(/invalid value for height: abc \([^)]*\)/g) ?? [];
    expect(quoted.length).to.be.greaterThan(1);
    for (const q of quoted) expect(q).to.equal(answer.message);
  });

  it('the booleans it lists are exactly the ones the server reads', async () => {
    const t = await makeTestApp('move');
    const sentence = /reads ((?:`[^`]+`(?: and )?)+)/.exec((fromYaml().info as { description: string }).description.replace(/\s+/g, ' '));
    expect(sentence, 'the description lists the booleans read').to.not.equal(null);
    const listed = [...(sentence as RegExpExecArray)[1].matchAll(/`([^`]+)`/g)].flatMap((m) => m[1].split(' '));
    expect(listed).to.have.length(12);
    const oldest = (await t.api.get('/indexer/tx/v1/txs?pagination.limit=1&pagination.reverse=false')).text;
    const newest = (await t.api.get('/indexer/tx/v1/txs?pagination.limit=1')).text;
    expect(oldest).to.not.equal(newest);
    for (const v of [...listed, 'yes', 'no', 'on', 'tRuE', '2', 'Y', '']) {
      const res = await t.api.get(`/indexer/tx/v1/txs?pagination.limit=1&pagination.reverse=${v}`);
      expect(res.status, `pagination.reverse=${v}`).to.equal(200);
      // a listed false spelling reads false; anything unlisted is the default (newest first)
      expect(res.text, `pagination.reverse=${v}`).to.equal(listed.slice(6).includes(v) ? oldest : newest);
    }
  });
});
