-- indexer-api snapshot schema v3: tables. Applied by `import` to an empty file before the bulk
-- load; secondary indexes come after the load (002-indexes.sql). A snapshot is immutable once
-- written. Tables are shaped for the read paths (DESIGN.md): every list is one index range scan
-- in its page order, payloads are stored as the exact JSON served — each `json` column a packed
-- row since wire format 2 (raw deflate of the JSON with its CRC-32 and length, see
-- docs/api-contract.md#stored-wire-format; the JSON text itself in wire format 1) — and the
-- counts a request would otherwise scan for are precomputed.

-- Key/value facts about the snapshot: chain_id, vm_type, bech32_prefix, version, commit_hash,
-- height, internal_tx_height, rich_list_height, source, created_at, snapshot_id, count_* ...
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

-- Replaces rollytics' live node lookup of a block proposer (reference §7).
CREATE TABLE validators (
  proposer         TEXT PRIMARY KEY,
  moniker          TEXT NOT NULL,
  operator_address TEXT NOT NULL
) WITHOUT ROWID;

-- Canonical address bytes (reference §2.3) with per-account counts, so `total` is one lookup.
CREATE TABLE accounts (
  id               INTEGER PRIMARY KEY,
  addr             BLOB NOT NULL,
  tx_count         INTEGER NOT NULL DEFAULT 0,
  signer_tx_count  INTEGER NOT NULL DEFAULT 0,
  nft_count        INTEGER NOT NULL DEFAULT 0,
  collection_count INTEGER NOT NULL DEFAULT 0
);

-- The Block object as served (proposer already resolved). time_us feeds avg_blocktime.
CREATE TABLE blocks (
  height   INTEGER PRIMARY KEY,
  time_us  INTEGER NOT NULL,
  tx_count INTEGER NOT NULL,
  json     TEXT NOT NULL
);

-- The Tx object as served. sequence orders txs by (height, index) and is the keyset cursor.
CREATE TABLE txs (
  sequence INTEGER PRIMARY KEY,
  height   INTEGER NOT NULL,
  hash     BLOB NOT NULL,
  json     TEXT NOT NULL
);

-- Accounts a tx touches (signer = 1 for the signer's row); page order: account, sequence.
CREATE TABLE tx_accounts (
  account_id INTEGER NOT NULL,
  sequence   INTEGER NOT NULL,
  signer     INTEGER NOT NULL,
  PRIMARY KEY (account_id, sequence)
) WITHOUT ROWID;

-- Message type URLs without the leading '/', as rollytics stores them (reference §2.7).
CREATE TABLE msg_types (
  id       INTEGER PRIMARY KEY,
  name     TEXT NOT NULL,
  tx_count INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE tx_msg_types (
  msg_type_id INTEGER NOT NULL,
  sequence    INTEGER NOT NULL,
  PRIMARY KEY (msg_type_id, sequence)
) WITHOUT ROWID;

-- Msg-type sets: each distinct combination of message types some tx has (the empty one too),
-- with how many txs have exactly that combination. A chain has few of them, so the total of a
-- msgs filter (txs having ANY of the requested types, each tx once, reference §3.7) is a sum
-- over the sets containing a requested type: O(sets), not O(txs). type_ids: the members'
-- msg_types ids, ascending, comma-separated (the set's identity).
CREATE TABLE msg_type_sets (
  id       INTEGER PRIMARY KEY,
  type_ids TEXT NOT NULL,
  tx_count INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE msg_type_set_members (
  msg_type_id INTEGER NOT NULL,
  set_id      INTEGER NOT NULL,
  PRIMARY KEY (msg_type_id, set_id)
) WITHOUT ROWID;

-- Per account and msg-type set: the account's txs with exactly that combination of types, and
-- of those the ones it signed (txs/by_account + msgs [+ is_signer] totals).
CREATE TABLE account_msg_type_sets (
  account_id      INTEGER NOT NULL,
  set_id          INTEGER NOT NULL,
  tx_count        INTEGER NOT NULL,
  signer_tx_count INTEGER NOT NULL,
  PRIMARY KEY (account_id, set_id)
) WITHOUT ROWID;

-- The Collection object as served. norm_* are rollytics' by_name normalization (§4.6.3).
CREATE TABLE collections (
  addr             BLOB PRIMARY KEY,
  height           INTEGER NOT NULL,
  name             TEXT NOT NULL,
  origin_name      TEXT NOT NULL,
  norm_name        TEXT NOT NULL,
  norm_origin_name TEXT NOT NULL,
  creator_id       INTEGER NOT NULL,
  nft_count        INTEGER NOT NULL DEFAULT 0,
  timestamp        TEXT NOT NULL,
  json             TEXT NOT NULL
) WITHOUT ROWID;

-- Live NFTs, the Nft object as served. object_account_id: Move NFT object (its tx history).
CREATE TABLE nfts (
  collection_addr   BLOB NOT NULL,
  token_id          TEXT NOT NULL,
  height            INTEGER NOT NULL,
  owner_id          INTEGER NOT NULL,
  object_account_id INTEGER,
  json              TEXT NOT NULL,
  PRIMARY KEY (collection_addr, token_id)
) WITHOUT ROWID;

-- Collections in which an account owns at least one NFT (collections/by_account).
CREATE TABLE account_collections (
  account_id      INTEGER NOT NULL,
  height          INTEGER NOT NULL,
  collection_addr BLOB NOT NULL,
  nft_count       INTEGER NOT NULL,
  PRIMARY KEY (account_id, height, collection_addr)
) WITHOUT ROWID;

-- NFT ↔ tx links (Wasm / EVM), burned NFTs included; tx_count per NFT identity.
CREATE TABLE nft_txs (
  collection_addr BLOB NOT NULL,
  token_id        TEXT NOT NULL,
  sequence        INTEGER NOT NULL,
  PRIMARY KEY (collection_addr, token_id, sequence)
) WITHOUT ROWID;

CREATE TABLE nft_tx_counts (
  collection_addr BLOB NOT NULL,
  token_id        TEXT NOT NULL,
  tx_count        INTEGER NOT NULL,
  PRIMARY KEY (collection_addr, token_id)
) WITHOUT ROWID;

-- Rich list, the holder object as served. amount_key sorts numerically as text (see
-- src/lib/amount.ts); account is the canonical address, the unique tie-breaker.
CREATE TABLE richlist (
  denom      TEXT NOT NULL,
  amount_key TEXT NOT NULL,
  account    BLOB NOT NULL,
  json       TEXT NOT NULL,
  PRIMARY KEY (denom, amount_key, account)
) WITHOUT ROWID;

CREATE TABLE richlist_denoms (
  denom        TEXT PRIMARY KEY,
  holder_count INTEGER NOT NULL
) WITHOUT ROWID;

-- Rank marks (schema v3): every RANK_STEP-th holder of each rich list from the top (rank 0,
-- RANK_STEP, 2·RANK_STEP, … in the default order, largest first), so a page at any offset is a
-- seek to the nearest mark and fewer than RANK_STEP index entries skipped (src/snapshot/richlist-ranks.ts,
-- docs/api-contract.md#deep-offsets). Written with the rich list: at import, and for each denom
-- whose holders a follow refresh changes, in the same transaction.
CREATE TABLE richlist_ranks (
  denom      TEXT NOT NULL,
  rank       INTEGER NOT NULL,
  amount_key TEXT NOT NULL,
  account    BLOB NOT NULL,
  PRIMARY KEY (denom, rank)
) WITHOUT ROWID;

-- Tag digests (schema v4): for an NFT owner (o:<hex>), a collection (c:<hex>), the list of
-- collections (cl) and a stored rich list (r:<denom>), 16 bytes of a SHA-256 of every row their
-- answers read, in key order; NULL over DIGEST_ROW_CAP rows; no row: the tag has no rows. Written
-- with the rows (import, import --base, follow, rich-list refresh), read as the tag's version
-- (src/snapshot/tag-digests.ts, docs/response-cache.md "ETags from versions").
CREATE TABLE tag_digests (
  tag    TEXT PRIMARY KEY,
  digest BLOB
) WITHOUT ROWID;

-- EVM bank denom (lower-cased) → ERC-20 contract: replaces rollytics' by_denom node query (§7).
CREATE TABLE denom_contracts (
  denom    TEXT PRIMARY KEY,
  contract TEXT NOT NULL
) WITHOUT ROWID;

-- EVM route groups (reference §4.4, §4.5), filled only on EVM chains.
-- The EvmTx object as served: the receipt re-encoded at import to the fixed key set and order.
-- sequence orders EVM txs by (height, index) and is the keyset cursor (rollytics' evm_tx counter).
CREATE TABLE evm_txs (
  sequence INTEGER PRIMARY KEY,
  height   INTEGER NOT NULL,
  hash     BLOB NOT NULL,
  json     TEXT NOT NULL
);

-- Accounts an EVM tx touches (signer = 1 for `from`); page order: account, sequence.
CREATE TABLE evm_tx_accounts (
  account_id INTEGER NOT NULL,
  sequence   INTEGER NOT NULL,
  signer     INTEGER NOT NULL,
  PRIMARY KEY (account_id, sequence)
) WITHOUT ROWID;

-- One internal call (callTracer frame) as served; sequence: rollytics' evm_internal_tx counter.
CREATE TABLE evm_internal_txs (
  sequence INTEGER PRIMARY KEY,
  height   INTEGER NOT NULL,
  hash     BLOB NOT NULL,
  json     TEXT NOT NULL
);

CREATE TABLE evm_internal_tx_accounts (
  account_id INTEGER NOT NULL,
  sequence   INTEGER NOT NULL,
  PRIMARY KEY (account_id, sequence)
) WITHOUT ROWID;

-- Every EVM tx hash known (receipts and traces, failed txs included: rollytics'
-- evm_tx_hash_dict) with its internal call count: evm-internal-txs/{hash} answers 404 only for
-- a hash not listed here, and its total is one lookup.
CREATE TABLE evm_hashes (
  hash              BLOB PRIMARY KEY,
  internal_tx_count INTEGER NOT NULL
) WITHOUT ROWID;

-- Per-height and per-account counts of the EVM lists (totals in one lookup).
CREATE TABLE evm_height_counts (
  height            INTEGER PRIMARY KEY,
  tx_count          INTEGER NOT NULL,
  internal_tx_count INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE evm_account_counts (
  account_id        INTEGER PRIMARY KEY,
  tx_count          INTEGER NOT NULL,
  signer_tx_count   INTEGER NOT NULL,
  internal_tx_count INTEGER NOT NULL
) WITHOUT ROWID;
