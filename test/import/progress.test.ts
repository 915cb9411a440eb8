import { expect } from 'chai';
import { StageProgress } from '../../src/records/progress';

class FakeTty {
  text = '';
  write(s: string): boolean { this.text += s; return true; }
}

describe('import progress (TTY)', () => {
  it('one line per stage: rows, rows/s, elapsed, and percent + ETA when the total is known', async () => {
    const out = new FakeTty();
    const p = new StageProgress(true, (s) => (s === 'txs' ? 1000 : undefined), out as unknown as NodeJS.WriteStream);
    p.stage('blocks');
    p.records(10);
    p.stage('txs');
    p.records(250);
    await new Promise((r) => setTimeout(r, 220));
    p.records(250);
    p.done();
    const frames = out.text.split('\r\x1b[K').filter((f) => f !== '');
    const blocks = frames.filter((f) => f.includes('blocks'));
    const txs = frames.filter((f) => f.includes('txs'));
    expect(blocks.at(-1)).to.match(/blocks +10 rows +[\d.]+[kM]? rows\/s +[\d.]+ s\n$/);
    expect(txs.some((f) => /txs +500 rows +[\d.]+[kM]? rows\/s +[\d.]+ s +50\.0% +ETA [\d.]+ s/.test(f)), txs.join('|')).to.equal(true);
    // The finished line has no ETA and ends the line.
    expect(txs.at(-1)).to.match(/txs +500 rows .* s\n$/);
    expect(txs.at(-1)).not.to.contain('ETA');
    expect(p.stages.map((s) => [s.name, s.rows])).to.deep.equal([['blocks', 10], ['txs', 500]]);
  });

  it('prints nothing when disabled (not a TTY, --quiet or --json) but still records the stages', () => {
    const out = new FakeTty();
    const p = new StageProgress(false, () => 10, out as unknown as NodeJS.WriteStream);
    p.stage('txs');
    p.records(5);
    p.done();
    expect(out.text).to.equal('');
    expect(p.stages).to.have.length(1);
  });
});
