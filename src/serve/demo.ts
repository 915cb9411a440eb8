import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { isSingleExecutable, materialize, readBinaryAsset, ROOT } from '../assets';
import { VM_TYPES, VmType } from '../lib/vm';

export const DEMO_VMS: readonly VmType[] = VM_TYPES;

function demoAsset(vm: VmType): string {
  return `fixtures/demo/${vm}.sqlite`;
}

/** Path of the bundled demo snapshot for `vm`, or an error telling how to build it. */
export function demoSnapshotPath(vm: VmType): string {
  if (isSingleExecutable()) return materialize(`demo-${vm}.sqlite`, readBinaryAsset(demoAsset(vm)));
  const file = join(ROOT, demoAsset(vm));
  if (!existsSync(file)) throw new Error(`the demo snapshot ${demoAsset(vm)} is not built yet: run \`make fixtures\` (or pass --db FILE)`);
  return file;
}
