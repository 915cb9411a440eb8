#!/usr/bin/env node
'use strict';
/**
 * The longest functions of src/ (lines from the declaration to its closing brace, nested
 * functions counted inside their parent too), with the TypeScript compiler's parser:
 *
 *   node bench/longest-functions.js [--top 5] [--root DIR]
 *
 * Named functions, methods and constructors, and arrows or function expressions bound to a
 * name (`const f = () => …`, `{ f: () => … }`); an anonymous callback counts inside the function
 * around it. Prints `lines  file:line  name`.
 */
const fs = require('node:fs');
const path = require('node:path');
const ts = require('typescript');

const args = process.argv.slice(2);
const opt = (name, fallback) => { const i = args.indexOf(`--${name}`); return i < 0 ? fallback : args[i + 1]; };
const top = Number(opt('top', '5'));
const root = path.resolve(opt('root', path.join(__dirname, '..')));

function files(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return files(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

function nameOf(node) {
  if (node.name && ts.isIdentifier(node.name)) return node.name.text;
  const p = node.parent;
  if (p && ts.isVariableDeclaration(p) && ts.isIdentifier(p.name)) return p.name.text;
  if (p && ts.isPropertyAssignment(p) && ts.isIdentifier(p.name)) return p.name.text;
  return undefined;
}

const found = [];
for (const file of files(path.join(root, 'src'))) {
  const sf = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const visit = (node) => {
    if (ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isArrowFunction(node)
      || ts.isFunctionExpression(node) || ts.isConstructorDeclaration(node)) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = end - start + 1;
      const name = nameOf(node);
      if (name !== undefined) found.push({ lines, where: `${path.relative(root, file)}:${start + 1}`, name });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}
found.sort((a, b) => b.lines - a.lines);
for (const f of found.slice(0, top)) console.log(`${String(f.lines).padStart(5)}  ${f.where}  ${f.name}`);
