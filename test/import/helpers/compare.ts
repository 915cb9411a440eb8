/**
 * Compares two servers route by route: every list route is walked page by page (following
 * next_key to the end) and every item route is asked for every item, with the paths taken from
 * the snapshots' own data (both sides, so an extra row on either side is noticed).
 */
import type { Snapshot } from '../../../src/snapshot/open';
import { toBech32, toHex0x } from '../../../src/lib/address';

export interface Answer { status: number; type: string; body: string }

async function get(base: string, path: string): Promise<Answer> {
  const res = await fetch(base + path);
  return { status: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
}

export interface CompareOptions {
  /** paths whose answers may differ (documented differences) */
  skip?: (path: string) => boolean;
  /** page size for the walks besides the default (100) */
  limits?: number[];
  concurrency?: number;
}

export interface CompareResult {
  requests: number;
  pages: number;
  mismatches: { path: string; a: Answer; b: Answer }[];
}

/** Every route we serve, with the parameters found in the snapshots. */
export function routePlan(snaps: Snapshot[], limits: number[]): { walks: string[]; singles: string[] } {
  const walks = new Set<string>();
  const singles = new Set<string>();
  const withLimits = (path: string): void => {
    const sep = path.includes('?') ? '&' : '?';
    walks.add(path);
    walks.add(`${path}${sep}pagination.reverse=false`);
    for (const l of limits) walks.add(`${path}${sep}pagination.limit=${l}`);
  };
  singles.add('/status');
  singles.add('/indexer/block/v1/avg_blocktime');
  singles.add('/indexer/block/v1/blocks/999999999');
  singles.add(`/indexer/tx/v1/txs/${'AB'.repeat(32)}`);
  // 404 on Move / Wasm, 404 as unknown hashes on EVM
  singles.add(`/indexer/tx/v1/evm-txs/0x${'ab'.repeat(32)}`);
  singles.add(`/indexer/tx/v1/evm-internal-txs/0x${'ab'.repeat(32)}`);
  withLimits('/indexer/block/v1/blocks');
  withLimits('/indexer/tx/v1/txs');
  withLimits('/indexer/nft/v1/collections');
  for (const s of snaps) {
    const db = s.db;
    const prefix = s.meta.prefix;
    for (const h of db.prepare('SELECT height FROM blocks').pluck().all() as number[]) {
      singles.add(`/indexer/block/v1/blocks/${h}`);
      walks.add(`/indexer/tx/v1/txs/by_height/${h}`);
    }
    // Every tx is also compared inside the list pages; by hash, every 4th (and the last) is asked.
    const hashes = db.prepare('SELECT hash FROM txs ORDER BY sequence').pluck().all() as Buffer[];
    hashes.forEach((hash, i) => {
      if (i % 4 === 0 || i === hashes.length - 1) singles.add(`/indexer/tx/v1/txs/${hash.toString('hex').toUpperCase()}`);
    });
    for (const name of db.prepare('SELECT name FROM msg_types').pluck().all() as string[]) {
      walks.add(`/indexer/tx/v1/txs?msgs=${encodeURIComponent(name)}`);
    }
    const accounts = db.prepare('SELECT addr, signer_tx_count, nft_count FROM accounts').all() as { addr: Buffer; signer_tx_count: number; nft_count: number }[];
    for (const a of accounts) {
      const acct = toBech32(a.addr, prefix);
      walks.add(`/indexer/tx/v1/txs/by_account/${acct}`);
      // Accounts that signed nothing answer [] on both sides unless one side has them as signer
      // (then that side's plan adds the walk).
      if (a.signer_tx_count > 0) walks.add(`/indexer/tx/v1/txs/by_account/${acct}?is_signer=true`);
      if (a.nft_count > 0) {
        walks.add(`/indexer/nft/v1/collections/by_account/${acct}`);
        walks.add(`/indexer/nft/v1/tokens/by_account/${acct}`);
        walks.add(`/indexer/nft/v1/tokens/by_account/${acct}?order_by=height`);
      }
    }
    for (const c of db.prepare('SELECT addr, name FROM collections').all() as { addr: Buffer; name: string }[]) {
      const addr = toHex0x(c.addr);
      singles.add(`/indexer/nft/v1/collections/${addr}`);
      walks.add(`/indexer/nft/v1/collections/by_name/${encodeURIComponent(c.name)}`);
      withLimits(`/indexer/nft/v1/tokens/by_collection/${addr}`);
      walks.add(`/indexer/nft/v1/tokens/by_collection/${addr}?order_by=height`);
    }
    for (const t of db.prepare('SELECT collection_addr, token_id FROM nfts').all() as { collection_addr: Buffer; token_id: string }[]) {
      walks.add(`/indexer/nft/v1/txs/${toHex0x(t.collection_addr)}/${encodeURIComponent(t.token_id)}`);
    }
    for (const d of db.prepare('SELECT denom FROM richlist_denoms').pluck().all() as string[]) {
      withLimits(`/indexer/richlist/v1/${encodeURIComponent(d)}`);
    }
    for (const d of db.prepare('SELECT denom FROM denom_contracts').pluck().all() as string[]) {
      walks.add(`/indexer/richlist/v1/${encodeURIComponent(d)}`);
    }
    if (s.meta.vmType === 'evm') evmRoutePlan(s, withLimits, walks, singles);
  }
  return { walks: [...walks], singles: [...singles] };
}

/** The EVM groups: every list walked, every 4th EVM tx asked by hash, every linked account. */
function evmRoutePlan(s: Snapshot, withLimits: (path: string) => void, walks: Set<string>, singles: Set<string>): void {
  const db = s.db;
  withLimits('/indexer/tx/v1/evm-txs');
  withLimits('/indexer/tx/v1/evm-internal-txs');
  for (const h of db.prepare('SELECT height FROM evm_height_counts').pluck().all() as number[]) {
    walks.add(`/indexer/tx/v1/evm-txs/by_height/${h}`);
    walks.add(`/indexer/tx/v1/evm-internal-txs/by_height/${h}`);
  }
  const hashes = db.prepare('SELECT hash FROM evm_txs ORDER BY sequence').pluck().all() as Buffer[];
  hashes.forEach((hash, i) => {
    if (i % 4 === 0 || i === hashes.length - 1) {
      singles.add(`/indexer/tx/v1/evm-txs/${toHex0x(hash)}`);
      walks.add(`/indexer/tx/v1/evm-internal-txs/${toHex0x(hash)}?pagination.reverse=false`);
    }
  });
  const accounts = db.prepare('SELECT a.addr, c.signer_tx_count FROM evm_account_counts c JOIN accounts a ON a.id = c.account_id')
    .all() as { addr: Buffer; signer_tx_count: number }[];
  for (const a of accounts) {
    const acct = toBech32(a.addr, s.meta.prefix);
    walks.add(`/indexer/tx/v1/evm-txs/by_account/${acct}`);
    if (a.signer_tx_count > 0) walks.add(`/indexer/tx/v1/evm-txs/by_account/${acct}?is_signer=true`);
    walks.add(`/indexer/tx/v1/evm-internal-txs/by_account/${acct}`);
  }
}

async function pool<T>(items: T[], n: number, fn: (t: T) => Promise<void>): Promise<void> {
  let i = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (i < items.length) await fn(items[i++]);
  }));
}

