import { expect } from 'chai';
import { parseDuration } from '../../src/lib/duration';

describe('parseDuration (src/lib/duration.ts): the one duration grammar', () => {
  it('reads ms, s, m, h and a bare number of seconds', () => {
    expect(parseDuration('500ms', '--x')).to.equal(500);
    expect(parseDuration('2s', '--x')).to.equal(2_000);
    expect(parseDuration('2m', '--x')).to.equal(120_000);
    expect(parseDuration('1h', '--x')).to.equal(3_600_000);
    expect(parseDuration('30', '--x')).to.equal(30_000);
    expect(parseDuration(30, '--x')).to.equal(30_000);
  });

  it('takes decimals, rounded to whole milliseconds, and ignores blanks around the parts', () => {
    expect(parseDuration('1.5', '--x')).to.equal(1_500);
    expect(parseDuration('0.25s', '--x')).to.equal(250);
    expect(parseDuration('1.4ms', '--x')).to.equal(1);
    expect(parseDuration(' 2 m ', '--x')).to.equal(120_000);
  });

  it('refuses 0 unless asked to accept it', () => {
    expect(() => parseDuration('0s', '--pull-interval')).to.throw('--pull-interval must be a duration like 2s, 500ms, 2m or 1h (more than 0), got "0s"');
    expect(parseDuration('0', '--interval', { allowZero: true })).to.equal(0);
  });

  for (const bad of ['', 'fast', '-1s', '2 d', '1e3', 's', '2ss', '1.', '.5s', '2s5']) {
    it(`names the option and the bad value: ${JSON.stringify(bad)}`, () => {
      expect(() => parseDuration(bad, '--interval', { allowZero: true })).to.throw(`--interval must be a duration like 2s, 500ms, 2m or 1h, got ${JSON.stringify(bad)}`);
    });
  }
});
