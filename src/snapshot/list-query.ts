import type Database from 'better-sqlite3';
import { amountFromKey, amountKey, isAmount } from '../lib/amount';
import { BadRequestError, invalidValue, shown } from '../lib/api-errors';
import { encodeKey, KeyValue, Page, PageRequest, paginationJson, previousKey } from './pagination';

/**
 * Keyset pagination over one index order. A list is declared once (its FROM/WHERE with named
 * parameters and its unique page order); the statements for each direction and cursor shape
 * are derived from that declaration at first use and cached — never built from request text.
 *
 * A cursor is a prefix of the order's key: our keys carry the whole key (unique, so every row
 * comes exactly once); rollytics' keys carry a prefix ({"height":n} on collections), meaning
 * "past every row with that prefix", which is what rollytics does with them.
 *
 * Offsets (docs/api-contract.md#deep-offsets): a page at offset n first finds the key of its
 * first row by skipping n entries of an index that holds only the order columns (`skip`), then
 * reads the page's rows from that key on — so n rows are never read, only n index entries.
 * Beyond MAX_OFFSET that is refused (400 naming the parameter, pointing to pagination.key),
 * except on lists whose order column is dense (`dense`: 1..n without gaps), where the offset
 * becomes a key by arithmetic, whatever its size.
 */

/** The deepest offset a list without a dense order serves (docs/api-contract.md#deep-offsets). */
export const MAX_OFFSET = 10_000;

export type ColumnKind =
  | 'int' // INTEGER column, JSON number in the key
  | 'text' // TEXT column, JSON string
  | 'hex' // BLOB column, "0x…" lower-case hex string
  | 'amount'; // amount_key TEXT column, decimal amount string in the key

export interface OrderColumn {
  /** SQL expression of the column, e.g. `t.sequence` */
  sql: string;
  /** field name in the JSON cursor, e.g. `sequence` */
  field: string;
  kind: ColumnKind;
}

/** Order by one integer `sequence` column (txs, EVM txs, internal txs, NFT txs). */
export const sequenceOrder = (sql: string): OrderColumn[] => [{ sql, field: 'sequence', kind: 'int' }];

export interface ListDefinition {
  /** label for logs and EXPLAIN, e.g. `txsByAccount` */
  name: string;
  /** SELECT list: must yield `json` plus every order column under its field name */
  select: string;
  from: string;
  /** filter with named parameters; `1` for none */
  where: string;
  order: OrderColumn[];
  /**
   * FROM/WHERE (same parameters) yielding the order columns from an index alone, for skipping an
   * offset without reading rows (e.g. `tx_accounts a` for a join of tx_accounts and txs);
   * default: `from` and `where` themselves.
   */
  skip?: { from: string; where: string };
  /**
   * The one order column counts up without gaps when `bounds` gives max − min + 1 = `count()`:
   * row n from the top is then the key max − n. `bounds`: SQL yielding `min` and `max`.
   */
  dense?: { bounds: string; count: () => number };
}

/** `json` is the stored UTF-8 bytes (read as a BLOB: no decoding to a JS string). */
export interface Row {
  json: Buffer;
  [field: string]: unknown;
}

/** The `json` column of a SELECT list (`json` or `x.json AS json`), read as a BLOB. */
function jsonAsBlob(select: string, name: string): string {
  const m = /^\s*((?:\w+\.)?json)(\s+AS\s+json)?\s*(,|$)/i.exec(select);
  if (!m) throw new Error(`list ${name}: the SELECT list must start with its json column, got ${select}`);
  return `CAST(${m[1]} AS BLOB) AS json${m[3]}${select.slice(m[0].length)}`;
}

export class ListQuery {
  private readonly statements = new Map<string, Database.Statement>();

  constructor(
    private readonly db: Database.Database,
    readonly def: ListDefinition,
  ) {}

