/**
 * SQL has owners (docs/architecture.md "Layers"): statements against a snapshot live in
 * src/snapshot/ (its store, its queries, its writer), a source's SQL against its own database
 * (rollytics' PostgreSQL, a crawl's staging file) in src/sources/. Anywhere else a SQL string,
 * a `.prepare(` or a `.pragma(` is refused: the rest of the program asks those modules. And only
 * the snapshot store opens a SQLite file (`openDatabase(` / `new Database(`).
 */
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..', '..'); // compiled into build/test/lint/

/** Folders (and files) whose modules may hold SQL, with why. */
const OWNERS: [RegExp, string][] = [
  [/^src\/snapshot\//, 'the snapshot: its store, queries and writer'],
  [/^src\/sources\//, "a source's own database: rollytics' PostgreSQL, a crawl's staging file"],
  [/^src\/sqlite\.ts$/, 'the SQLite opener the store calls (the single executable loads the addon there)'],
];

/** A string literal opening with a SQL statement's first word, a prepared statement, a pragma. */
const SQL = /(['"`]\s*(?:SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|BEGIN|COMMIT|ROLLBACK|ATTACH|DETACH|VACUUM|PRAGMA|REPLACE|WITH)\s)|\.prepare\(|\.pragma\(/;

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

/** Opening a SQLite file: the store (src/snapshot/store.ts) calls the addon loader, nothing else does. */
const OPEN = /\bopenDatabase\(|new Database\(/;
const OPENERS = /^src\/(snapshot\/store|sqlite)\.ts$/;

/** `file:line: text` of every SQLite open outside the store under `root`/src. */
function opensOutsideStore(root: string): string[] {
  const out: string[] = [];
  for (const f of files(join(root, 'src'))) {
    const rel = relative(root, f).split('\\').join('/');
    if (OPENERS.test(rel)) continue;
    readFileSync(f, 'utf8').split('\n').forEach((line, i) => {
      if (!/^\s*(\*|\/\/|\/\*)/.test(line) && OPEN.test(line)) out.push(`${rel}:${i + 1}: ${line.trim()}`);
    });
  }
  return out;
}

/** `file:line: text` of every SQL outside its owners under `root`/src. */
function violations(root: string): string[] {
  const out: string[] = [];
  for (const f of files(join(root, 'src'))) {
    const rel = relative(root, f).split('\\').join('/');
    if (OWNERS.some(([re]) => re.test(rel))) continue;
    readFileSync(f, 'utf8').split('\n').forEach((line, i) => {
      if (/^\s*(\*|\/\/|\/\*)/.test(line)) return; // a comment may name a statement
      if (SQL.test(line)) out.push(`${rel}:${i + 1}: ${line.trim()}`);
    });
  }
  return out;
}

describe('SQL and pragmas only in their owners\' folders', () => {
  it('src/ holds none outside src/snapshot/ and src/sources/', () => {
    expect(violations(ROOT)).to.deep.equal([]);
  });

  it('only the store (src/snapshot/store.ts) opens a SQLite file', () => {
    expect(opensOutsideStore(ROOT)).to.deep.equal([]);
  });

  it('finds a statement, a prepare, a pragma and an open planted outside their owners', () => {
    const dir = mkdtempSync(join(tmpdir(), 'indexer-api-sql-'));
    try {
      mkdirSync(join(dir, 'src', 'follow'), { recursive: true });
      mkdirSync(join(dir, 'src', 'snapshot'), { recursive: true });
      writeFileSync(join(dir, 'src', 'follow', 'planted.ts'), [
        "db.exec('CREATE INDEX x ON t (a)');",
        'const q = db.prepare(text);',
        "db.pragma('journal_mode = WAL');",
        'const re = /a/.exec(s); // a RegExp, not SQL',
        ' * a comment naming VACUUM INTO',
        "const db = openDatabase('x.sqlite');",
      ].join('\n'));
      writeFileSync(join(dir, 'src', 'snapshot', 'fine.ts'), "db.exec('DROP TABLE t');\n");
      expect(violations(dir)).to.deep.equal([
        "src/follow/planted.ts:1: db.exec('CREATE INDEX x ON t (a)');",
        'src/follow/planted.ts:2: const q = db.prepare(text);',
        "src/follow/planted.ts:3: db.pragma('journal_mode = WAL');",
      ]);
      expect(opensOutsideStore(dir)).to.deep.equal(["src/follow/planted.ts:6: const db = openDatabase('x.sqlite');"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
