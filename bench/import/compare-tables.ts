/**
 * Checks that two snapshots hold the same data: hashes every table's rows in the order of all their columns
 * (meta without snapshot_id and created_at, which differ by design) and prints the tables
 * that differ. Used to confirm that an import change keeps its output byte-identical.
 *
 *   node build/bench/import/compare-tables.js A.sqlite B.sqlite
 *
 *   node build/bench/import/compare-tables.js --logical A.sqlite B.sqlite
 *
 * --logical compares content rather than ids: account ids (which depend on the order accounts
 * were first seen, e.g. an incremental update vs a full import) are replaced by the account's
 * address, and the accounts table is compared by address (src/snapshot/digest.ts).
 *
 * Exit status 0 when every table matches, 1 otherwise.
 */
import { tableDiff } from '../../src/snapshot/digest';

function main(): void {
  const logical = process.argv.includes('--logical');
  const [a, b] = process.argv.slice(2).filter((x) => x !== '--logical');
  if (!a || !b) {
    process.stderr.write('usage: compare-tables.js [--logical] A.sqlite B.sqlite\n');
    process.exit(2);
  }
  const diff = tableDiff(a, b, logical);
  for (const d of diff) process.stdout.write(d + '\n');
  process.stdout.write(diff.length === 0 ? 'identical\n' : 'DIFFERENT\n');
  process.exit(diff.length === 0 ? 0 : 1);
}

main();
