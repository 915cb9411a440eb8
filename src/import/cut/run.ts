/**
 * `import --accounts A,B (--from-api URL | --from-snapshot FILE) --out fixture.sqlite`: a small
 * snapshot of what those accounts touched (filter.ts), byte-for-byte the same for the same
 * inputs (so it can be committed and diffed, docs/ci.md).
 *
 * The source is always the HTTP API: a snapshot file is served in-process on a free port of
 * 127.0.0.1 for the crawl (`serveSnapshot`: the command passes the library's startServer,
 * src/commands/import.ts, as this layer may not import the serve stack), so both sources are cut
 * by the same code. The load is
 * the ordinary import (validation, derived counts, totals) into a temporary file; then the two
 * meta values that differ per run by design are fixed — `snapshot_id` becomes a digest of the
 * content, `created_at` the newest kept block's time — and `VACUUM INTO` writes the final file
 * with a canonical page layout, renamed over --out.
 */
import { createHash } from 'node:crypto';
import { existsSync, unlinkSync } from 'node:fs';
import { basename } from 'node:path';
import { canonicalAddress } from '../../lib/address';
import { checkInputFile } from '../../lib/paths';
import { syncAndRename, tempPathBeside } from '../../snapshot/store';
import { canonicalCopy } from '../../snapshot/writer';
import { tableDigests } from '../../snapshot/digest';
import { openSnapshotFile, SnapshotError } from '../../snapshot/open';
import { richListDenoms } from '../../snapshot/queries/richlist';
import { checkImportPaths, ensureOutDir, importWith, resolveImport, type ImportOptions, type ImportResult } from '../run';
import { cutSource } from './filter';

export interface CutOptions extends ImportOptions {
  /** the accounts whose history is cut (any address form the API accepts) */
  accounts: string[];
  /** NFT collections kept whole (every token, whoever owns it) */
  collections?: string[];
  /** a snapshot file as the source (instead of fromApi) */
  fromSnapshot?: string;
}

function canonicalList(what: string, list: string[], prefix: string): Set<string> {
  const out = new Set<string>();
  for (const a of list) {
    try {
      out.add(canonicalAddress(a, prefix).toString('hex'));
    } catch (e) {
      throw new Error(`${what}: ${JSON.stringify(a)} is not an address (${(e as Error).message})`);
    }
  }
  return out;
}

/** What the cut needs to know about a snapshot source before serving it. */
function snapshotFacts(file: string): { prefix: string; denoms: string[] } {
  let s;
  try {
    s = openSnapshotFile(file);
  } catch (e) {
    if (e instanceof SnapshotError) throw new Error(`--from-snapshot: ${e.message}`);
    throw e;
  }
  try {
    return { prefix: s.meta.prefix, denoms: richListDenoms(s.db) };
  } finally {
    s.close();
  }
}

/**
 * Fixes what differs between two runs over the same records, then writes `out` through
 * VACUUM INTO (a fresh file, pages in canonical order) and a rename.
 */
export function finalizeDeterministic(loaded: string, out: string): void {
  const digest = createHash('sha256');
  for (const [table, d] of tableDigests(loaded)) digest.update(`${table} ${d}\n`);
  const tmp = tempPathBeside(out);
  try {
    canonicalCopy(loaded, tmp, digest.digest('hex').slice(0, 32));
  } catch (e) {
    if (existsSync(tmp)) unlinkSync(tmp);
    throw e;
  }
  syncAndRename(tmp, out);
}

/** A snapshot file served on a free port of 127.0.0.1 while the cut crawls it. */
export type ServeSnapshot = (file: string) => Promise<{ url: string; close(): Promise<void> }>;

export async function cutFixture(o: CutOptions, serveSnapshot: ServeSnapshot): Promise<ImportResult> {
  const c = resolveImport(o);
  if ((o.fromSnapshot === undefined) === (o.fromApi === undefined)) throw new Error('a cut reads from one source: --from-api URL or --from-snapshot FILE');
  // the paths, before the source is served (src/lib/paths.ts)
  if (o.fromSnapshot !== undefined) checkInputFile('--from-snapshot', o.fromSnapshot, 'snapshot file');
  checkImportPaths(o);
  ensureOutDir(o.out);
  const facts = o.fromSnapshot !== undefined ? snapshotFacts(o.fromSnapshot) : undefined;
  const prefix = facts?.prefix ?? c.bech32Prefix;
  const accounts = canonicalList('--accounts', o.accounts, prefix);
  const collections = canonicalList('--collections', o.collections ?? [], prefix);
  const range = o.fromHeight !== undefined || o.toHeight !== undefined ? ` heights ${o.fromHeight ?? 1}..${o.toHeight ?? 'latest'}` : '';
  const label =
    `fixture cut of ${o.fromSnapshot !== undefined ? `snapshot ${basename(o.fromSnapshot)}` : `api ${o.fromApi}`}${range} for ${o.accounts.join(',')}` +
    (o.collections?.length ? ` and collections ${o.collections.join(',')}` : '');

  const server = o.fromSnapshot !== undefined ? await serveSnapshot(o.fromSnapshot) : undefined;
  const loaded = tempPathBeside(o.out);
  try {
    const result = await importWith({
      ...c,
      fromApi: server?.url ?? o.fromApi,
      fromSnapshot: undefined,
      bech32Prefix: prefix,
      out: loaded,
      force: true,
      resumeCrawl: false,
      denoms: o.denoms?.length ? o.denoms : (facts?.denoms ?? []),
      transform: (source) => cutSource(source, { accounts, collections, prefix, label }),
    });
    finalizeDeterministic(loaded, o.out);
    return { ...result, out: o.out, source: label };
  } finally {
    if (existsSync(loaded)) unlinkSync(loaded);
    await server?.close();
  }
}
