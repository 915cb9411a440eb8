/**
 * Sizes as a person types them (`64m`, `1g`, `1.5GiB`, `512KiB`, `1073741824`): a number and an
 * optional unit — b; k, m, g, t with an optional `i` and `b`, any case — where every unit is
 * binary (1k = 1024 bytes, 1g = 2^30), as memory budgets are counted. Returns whole bytes
 * (a fraction of a unit rounds down).
 */
const UNITS: Record<string, number> = { '': 1, b: 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40 };
const SIZE = /^(\d+(?:\.\d+)?|\.\d+)\s*([kmgt]?)(?:i?b)?$/i;

export function parseByteSize(text: string): number | undefined {
  const m = SIZE.exec(text.trim());
  if (!m) return undefined;
  const n = Math.floor(Number(m[1]) * UNITS[m[2].toLowerCase()]);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** `67108864` → `64 MiB`: the largest binary unit that divides it, else bytes. */
export function formatByteSize(n: number): string {
  for (const [unit, size] of [
    ['TiB', 2 ** 40],
    ['GiB', 2 ** 30],
    ['MiB', 2 ** 20],
    ['KiB', 2 ** 10],
  ] as const) {
    if (n >= size && n % size === 0) return `${n / size} ${unit}`;
  }
  return `${n} bytes`;
}
