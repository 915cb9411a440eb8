/**
 * Chain snapshots of one chain at increasing heights (generate + import of 150, 300, 450, 600
 * txs), built once per run, for publish / pull tests.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runGenerate } from '../../src/commands/generate';
import { runImport } from '../../src/import/run';
import { openSnapshot } from '../../src/snapshot/open';

export interface Version { file: string; height: number }

let tmpRoot: string | undefined;
export function pullTmp(): string {
  tmpRoot ??= mkdtempSync(join(tmpdir(), 'indexer-api-pull-test-'));
  return tmpRoot;
}

let built: Promise<Version[]> | undefined;
export function chainVersions(): Promise<Version[]> {
  built ??= (async () => {
    const out: Version[] = [];
    for (const txs of [150, 300, 450, 600]) {
      const dump = join(pullTmp(), `dump-${txs}`);
      const file = join(pullTmp(), `chain-${txs}.sqlite`);
      await runGenerate({ vm: 'move', out: dump, preset: 'demo', txs, seed: 7, gzip: false, force: true, quiet: true });
      await runImport({ fromDump: dump, out: file, force: true, quiet: true, json: false });
      const s = openSnapshot(file);
      out.push({ file, height: s.meta.height });
      s.close();
      rmSync(dump, { recursive: true, force: true });
    }
    return out;
  })();
  return built;
}

/** Deletes the versions' directory (when the test process exits; scripts call it). */
export function removePullTmp(): void {
  if (tmpRoot) rmSync(tmpRoot, { recursive: true, force: true });
  tmpRoot = undefined;
  built = undefined;
}

// built once per process (shared by its files, as the serial run shares them) and removed on exit
process.once('exit', removePullTmp);