  private statement(desc: boolean, prefix: number): Database.Statement {
    const id = `${desc ? 'd' : 'a'}${prefix}`;
    let st = this.statements.get(id);
    if (!st) {
      const { from, where, order } = this.def;
      const select = jsonAsBlob(this.def.select, this.def.name);
      const dir = desc ? 'DESC' : 'ASC';
      let cond = '';
      if (prefix > 0) {
        const cols = order.slice(0, prefix);
        const lhs = cols.map((c) => c.sql).join(', ');
        const rhs = cols.map((_, i) => `@k${i}`).join(', ');
        cond = prefix === 1 ? ` AND ${lhs} ${desc ? '<' : '>'} ${rhs}` : ` AND (${lhs}) ${desc ? '<' : '>'} (${rhs})`;
      }
      const sql = `SELECT ${select} FROM ${from} WHERE (${where})${cond}` + ` ORDER BY ${order.map((c) => `${c.sql} ${dir}`).join(', ')} LIMIT @limit`;
      st = this.db.prepare(sql);
      this.statements.set(id, st);
    }
    return st;
  }

  /** The page at an offset: from the key of the offset-th entry of the skip index on. */
  private offsetStatement(desc: boolean): Database.Statement {
    const id = `o${desc ? 'd' : 'a'}`;
    let st = this.statements.get(id);
    if (!st) {
      const { from, where, order } = this.def;
      const skip = this.def.skip ?? { from, where };
      const dir = desc ? 'DESC' : 'ASC';
      const cols = order.map((c) => c.sql).join(', ');
      const lhs = order.length === 1 ? cols : `(${cols})`;
      const first =
        `(SELECT ${cols} FROM ${skip.from} WHERE (${skip.where}) ` + `ORDER BY ${order.map((c) => `${c.sql} ${dir}`).join(', ')} LIMIT 1 OFFSET @offset)`;
      const sql =
        `SELECT ${jsonAsBlob(this.def.select, this.def.name)} FROM ${from} WHERE (${where}) AND ${lhs} ${desc ? '<=' : '>='} ${first}` +
        ` ORDER BY ${order.map((c) => `${c.sql} ${dir}`).join(', ')} LIMIT @limit`;
      st = this.db.prepare(sql);
      this.statements.set(id, st);
    }
    return st;
  }

  /** All statements up front, so a schema mismatch fails at start-up rather than on a request. */
  prepareAll(): void {
    for (const desc of [true, false]) {
      for (let p = 0; p <= this.def.order.length; p++) this.statement(desc, p);
      this.offsetStatement(desc);
    }
    if (this.def.dense) this.db.prepare(this.def.dense.bounds);
  }

  private denseBounds?: { min: number; max: number } | null;

  /**
   * A new state of the file on this connection (a follow batch: src/snapshot/open.ts
   * renewSnapshot): what was read once per state — the dense order's bounds — is read again.
   */
  newState(): void {
    this.denseBounds = undefined;
  }

  /** min and max of a dense order, read once per state (a state is immutable); null if it has gaps. */
  private dense(): { min: number; max: number } | null {
    if (this.denseBounds === undefined) {
      const d = this.def.dense;
      const b = d ? (this.db.prepare(d.bounds).get() as { min: number | null; max: number | null }) : undefined;
      this.denseBounds = d && b && b.min !== null && b.max !== null && b.max - b.min + 1 === d.count() ? { min: b.min, max: b.max } : null;
    }
    return this.denseBounds;
  }

  /**
   * Resolves the request's key against this list's order: the longest prefix of order fields
   * present in a JSON cursor. A cursor naming none of them is "not usable" (rollytics then falls
   * back to offset paging, and so do we).
   */
  cursorValues(page: PageRequest): unknown[] {
    if (page.key?.kind !== 'cursor') return [];
    const values: unknown[] = [];
    for (const col of this.def.order) {
      if (!(col.field in page.key.fields)) break;
      values.push(toSqlValue(col, page.key.fields[col.field]));
    }
    return values;
  }

