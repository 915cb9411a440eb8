import type Database from 'better-sqlite3';
import { blockJson } from '../wire/block';
import { evmTxJson, internalTxJson } from '../wire/evm';
import { WIRE_FORMAT_META_KEY, WIRE_FORMAT_VERSION, wireFormatOf } from '../wire/format';
import { collectionJson, nftJson } from '../wire/nft';
import { readBlock, readCollection, readEvmTx, readHolder, readInternalTx, readNft, readTx } from '../wire/read';
import { packRow, readPackedRow } from '../wire/packed';
import { holderJson } from '../wire/richlist';
import { txJson } from '../wire/tx';

/** Every table that stores rendered JSON: its unique key and how a stored object is rendered again. */
const STORED: readonly { table: string; key: readonly string[]; render(json: string): string }[] = [
  { table: 'blocks', key: ['height'], render: (j) => blockJson(readBlock(j)) },
  { table: 'txs', key: ['sequence'], render: (j) => txJson(readTx(j)) },
  { table: 'collections', key: ['addr'], render: (j) => collectionJson(readCollection(j)) },
  { table: 'nfts', key: ['collection_addr', 'token_id'], render: (j) => nftJson(readNft(j)) },
  // wire format 2 stores no holder JSON (rendered from its columns when served): '' below
  {
    table: 'richlist',
    key: ['denom', 'amount_key', 'account'],
    render: (j) => {
      const h = readHolder(j);
      return holderJson(h.account, h.amount);
    },
  },
  { table: 'evm_txs', key: ['sequence'], render: (j) => evmTxJson(readEvmTx(j)) },
  { table: 'evm_internal_txs', key: ['sequence'], render: (j) => internalTxJson(readInternalTx(j)) },
];

/** Rows read and rewritten per statement: bounded memory whatever the chain size. */
const BATCH = 2000;

/**
 * Makes the stored JSON of the snapshot being written current (docs/api-contract.md#stored-wire-format):
 * a new file is marked with WIRE_FORMAT_VERSION; a copy of a base rendered with an older version
 * has every stored object read back and rendered again with today's serializers, stored packed
 * (version 2, src/wire/packed.ts: every row of a version-1 base is rewritten), then is marked.
 * Runs inside the writer's transaction. Returns the number of objects whose text changed.
 */
export function bringWireFormatCurrent(db: Database.Database): number {
  const stored = db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get(WIRE_FORMAT_META_KEY) as string | undefined;
  const isBase = db.prepare("SELECT 1 FROM meta WHERE key = 'chain_id'").get() !== undefined;
  const version = wireFormatOf(stored);
  let changed = 0;
  if (isBase && version > WIRE_FORMAT_VERSION) {
    throw new Error(`the base snapshot's stored JSON is wire format ${version}, newer than this indexer-api renders (${WIRE_FORMAT_VERSION})`);
  }
  if (isBase && version < WIRE_FORMAT_VERSION) {
    for (const t of STORED) changed += rerenderTable(db, t.table, t.key, t.render);
  }
  db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)').run(WIRE_FORMAT_META_KEY, String(WIRE_FORMAT_VERSION));
  return changed;
}

function rerenderTable(db: Database.Database, table: string, key: readonly string[], render: (json: string) => string): number {
  const cols = key.join(', ');
  const first = db.prepare(`SELECT ${cols}, json FROM ${table} ORDER BY ${cols} LIMIT ${BATCH}`);
  const next = db.prepare(`SELECT ${cols}, json FROM ${table} WHERE (${cols}) > (${key.map(() => '?').join(', ')}) ORDER BY ${cols} LIMIT ${BATCH}`);
  const update = db.prepare(`UPDATE ${table} SET json = ? WHERE ${key.map((k) => `${k} = ?`).join(' AND ')}`);
  let changed = 0;
  let rows = first.all() as Record<string, unknown>[];
  while (rows.length > 0) {
    for (const r of rows) {
      if (table === 'richlist' && (r.json as Buffer | string).length === 0) continue; // wire 2: nothing stored
      const text = readPackedRow(r.json as Buffer | string);
      const json = render(text);
      if (json !== text) changed++;
      // a version-1 row is the text itself: every row is written again, packed
      if (json !== text || typeof r.json === 'string') update.run(table === 'richlist' ? '' : packRow(json), ...key.map((k) => r[k]));
    }
    const last = rows[rows.length - 1];
    rows = next.all(...key.map((k) => last[k])) as Record<string, unknown>[];
  }
  return changed;
}
