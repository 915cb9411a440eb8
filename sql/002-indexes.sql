-- indexer-api snapshot schema v3: secondary indexes, built once after the bulk load.
-- Each one serves a route's page order (see bench/README.md "which index serves which route").

CREATE UNIQUE INDEX accounts_by_addr ON accounts (addr);
CREATE UNIQUE INDEX msg_types_by_name ON msg_types (name);

-- txs/{tx_hash}
CREATE INDEX txs_by_hash ON txs (hash);
-- txs/by_height/{height}: (height, sequence) — sequence is the rowid, carried by the index.
CREATE INDEX txs_by_height ON txs (height);
-- txs/by_account?is_signer=true
CREATE INDEX tx_accounts_signer ON tx_accounts (account_id, sequence) WHERE signer = 1;
-- msgs filter combined with by_account / by_height: membership test per sequence.
CREATE INDEX tx_msg_types_by_sequence ON tx_msg_types (sequence, msg_type_id);

-- collections and collections/by_name in (height, addr) order
CREATE INDEX collections_by_height ON collections (height, addr);

-- tokens/by_collection?order_by=height
CREATE INDEX nfts_by_collection_height ON nfts (collection_addr, height, token_id);
-- tokens/by_account, order_by token_id / height, with and without collection_addr
CREATE INDEX nfts_by_owner_token ON nfts (owner_id, token_id, height, collection_addr);
CREATE INDEX nfts_by_owner_height ON nfts (owner_id, height, token_id, collection_addr);
CREATE INDEX nfts_by_owner_collection_token ON nfts (owner_id, collection_addr, token_id);
CREATE INDEX nfts_by_owner_collection_height ON nfts (owner_id, collection_addr, height, token_id);
-- follow (Move): the collections of the NFT objects a batch's events name, without a pass over
-- every NFT (docs/follow.md "Cost"); Wasm / EVM NFTs have no object, so it stays empty there.
CREATE INDEX nfts_by_object ON nfts (object_account_id) WHERE object_account_id IS NOT NULL;

-- evm-txs/{tx_hash}, evm-txs/by_height/{height} (sequence is the rowid, carried by the index)
CREATE INDEX evm_txs_by_hash ON evm_txs (hash);
CREATE INDEX evm_txs_by_height ON evm_txs (height);
-- evm-txs/by_account?is_signer=true
CREATE INDEX evm_tx_accounts_signer ON evm_tx_accounts (account_id, sequence) WHERE signer = 1;
-- evm-internal-txs/by_height/{height}, evm-internal-txs/{tx_hash}
CREATE INDEX evm_internal_txs_by_height ON evm_internal_txs (height);
CREATE INDEX evm_internal_txs_by_hash ON evm_internal_txs (hash);
