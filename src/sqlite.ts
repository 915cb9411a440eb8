import Database from 'better-sqlite3';
import { isSingleExecutable, materialize, readBinaryAsset } from './assets';

/** The addon as embedded in the single executable (see scripts/build-binary.js). */
const NATIVE_ADDON_ASSET = 'native/better_sqlite3.node';

let nativeBinding: string | undefined;

/**
 * Opens a SQLite file. Inside the single executable the better-sqlite3 addon is written once to
 * the private content-addressed cache and loaded from there.
 */
export function openDatabase(file: string, options: Database.Options = {}): Database.Database {
  if (isSingleExecutable()) {
    nativeBinding ??= materialize('better_sqlite3.node', readBinaryAsset(NATIVE_ADDON_ASSET));
    try {
      return new Database(file, { ...options, nativeBinding });
    } catch (e) {
      // dlopen() maps the addon executable: a cache on a noexec mount (e.g. a hardened tmpfs
      // volume) gives only "failed to map segment from shared object".
      const msg = (e as Error).message;
      if (msg.includes(nativeBinding) && msg.includes('failed to map segment')) {
        throw new Error(
          `cannot load the SQLite addon ${nativeBinding} (failed to map segment from shared object): is its cache directory on a noexec mount? ` +
            'set XDG_CACHE_HOME to a writable directory on a filesystem that allows executing files (docs/binary.md "The cache directory")',
        );
      }
      throw e;
    }
  }
  return new Database(file, options);
}