  /**
   * Fetches one page (limit + 1 rows to know whether another page exists) and renders the
   * pagination object; `total` is computed by the caller only when count_total is on.
   */
  page(params: Record<string, unknown>, page: PageRequest, total: () => number | bigint): Page {
    return this.toPage(this.rows(params, page), page, total);
  }

  /** Renders rows fetched elsewhere (e.g. merged from several lists) with this list's keys. */
  toPage(rows: Row[], page: PageRequest, total: () => number | bigint): Page {
    const more = rows.length > page.limit;
    if (more) rows = rows.slice(0, page.limit);
    const next = more ? this.keyOf(rows[rows.length - 1]) : null;
    return {
      items: rows.map((r) => r.json),
      pagination: paginationJson(previousKey(page), next, page.countTotal ? total() : 0),
    };
  }

  keyOf(row: Row): string {
    const fields: Record<string, KeyValue> = {};
    for (const col of this.def.order) fields[col.field] = fromSqlValue(col, row[col.field]);
    return encodeKey(fields);
  }

  /** Raw rows of one page, limit + 1 of them (also for merging several lists). */
  rows(params: Record<string, unknown>, page: PageRequest): Row[] {
    const cursor = this.cursorValues(page);
    const args: Record<string, unknown> = { ...params, limit: page.limit + 1 };
    if (cursor.length === 0 && page.offset > 0) {
      const dense = this.dense();
      if (dense) {
        // row n from the top is max − n: a key, found by arithmetic
        if (page.offset >= dense.max - dense.min + 1) return [];
        args.k0 = page.reverse ? dense.max - page.offset + 1 : dense.min + page.offset - 1;
        return this.statement(page.reverse, 1).all(args) as Row[];
      }
      checkOffset(page);
      args.offset = page.offset;
      return this.offsetStatement(page.reverse).all(args) as Row[];
    }
    cursor.forEach((v, i) => {
      args[`k${i}`] = v;
    });
    return this.statement(page.reverse, cursor.length).all(args) as Row[];
  }
}

/**
 * Refuses an offset past MAX_OFFSET, naming the parameter it came from: skipping it would cost
 * in proportion to the offset (docs/api-contract.md#deep-offsets).
 */
export function checkOffset(page: PageRequest): void {
  if (page.offset <= MAX_OFFSET) return;
  const viaKey = page.key?.kind === 'offset';
  throw invalidValue(
    viaKey ? 'pagination.key' : 'pagination.offset',
    viaKey ? `offset ${page.offset}` : String(page.offset),
    `offsets above ${MAX_OFFSET} are not served on this list: page with pagination.key, sending back each page's next_key`,
  );
}

function badKey(col: OrderColumn, want: string, got: unknown): BadRequestError {
  return new BadRequestError(`invalid value for pagination.key: field ${col.field} must be ${want}, got ${shown(JSON.stringify(got) ?? String(got))}`);
}

function toSqlValue(col: OrderColumn, v: unknown): unknown {
  switch (col.kind) {
    case 'int':
      if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw badKey(col, 'an integer', v);
      return v;
    case 'text':
      if (typeof v !== 'string') throw badKey(col, 'a string', v);
      return v;
    case 'hex':
      if (typeof v !== 'string' || !/^0x([0-9a-f]{2})*$/.test(v)) throw badKey(col, 'a 0x hex string', v);
      return Buffer.from(v.slice(2), 'hex');
    case 'amount':
      if (typeof v !== 'string' || !isAmount(v)) throw badKey(col, 'a decimal amount string', v);
      return amountKey(v);
  }
}

function fromSqlValue(col: OrderColumn, v: unknown): KeyValue {
  switch (col.kind) {
    case 'int':
      return Number(v);
    case 'text':
      return String(v);
    case 'hex':
      return '0x' + (v as Buffer).toString('hex');
    case 'amount':
      return amountFromKey(String(v));
  }
}
