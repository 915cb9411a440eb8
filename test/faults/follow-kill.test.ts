import { expect } from 'chai';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSnapshot } from '../../src/snapshot/open';
import { demoCuts, differences, growingSource, sleep, startFollow } from '../follow/helpers';

/** kill -9 points (FAULT_POINTS; small for `make test`, 50 in the fault suite) */
const POINTS = Number(process.env.FAULT_POINTS ?? 4);

function heightOf(file: string): number {
  const s = openSnapshot(file);
  try { return s.meta.height; } finally { s.close(); }
}

describe('follow under kill -9', function () {
  this.timeout(120_000 + POINTS * 20_000);

  it(`killed at ${POINTS} random moments, each restart resumes from the last committed batch with no gap and no duplicate, ending equal to a fresh import`, async () => {
    const { full, at } = await demoCuts();
    const tmp = mkdtempSync(join(tmpdir(), 'indexer-api-follow-kill-'));
    const db = join(tmp, 'chain.sqlite');
    copyFileSync(at.get(150) as string, db);
    const src = await growingSource(full);
    try {
      let last = heightOf(db);
      let kills = 0;
      for (let i = 0; i < POINTS && last < 400; i++) {
        const f = startFollow(['--db', db, '--from-api', src.url, '--interval', '50ms', '--batch-blocks', String(5 + (i % 4) * 5)]);
        await f.until('start', /following /);
        await sleep(Math.floor(Math.random() * 1500));
        f.proc.kill('SIGKILL');
        const exit = await f.exited;
        if (exit.signal === 'SIGKILL') kills++;
        // Whatever the moment, the file opens and holds a whole number of batches, never less than before.
        const h = heightOf(db);
        expect(h, `after kill ${i + 1}`).to.be.at.least(last);
        last = h;
      }
      expect(kills).to.be.at.least(Math.min(POINTS, 1));
      const f = startFollow(['--db', db, '--from-api', src.url, '--interval', '50ms']);
      await f.until('caught up', /0 behind|from height 400 /);
      expect(await f.stop('SIGTERM')).to.deep.equal({ code: 0, signal: null });
      expect(differences(db, full)).to.deep.equal([]);
    } finally {
      await src.close();
    }
  });
});
