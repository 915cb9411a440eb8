/**
 * The signer of a cosmos tx for every key type a real chain carries, as rollytics derives it
 * (`indexer/collector/tx/collect.go`: `sdk.AccAddress(pk.Address())` of the first signer info's
 * public key): secp256k1, eth_secp256k1, ed25519 and multisig (`LegacyAminoPubKey`, threshold
 * keys of secp256k1, ed25519 or other multisigs).
 *
 * Known answers come from outside this project: cosmjs' multisig address test (the Amino bytes
 * and the address of a 2-of-3 secp256k1 multisig, computed by an independent implementation) and
 * Ethereum's private-key-1 address. The JSON shape of a multisig signer info is the one of a real
 * signed tx (test/fixtures/real/README.md). Everything else is compared with test/helpers/address.ts,
 * which re-derives the Amino bytes its own way (prefixes computed from the type names).
 */
import { expect } from 'chai';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runImport } from '../../src/import/run';
import { signerFromTx } from '../../src/records/derive';
import { pubkeyToAddress } from '../../src/lib/pubkey';
import { bech32Of, pubkeyAccount, PublicKeyJson } from '../helpers/address';
import { demoDump, serveSnapshot } from '../helpers/same-answers';

const SECP = '/cosmos.crypto.secp256k1.PubKey';
const ED = '/cosmos.crypto.ed25519.PubKey';
const MULTI = '/cosmos.crypto.multisig.LegacyAminoPubKey';
const ETH = '/initia.crypto.v1beta1.ethsecp256k1.PubKey';

/**
 * cosmos/cosmjs packages/amino/src/testutils.spec.ts and addresses.spec.ts ("works for
 * multisig"), commit 1a533fc24d55ed98c64acca450e6aed071b4e287, Apache-2.0: three secp256k1 keys
 * (Amino `eb5ae98721` + key), the address of the first, and the 2-of-3 multisig's address
 * wasm1pzf2wlat97n7rykrk7e8g8nxste6hde0r8jqsy.
 */
const COSMJS_KEYS = [
  '038cb598ee54130d34f8e0818e7787aa06139a0e2d0026cadb662b55cf16859a67',
  '02906f1bd9516c8cd3b52639322c801bf8724c1fa5e878c0e32b9bd6c0bb8b0f68',
  '03cc93519d61b686da6f0e8cff9431e356b45f91063ed6f81f79ddd898858800f3',
].map((hex) => Buffer.from(hex, 'hex').toString('base64'));
const COSMJS_KEY1_ADDRESS = '9028577891aee00d15157444c069b4bc60bc764d';
const COSMJS_MULTISIG_ADDRESS = '0892a77fab2fa7e192c3b7b2741e6682f3abb72f';

const single = (type: string, key: string): PublicKeyJson => ({ '@type': type, key });
/** A multisig signer key in the JSON shape of a real signed tx: threshold a number, public_keys a list. */
const multisig = (threshold: number | string, keys: PublicKeyJson[]): PublicKeyJson => ({ '@type': MULTI, threshold, public_keys: keys });
const hex = (b: Buffer | undefined): string | undefined => b?.toString('hex');

