import { expect } from 'chai';
import { rawMembers } from '../../src/lib/raw-json';
import { members } from '../../src/sources/api/answers';
import { byteList } from '../../src/sources/api/scan';

/** byteList (src/sources/api/scan.ts) reads a list page as members + rawMembers (./answers.ts) read its text. */
describe('a list page read from its bytes (src/sources/api/scan.ts byteList)', () => {
  const read = (text: string, fields: string[]): { texts: string[]; fields: (string | undefined)[][]; nextKey: string | null; total: number | undefined } => {
    const body = Buffer.from(text, 'utf8');
    const l = byteList('u', body, 'txs', fields);
    return { texts: l.items.map((it) => body.toString('utf8', it.start, it.end)), fields: l.items.map((it) => it.fields), nextKey: l.nextKey, total: l.total };
  };

  it('each element as the text reads it, and the members asked for, through strings holding braces, quotes and escapes', () => {
    const page =
      ' { "pagination" : {"next_key":"a2V5","total":"2"} ,\n "txs" : [ {"txhash":"AB","height":"7","tx":{"memo":"}]\\"{[,\\\\"},"timestamp":"2025-01-01T00:00:00.5Z"} ,' +
      '\n\t{"height" : 8 , "txhash":"C\\u0044", "ünï":"ç", "events":[[],{}]}, "x", 12, null ] }';
    const r = read(page, ['height', 'txhash', 'timestamp']);
    expect(r.texts).to.deep.equal(members('u', page, 'txs').items);
    expect(r.fields).to.deep.equal(
      members('u', page, 'txs').items.map((t) => {
        const m = rawMembers(t);
        return t.startsWith('{') ? ['height', 'txhash', 'timestamp'].map((k) => m.get(k)) : [undefined, undefined, undefined];
      }),
    );
    expect(r.fields[1]).to.deep.equal(['8', '"C\\u0044"', undefined]);
    expect(r.nextKey).to.equal('a2V5');
    expect(r.total).to.equal(2);
  });

  it('a key written with escapes is the key it stands for; a later duplicate wins', () => {
    const r = read('{"txs":[{"h\\u0065ight":"1","height":"2","txhash":"A"}],"pagination":{}}', ['height', 'txhash']);
    expect(r.fields).to.deep.equal([['"2"', '"A"']]);
    expect(r.nextKey).to.equal(null);
    expect(r.total).to.equal(undefined);
  });

  it('an empty list; a body without the list or its pagination is refused naming what was expected', () => {
    expect(read('{"txs":[],"pagination":{"next_key":null}}', ['height']).texts).to.deep.equal([]);
    expect(() => read('{"txs":[]}', [])).to.throw(/expected \{"txs": \[\.\.\.\], "pagination": \{\.\.\.\}\}/);
    expect(() => read('[1]', [])).to.throw(/expected/);
  });
});
