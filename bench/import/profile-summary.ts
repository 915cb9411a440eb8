/**
 * Summarizes a V8 .cpuprofile (from `node --cpu-prof`): top functions by self time and by
 * inclusive time (time with the function anywhere on the stack).
 *
 *   node build/bench/import/profile-summary.js PROFILE.cpuprofile [TOP]
 */
import { readFileSync } from 'node:fs';

interface Node { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
interface Profile { nodes: Node[]; samples: number[]; timeDeltas: number[] }

export function summarize(file: string, top = 30): string {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const name = (n: Node): string => {
    const f = n.callFrame;
    const where = f.url ? `${f.url.replace(/^file:\/\//, '').split('/').slice(-3).join('/')}:${f.lineNumber + 1}` : '';
    return `${f.functionName || '(anonymous)'} ${where}`.trim();
  };
  const self = new Map<string, number>();
  const incl = new Map<string, number>();
  let total = 0;
  p.samples.forEach((id, i) => {
    const dt = p.timeDeltas[i] ?? 0;
    total += dt;
    const n = byId.get(id);
    if (!n) return;
    self.set(name(n), (self.get(name(n)) ?? 0) + dt);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const k = name(byId.get(cur) as Node);
      if (seen.has(k)) continue;
      seen.add(k);
      incl.set(k, (incl.get(k) ?? 0) + dt);
    }
  });
  const fmt = (m: Map<string, number>): string => [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)
    .map(([k, v]) => `${(v / 1000).toFixed(0).padStart(8)} ms ${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`).join('\n');
  return `total ${(total / 1000).toFixed(0)} ms\n\nself time:\n${fmt(self)}\n\ninclusive time:\n${fmt(incl)}\n`;
}

if (require.main === module) {
  const [file, top] = process.argv.slice(2);
  if (!file) {
    process.stderr.write('usage: profile-summary.js PROFILE.cpuprofile [TOP]\n');
    process.exit(2);
  }
  process.stdout.write(summarize(file, top ? Number(top) : 30));
}
