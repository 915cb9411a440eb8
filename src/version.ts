import { readTextAsset } from './assets';

export interface BuildInfo {
  version: string;
  commit: string;
}

/** Written by `make build` (build/build-info.json) and embedded in the single executable. */
export function buildInfo(): BuildInfo {
  try {
    return JSON.parse(readTextAsset('build/build-info.json')) as BuildInfo;
  } catch {
    return { version: 'dev', commit: 'unknown' };
  }
}