describe('signer derivation for every key type', () => {
  it('secp256k1 and the 2-of-3 multisig of cosmjs\' test vectors', () => {
    expect(hex(pubkeyToAddress(single(SECP, COSMJS_KEYS[0])))).to.equal(COSMJS_KEY1_ADDRESS);
    const group = multisig(2, COSMJS_KEYS.map((k) => single(SECP, k)));
    expect(hex(pubkeyToAddress(group))).to.equal(COSMJS_MULTISIG_ADDRESS);
    expect(hex(pubkeyAccount(group)), 'the independent helper agrees').to.equal(COSMJS_MULTISIG_ADDRESS);
    // protojson writes uint32 as a number, the Amino JSON of older tools as a string
    expect(hex(pubkeyToAddress(multisig('2', COSMJS_KEYS.map((k) => single(SECP, k)))))).to.equal(COSMJS_MULTISIG_ADDRESS);
    // order and threshold are part of the address
    expect(hex(pubkeyToAddress(multisig(1, COSMJS_KEYS.map((k) => single(SECP, k)))))).to.not.equal(COSMJS_MULTISIG_ADDRESS);
    expect(hex(pubkeyToAddress(multisig(2, [...COSMJS_KEYS].reverse().map((k) => single(SECP, k)))))).to.not.equal(COSMJS_MULTISIG_ADDRESS);
  });

  it('eth_secp256k1: Ethereum\'s address of private key 1, compressed and uncompressed', () => {
    const g = '79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798';
    const gy = '483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8';
    for (const key of [`02${g}`, `04${g}${gy}`]) {
      for (const type of [ETH, '/ethermint.crypto.v1.ethsecp256k1.PubKey']) {
        expect(hex(pubkeyToAddress(single(type, Buffer.from(key, 'hex').toString('base64')))), `${type} ${key.slice(0, 2)}`)
          .to.equal('7e5f4552091a69125d5dfcb7b8c2659029395bdf');
      }
    }
  });

  it('ed25519 (RFC 8032 test 1 key): the first 20 bytes of its SHA256', () => {
    const key = Buffer.from('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a', 'hex').toString('base64');
    const want = hex(pubkeyAccount(single(ED, key)));
    expect(want).to.have.length(40);
    expect(hex(pubkeyToAddress(single(ED, key)))).to.equal(want);
  });

  it('multisigs of ed25519 keys, mixed keys and nested multisigs agree with the independent derivation', () => {
    const ed = single(ED, Buffer.from('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a', 'hex').toString('base64'));
    const secp = COSMJS_KEYS.map((k) => single(SECP, k));
    const cases: [string, PublicKeyJson][] = [
      ['1-of-1 ed25519', multisig(1, [ed])],
      ['2-of-4 mixed', multisig(2, [secp[0], ed, secp[1], secp[2]])],
      ['nested 2-of-2 of multisigs', multisig(2, [multisig(2, secp), multisig(1, [ed, secp[0]])])],
      ['three levels', multisig(1, [multisig(1, [multisig(2, secp)]), ed])],
      ['threshold 200 (two-byte varint)', multisig(200, secp)],
    ];
    const seen = new Set<string>();
    for (const [name, pk] of cases) {
      const got = hex(pubkeyToAddress(pk));
      expect(got, name).to.have.length(40);
      expect(got, name).to.equal(hex(pubkeyAccount(pk)));
      seen.add(got as string);
    }
    expect(seen.size).to.equal(cases.length);
  });

  it('derives no signer where the SDK cannot (its multisig codec registers no eth_secp256k1) or the key is malformed', () => {
    const eth = single(ETH, Buffer.from(`02${'79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798'}`, 'hex').toString('base64'));
    for (const [name, pk] of [
      ['multisig holding an eth_secp256k1 key', multisig(1, [eth, single(SECP, COSMJS_KEYS[0])])],
      ['multisig without public_keys', { '@type': MULTI, threshold: 1 }],
      ['multisig with a short secp256k1 key', multisig(1, [single(SECP, 'AAAA')])],
      ['multisig with a bad threshold', multisig('two', [single(SECP, COSMJS_KEYS[0])])],
      ['unknown key type', single('/cosmos.crypto.secp256r1.PubKey', COSMJS_KEYS[0])],
    ] as [string, PublicKeyJson][]) {
      expect(pubkeyToAddress(pk), name).to.equal(undefined);
    }
  });

  it('takes the first signer info only', () => {
    const tx = { auth_info: { signer_infos: [{ public_key: multisig(2, COSMJS_KEYS.map((k) => single(SECP, k))) }, { public_key: single(SECP, COSMJS_KEYS[0]) }] } };
    expect(hex(signerFromTx(tx))).to.equal(COSMJS_MULTISIG_ADDRESS);
  });

  describe('a tx signed by a multisig, imported and served', function () {
    this.timeout(300_000);
    const work = mkdtempSync(join(tmpdir(), 'indexer-api-multisig-'));
    after(() => rmSync(work, { recursive: true, force: true }));

    it('is listed by is_signer=true for the multisig account, as rollytics lists it', async () => {
      const dir = join(work, 'dump');
      cpSync(await demoDump('wasm'), dir, { recursive: true });
      const file = join(dir, 'txs.ndjson');
      const lines = readFileSync(file, 'utf8').split('\n');
      const i = lines.findIndex((l) => l.includes('"public_key"') && !l.includes('"signer"'));
      const rec = JSON.parse(lines[i]) as { sequence: number; tx: { txhash: string; tx: { auth_info: { signer_infos: { public_key: unknown; mode_info: unknown }[] } } } };
      // the signer info of a real multisig-signed tx: the key, and mode_info.multi with a bit array
      rec.tx.tx.auth_info.signer_infos[0] = {
        ...rec.tx.tx.auth_info.signer_infos[0],
        public_key: multisig(2, COSMJS_KEYS.map((k) => single(SECP, k))),
        mode_info: { multi: { bitarray: { extra_bits_stored: 3, elems: 'wA==' }, mode_infos: [{ single: { mode: 'SIGN_MODE_LEGACY_AMINO_JSON' } }, { single: { mode: 'SIGN_MODE_LEGACY_AMINO_JSON' } }] } },
      };
      lines[i] = JSON.stringify(rec);
      writeFileSync(file, lines.join('\n'));
      const out = join(work, 'multisig.sqlite');
      await runImport({ fromDump: dir, out, force: true, quiet: true, json: false });
      const served = await serveSnapshot(out);
      try {
        const account = bech32Of(Buffer.from(COSMJS_MULTISIG_ADDRESS, 'hex'), 'init');
        for (const q of ['?is_signer=true', '']) {
          const res = await fetch(`${served.url}/indexer/tx/v1/txs/by_account/${account}${q}`);
          const body = await res.json() as { txs: { txhash: string }[]; pagination: { total: string } };
          expect(res.status).to.equal(200);
          expect(body.txs.map((t) => t.txhash), q).to.deep.equal([rec.tx.txhash.toUpperCase()]);
          expect(body.pagination.total).to.equal('1');
        }
      } finally {
        await served.close();
      }
    });
  });
});