/** Asks both servers every path of the plan; walks follow next_key until it is null. */
export async function compareServers(a: { url: string; snapshot: Snapshot }, b: { url: string; snapshot: Snapshot },
  o: CompareOptions = {}): Promise<CompareResult> {
  const plan = routePlan([a.snapshot, b.snapshot], o.limits ?? [7]);
  const result: CompareResult = { requests: 0, pages: 0, mismatches: [] };
  const skip = o.skip ?? (() => false);
  const one = async (path: string): Promise<Answer | undefined> => {
    const [x, y] = await Promise.all([get(a.url, path), get(b.url, path)]);
    result.requests += 2;
    if (skip(path)) return x;
    if (x.status !== y.status || x.body !== y.body || x.type !== y.type) {
      result.mismatches.push({ path, a: x, b: y });
      return undefined;
    }
    return x;
  };
  await pool(plan.singles, o.concurrency ?? 8, async (p) => { await one(p); });
  await pool(plan.walks, o.concurrency ?? 8, async (start) => {
    let path = start;
    for (let n = 0; n < 100_000; n++) {
      const ans = await one(path);
      result.pages++;
      if (!ans || ans.status !== 200) return;
      const next = (JSON.parse(ans.body) as { pagination?: { next_key?: string | null } }).pagination?.next_key;
      if (!next) return;
      const base = start.replace(/([?&])pagination\.key=[^&]*/, '');
      path = `${base}${base.includes('?') ? '&' : '?'}pagination.key=${encodeURIComponent(next)}`;
    }
    throw new Error(`walk of ${start} did not end`);
  });
  return result;
}

/** A readable summary of the first mismatches. */
export function describeMismatches(r: CompareResult, max = 5): string {
  return r.mismatches.slice(0, max).map((m) => {
    let at = 0;
    while (at < m.a.body.length && m.a.body[at] === m.b.body[at]) at++;
    return `${m.path}: ${m.a.status} vs ${m.b.status}, first difference at byte ${at}:\n`
      + `  a: ${m.a.body.slice(Math.max(0, at - 60), at + 100)}\n  b: ${m.b.body.slice(Math.max(0, at - 60), at + 100)}`;
  }).join('\n') + (r.mismatches.length > max ? `\n... and ${r.mismatches.length - max} more` : '');
}
