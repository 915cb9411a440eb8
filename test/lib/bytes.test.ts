import { expect } from 'chai';
import { formatByteSize, parseByteSize } from '../../src/lib/bytes';
import { parseByteSizeOption } from '../../src/settings/numbers';

describe('sizes with units (--cache-bytes, --cache-validator-bytes)', () => {
  it('reads a whole number of bytes, or a number with a binary unit in any case', () => {
    const cases: [string, number][] = [
      ['0', 0], ['1073741824', 2 ** 30], ['1g', 2 ** 30], ['1G', 2 ** 30], ['1GiB', 2 ** 30], ['1gb', 2 ** 30], ['64m', 64 * 2 ** 20],
      ['64 MiB', 64 * 2 ** 20], ['512k', 512 * 1024], ['512KiB', 512 * 1024], ['1.5g', 1.5 * 2 ** 30], ['100b', 100], ['2t', 2 * 2 ** 40], [' 8m ', 8 * 2 ** 20],
    ];
    for (const [text, bytes] of cases) expect(parseByteSize(text), text).to.equal(bytes);
  });

  it('refuses what is not a size, and a size below the option\'s least, naming the option and the text', () => {
    for (const text of ['', 'abc', '-1', '1q', '1e3', 'g', '1..5m', '64 mega']) expect(parseByteSize(text), text).to.equal(undefined);
    expect(() => parseByteSizeOption('--cache-bytes', '-1', 0)).to.throw('--cache-bytes must be a size of at least 0 bytes: a whole number of bytes, or with a unit as in 64m, 1g, 512KiB (binary: 1k = 1024), got "-1"');
    expect(() => parseByteSizeOption('--cache-bytes', '10', 1024)).to.throw('at least 1024 bytes');
    expect(parseByteSizeOption('--cache-bytes', ['1m', '2m'], 0), 'the last one wins').to.equal(2 * 2 ** 20);
  });

  it('shows a default with the largest unit that divides it', () => {
    expect(formatByteSize(64 * 2 ** 20)).to.equal('64 MiB');
    expect(formatByteSize(2 ** 30)).to.equal('1 GiB');
    expect(formatByteSize(1536)).to.equal('1536 bytes');
  });
});
