/**
 * The digest of a validator read from its ETag (src/cache/key-table.ts parseEtag): decoded in
 * place, exactly the forms etagOf and versionEtag write, anything else refused.
 */
import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import { DIGEST_BYTES, etagText, parseEtag } from '../../src/cache/key-table';

describe('parseEtag: an ETag\'s digest, decoded in place', () => {
  it('reads back every digest etagText writes, with and without -gz', () => {
    const out = new Uint8Array(DIGEST_BYTES);
    for (let i = 0; i < 2_000; i++) {
      const d = i === 0 ? new Uint8Array(DIGEST_BYTES) : i === 1 ? new Uint8Array(DIGEST_BYTES).fill(255) : randomBytes(DIGEST_BYTES);
      for (const gz of [false, true]) {
        out.fill(0);
        expect(parseEtag(etagText(d, 0, gz), out)).to.deep.equal({ gz });
        expect(Buffer.from(out).equals(Buffer.from(d))).to.equal(true);
      }
    }
  });

  it('reads a SHA-1 in base64url as the ETag of an answer is written', () => {
    const d = createHash('sha1').update('an answer').digest();
    const out = new Uint8Array(DIGEST_BYTES);
    expect(parseEtag(`"${d.toString('base64url')}"`, out)).to.deep.equal({ gz: false });
    expect(Buffer.from(out).equals(d)).to.equal(true);
  });

  it('refuses any other form', () => {
    const good = etagText(randomBytes(DIGEST_BYTES), 0, false);
    const body = good.slice(1, -1);
    const out = new Uint8Array(DIGEST_BYTES);
    const bad = [
      body, `W/${good}`, `"${body.slice(1)}"`, `"${body}A"`, `"${body.slice(0, 26)}+"`, `"${body.slice(0, 26)}/"`,
      `"${body.slice(0, 10)}=${body.slice(11)}"`, `"${body.slice(0, 10)}é${body.slice(11)}"`, `"${body}-br"`, `"${body}-gz`, '*', '',
    ];
    // the last character's 2 bits beyond the digest must be 0, as base64url of 20 bytes writes it
    const last = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const v = last.indexOf(body[26]);
    bad.push(`"${body.slice(0, 26)}${last[v | 1]}"`);
    for (const e of bad) expect(parseEtag(e, out), e).to.equal(undefined);
  });
});
