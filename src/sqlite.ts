import Database from 'better-sqlite3';
import { isSingleExecutable, materialize, readBinaryAsset } from './assets';

/** The addon as embedded in the single executable (see scripts/build-binary.js). */
export const NATIVE_ADDON_ASSET = 'native/better_sqlite3.node';

let nativeBinding: string | undefined;

/**
 * Opens a SQLite file. Inside the single executable the better-sqlite3 addon is written once to
 * the private content-addressed cache and loaded from there.
 */
export function openDatabase(file: string, options: Database.Options = {}): Database.Database {
  if (isSingleExecutable()) {
    nativeBinding ??= materialize('better_sqlite3.node', readBinaryAsset(NATIVE_ADDON_ASSET));
    return new Database(file, { ...options, nativeBinding });
  }
  return new Database(file, options);
}
