/**
 * Checks that two snapshots hold the same data: hashes every table's rows in the order of all their columns
 * (meta without snapshot_id and created_at, which differ by design) and prints the tables
 * that differ. Used to confirm that an import change keeps its output byte-identical.
 *
 *   node build/bench/import/compare-tables.js A.sqlite B.sqlite
 *
 * Exit status 0 when every table matches, 1 otherwise.
 */
import { tableDigests } from '../../src/snapshot/digest';

function main(): void {
  const [a, b] = process.argv.slice(2);
  if (!a || !b) {
    process.stderr.write('usage: compare-tables.js A.sqlite B.sqlite\n');
    process.exit(2);
  }
  const ha = tableDigests(a);
  const hb = tableDigests(b);
  let same = true;
  for (const t of new Set([...ha.keys(), ...hb.keys()])) {
    if (ha.get(t) !== hb.get(t)) {
      same = false;
      process.stdout.write(`${t}: ${ha.get(t) ?? '(missing)'} vs ${hb.get(t) ?? '(missing)'}\n`);
    }
  }
  process.stdout.write(same ? `identical: ${[...ha.keys()].length} tables\n` : 'DIFFERENT\n');
  process.exit(same ? 0 : 1);
}

main();
