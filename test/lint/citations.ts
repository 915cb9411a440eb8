import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * The code cites the documents its rules come from as `docs/<file>.md#<heading>`; this finds
 * every such citation in the .ts files under `dirs` and reports those whose file or heading
 * does not exist in `root`/docs, and any citation of a document that is not in the repository
 * (the old `reference §…`, `API-CONTRACT`, `DESIGN.md` forms).
 */
export function brokenCitations(root: string, dirs: string[]): string[] {
  const problems: string[] = [];
  const headings = new Map<string, Set<string> | null>();
  for (const file of dirs.flatMap((d) => tsFiles(join(root, d)))) {
    const where = relative(root, file);
    readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
      const at = `${where}:${i + 1}`;
      for (const stale of STALE) {
        const m = stale.exec(line);
        if (m) {
          problems.push(`${at}: cites "${m[0]}", a document outside the repository`);
          break;
        }
      }
      for (const m of line.matchAll(CITATION)) {
        const [cited, doc, anchor] = m;
        let known = headings.get(doc);
        if (known === undefined) {
          const path = join(root, 'docs', doc);
          known = existsSync(path) ? headingSlugs(readFileSync(path, 'utf8')) : null;
          headings.set(doc, known);
        }
        if (known === null) problems.push(`${at}: ${cited}: docs/${doc} does not exist`);
        else if (anchor !== undefined && !known.has(anchor)) problems.push(`${at}: ${cited}: no heading #${anchor} in docs/${doc}`);
      }
    });
  }
  return problems;
}

const CITATION = /docs\/([A-Za-z0-9_.-]+\.md)(?:#([A-Za-z0-9_-]+))?/g;
const STALE = [/reference §[0-9.]*/, /\bAPI-CONTRACT\b/, /\bDESIGN\.md\b/, /§[0-9]/];

/** GitHub's heading anchors: lower-case, punctuation dropped, spaces to `-`. */
export function headingSlugs(markdown: string): Set<string> {
  const slugs = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const m = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = m[1].toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    let slug = base;
    for (let n = 1; slugs.has(slug); n++) slug = `${base}-${n}`;
    slugs.add(slug);
  }
  return slugs;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return tsFiles(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/**
 * The source paths a document names (`src/serve/app.ts`, `src/http/`; patterns such as
 * `src/routes/<resource>/router.ts` or `src/http/*.ts` are skipped) that do not exist in `root`:
 * docs/architecture.md is where a newcomer looks things up, so a file moved without it is a bug.
 */
export function missingSourcePaths(root: string, doc: string): string[] {
  const text = readFileSync(join(root, doc), 'utf8');
  const cited = new Set([...text.matchAll(/\bsrc\/[A-Za-z0-9_./<>*-]*[A-Za-z0-9_/>*-]/g)].map((m) => m[0]));
  return [...cited].filter((p) => !/[<>*]/.test(p) && !existsSync(join(root, p))).map((p) => `${doc}: ${p} does not exist`);
}
