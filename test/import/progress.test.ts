import { expect } from 'chai';
import { StageProgress } from '../../src/records/progress';
import { ProgressLines } from '../../src/import/progress';
import { createLogger } from '../../src/lib/log';

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

  it('a resumed crawl\'s stage: the rows carried over count in the percentage, the ETA comes from this run\'s rate', async () => {
    const out = new FakeTty();
    const p = new StageProgress(true, () => undefined, out as unknown as NodeJS.WriteStream);
    p.stage('crawl txs');
    p.expect?.(1000, 600);
    p.records(50);
    await new Promise((r) => setTimeout(r, 220));
    p.records(50);
    const frames = out.text.split('\r\x1b[K').filter((f) => f !== '');
    // 600 carried + 100 read of 1000: 70 %, and 300 left at this run's rate (≈ 100 rows in ≈ 0.22 s): about 0.7 s
    const last = frames.at(-1) as string;
    expect(last).to.match(/crawl txs +100 rows .* 70\.0% +ETA ([\d.]+) s +\(600 carried over\)/);
    expect(Number(/ETA ([\d.]+) s/.exec(last)?.[1])).to.be.within(0.3, 3);
    p.done();
  });

  it('off a terminal a resumed stage\'s lines carry carried_over, percent and eta_s', async () => {
    const lines: string[] = [];
    const p = new ProgressLines(createLogger('info', (t) => { lines.push(t); }, {}, 'json'), 50, () => undefined);
    p.stage('crawl blocks');
    p.expect?.(400, 300);
    p.records(20);
    await new Promise((r) => setTimeout(r, 130));
    p.done();
    const fields = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'import: crawl blocks');
    expect(fields.length, lines.join('')).to.be.greaterThan(0);
    expect(fields[0]).to.include({ rows: 20, carried_over: 300, percent: 80 });
    expect(fields[0].eta_s).to.be.a('number');
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
