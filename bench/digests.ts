/**
 * What the NFT and rich-list tag digests cost a writer (src/snapshot/tag-digests.ts,
 * bench/README.md "Digests of the NFT and rich-list tags"): on FILE (a snapshot of schema 3 — it
 * is written: give it a copy), every digest computed in one transaction as `follow` or
 * `import --base` does on their first write to it, and as an import's "digests" step does at its
 * end; then the digest of one tag written again (what a batch pays for each tag it names), for the
 * largest owner, the largest collection, the list of collections and each rich list, the median
 * of `--runs`, in µs a row.
 *
 *   node build/bench/digests.js --db COPY.sqlite [--runs 5]
 */
import { loadavg } from 'node:os';
import { openStore } from '../src/snapshot/store';
import { ensureDigests, writeDigests } from '../src/snapshot/tag-digests';

function opt(argv: string[], name: string, dflt: string): string {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : dflt;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function main(argv: string[]): void {
  const file = opt(argv, 'db', '');
  const runs = Number(opt(argv, 'runs', '5'));
  const db = openStore(file, 'inPlace');
  const out: string[] = [`${file}; load ${loadavg()[0].toFixed(2)}`];
  try {
    db.exec('BEGIN IMMEDIATE');
    const t0 = process.hrtime.bigint();
    const upgraded = ensureDigests(db);
    const allMs = Number(process.hrtime.bigint() - t0) / 1e6;
    db.exec('COMMIT');
    const kinds = db.prepare("SELECT substr(tag, 1, 2) AS k, count(*) AS n, sum(digest IS NULL) AS over FROM tag_digests GROUP BY 1").all() as { k: string; n: number; over: number }[];
    out.push(`every digest ${upgraded ? 'computed' : '(the file had them: not timed)'}: ${allMs.toFixed(0)} ms — ${kinds.map((r) => `${r.k} ${r.n}${r.over ? ` (${r.over} over the cap)` : ''}`).join(', ')}`);
    const q = (sql: string): unknown => db.prepare(sql).pluck().get();
    const owner = q('SELECT a.addr FROM nfts n JOIN accounts a ON a.id = n.owner_id GROUP BY n.owner_id ORDER BY count(*) DESC LIMIT 1') as Buffer | undefined;
    const ownerRows = q('SELECT max(nft_count) FROM accounts') as number;
    const coll = q('SELECT collection_addr FROM nfts GROUP BY collection_addr ORDER BY count(*) DESC LIMIT 1') as Buffer | undefined;
    const collRows = coll === undefined ? 0 : (q(`SELECT (SELECT count(*) FROM nfts WHERE collection_addr = x'${coll.toString('hex')}') + (SELECT count(*) FROM nft_txs WHERE collection_addr = x'${coll.toString('hex')}')`) as number);
    const tags: [string, number][] = [];
    if (owner) tags.push([`o:${owner.toString('hex')}`, ownerRows]);
    if (coll) tags.push([`c:${coll.toString('hex')}`, collRows]);
    tags.push(['cl', q('SELECT count(*) FROM collections') as number]);
    for (const r of db.prepare('SELECT denom, holder_count FROM richlist_denoms').raw().all() as [string, number][]) tags.push([`r:${r[0]}`, r[1]]);
    out.push('', '| tag | rows | ms a write (median of ' + runs + ') | µs a row |', '|---|---:|---:|---:|');
    for (const [tag, rows] of tags) {
      const ms: number[] = [];
      for (let i = 0; i < runs; i++) {
        db.exec('BEGIN IMMEDIATE');
        const t = process.hrtime.bigint();
        writeDigests(db, [tag]);
        ms.push(Number(process.hrtime.bigint() - t) / 1e6);
        db.exec('ROLLBACK');
      }
      const m = median(ms);
      out.push(`| ${tag.length > 20 ? `${tag.slice(0, 18)}…` : tag} | ${rows} | ${m.toFixed(2)} | ${rows > 0 ? ((m * 1000) / rows).toFixed(2) : '–'} |`);
    }
  } finally {
    db.close();
  }
  process.stdout.write(`${out.join('\n')}\n`);
}

main(process.argv.slice(2));
