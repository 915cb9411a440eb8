import { toBech32, toHex0x } from '../lib/address';
import { Account, sha256 } from './chain';
import { ChainParams } from './params';
import { Prng } from './prng';
import { BlockRef } from './tx';

/** An NFT holder: an account, or on Wasm possibly a contract the NFT was sent to. */
export interface Holder {
  addr: Buffer;
  bech32: string;
  hex: string;
}

type IdStyle = (n: number) => string;

interface CollectionSpec {
  name: string;
  symbol: string;
  ids: IdStyle;
  originName?: string;
}

export interface Collection {
  addr: Buffer;
  name: string;
  symbol: string;
  originName: string;
  creator: Account;
  height: number;
  timeText: string;
  uriBase: string;
  tokens: Token[];
  minted: number;
  ids: IdStyle;
}

export interface Token {
  col: Collection;
  tokenId: string;
  /** Move: the NFT object address. */
  objectAddr?: Buffer;
  /** Position in the collection's mint order (Move `index`, EVM token id source). */
  index: number;
  owner: Holder;
  uri: string;
  height: number;
  timeText: string;
  burned: boolean;
  liveSlot: number;
}

const HUGE = 2n ** 200n;

/** Token-id styles: the ones with `#`, `/` and spaces exercise URL encoding; EVM ids are uint256. */
function specs(p: ChainParams): CollectionSpec[] {
  const evm = p.vm === 'evm';
  const num: IdStyle = (n) => String(n);
  const base: CollectionSpec[] = [
    { name: 'Cool Cats', symbol: 'COOL', ids: num },
    { name: 'Ünïcode Ëlves', symbol: 'ELF', ids: evm ? (n) => String(1000 + n * 7) : (n) => `token ${n}` },
    { name: '日本のアート', symbol: 'ART', ids: evm ? (n) => (HUGE + BigInt(n)).toString() : (n) => `art/2024 ${n}` },
    { name: 'Glyph Club', symbol: 'GLYPH', ids: evm ? num : (n) => `Glyph #${n}` },
    {
      name: `ibc/${sha256(`nft-transfer/channel-1/${p.chainId}`).toString('hex').toUpperCase()}`,
      symbol: 'IGP',
      ids: num,
      originName: 'Initia Genesis Pass',
    },
    { name: 'Pixel Punks', symbol: 'PXL', ids: (n) => String(n - 1) },
    { name: 'Zero Knowledge Zebras', symbol: 'ZKZ', ids: evm ? (n) => String(n * 1_000_003) : (n) => `zk-${n}` },
  ];
  const out: CollectionSpec[] = [];
  for (let i = 0; i < p.collections; i++) {
    const s = base[i % base.length];
    const round = Math.floor(i / base.length);
    if (round === 0) out.push(s);
    else out.push({ ...s, name: `${s.name} ${round + 1}`, originName: s.originName && `${s.originName} ${round + 1}` });
  }
  return out;
}

/** NFT state of the chain while txs are generated; only live tokens end up in tokens.ndjson. */
export class NftBook {
  readonly collections: Collection[] = [];
  private readonly specs: CollectionSpec[];
  private readonly live: Token[] = [];

  constructor(private readonly p: ChainParams) {
    this.specs = specs(p);
  }

  get pendingCollections(): number {
    return this.specs.length - this.collections.length;
  }

  get liveCount(): number {
    return this.live.length;
  }

  nextIsBridged(): boolean {
    return this.specs[this.collections.length]?.originName !== undefined;
  }

  create(rng: Prng, creator: Account, block: BlockRef): Collection {
    const spec = this.specs[this.collections.length];
    const addr = this.p.vm === 'evm' ? rng.objectAddress().subarray(0, 20) : rng.objectAddress();
    const col: Collection = {
      addr,
      name: spec.name,
      symbol: spec.symbol,
      originName: spec.originName ?? '',
      creator,
      height: block.height,
      timeText: block.timeText,
      uriBase: `ipfs://bafybei${rng.bytes(20).toString('hex')}`,
      tokens: [],
      minted: 0,
      ids: spec.ids,
    };
    this.collections.push(col);
    return col;
  }

  mint(rng: Prng, col: Collection, owner: Holder, block: BlockRef): Token {
    const index = ++col.minted;
    const emptyUri = this.p.vm === 'evm' && rng.chance(0.02);
    const token: Token = {
      col,
      tokenId: col.ids(index),
      objectAddr: this.p.vm === 'move' ? rng.objectAddress() : undefined,
      index,
      owner,
      uri: emptyUri ? '' : `${col.uriBase}/${index}.json`,
      height: block.height,
      timeText: block.timeText,
      burned: false,
      liveSlot: this.live.length,
    };
    col.tokens.push(token);
    this.live.push(token);
    return token;
  }

  pickLive(rng: Prng): Token | undefined {
    return this.live.length === 0 ? undefined : this.live[rng.int(0, this.live.length - 1)];
  }

  transfer(token: Token, to: Holder, block: BlockRef): void {
    token.owner = to;
    token.height = block.height;
    token.timeText = block.timeText;
  }

  burn(token: Token): void {
    const last = this.live.pop() as Token;
    if (last !== token) {
      this.live[token.liveSlot] = last;
      last.liveSlot = token.liveSlot;
    }
    token.burned = true;
  }

  /**
   * `extra` NFTs beyond the ones the txs mint, for size benches (generate --nfts): NFT i is in
   * collection i mod (the preset's collections) — none when that collection does not exist yet
   * at the chain's last height — minted at the collection's creation without a tx of its own
   * (no tx history, no NFT ↔ tx link), owned by account i mod accounts. Their ids (`x<i>`, on
   * EVM 10^40 + i) are apart from the minted ones', so a prefix of the chain (untilHeight) holds
   * the same extra NFTs as the whole chain wherever their collection exists.
   */
  *extraTokens(extra: number, owners: readonly Holder[], seed: number): Generator<Token> {
    const n = this.p.collections;
    for (let i = 0; i < extra; i++) {
      const col = this.collections[i % n] as Collection | undefined; // created in the specs' order
      if (col === undefined) continue;
      yield {
        col,
        tokenId: this.p.vm === 'evm' ? (10n ** 40n + BigInt(i)).toString() : `x${i}`,
        objectAddr: this.p.vm === 'move' ? sha256(`nft-object-${seed}-${i}`) : undefined,
        index: 0,
        owner: owners[i % owners.length],
        uri: `${col.uriBase}/x${i}.json`,
        height: col.height,
        timeText: col.timeText,
        burned: false,
        liveSlot: -1,
      };
    }
  }

  /** How collections and owners are written to the dump: Wasm bech32, others 0x hex. */
  collectionText(col: Collection): string {
    return this.p.vm === 'wasm' ? toBech32(col.addr, this.p.prefix) : toHex0x(col.addr);
  }

  collectionRecord(col: Collection): object {
    return {
      object_addr: this.collectionText(col),
      creator: col.creator.bech32,
      name: col.name,
      origin_name: col.originName,
      height: col.height,
      timestamp: col.timeText,
    };
  }

  tokenRecord(t: Token): object {
    return {
      collection_addr: this.collectionText(t.col),
      token_id: t.tokenId,
      ...(t.objectAddr ? { object_addr: toHex0x(t.objectAddr) } : {}),
      owner: this.p.vm === 'evm' ? t.owner.hex : t.owner.bech32,
      uri: t.uri,
      height: t.height,
      timestamp: t.timeText,
    };
  }
}
