import { Account, Population } from './chain';
import { CosmosMsgs } from './cosmos';
import { Holder, NftBook, Token } from './nft';
import { ChainParams } from './params';
import { Prng } from './prng';
import { BuiltMsg, Failure, TxDraft } from './tx';
import { VmAdapter } from './vm';
import { NdjsonFile } from './writer';

export interface TxSlot {
  height: number;
  timeText: string;
  ms: number;
  sequence: number;
  /** 0-based position of the tx in the whole chain. */
  ordinal: number;
}

export interface ComposeEnv {
  p: ChainParams;
  pop: Population;
  book: NftBook;
  vm: VmAdapter;
  cosmos: CosmosMsgs;
  /** NFT ↔ tx links (Wasm and EVM only). */
  tokenTxs?: NdjsonFile;
}

type Kind = 'send' | 'multi' | 'execute' | 'ibc_out' | 'ibc_in' | 'mint' | 'nft_transfer' | 'burn';

const KINDS: Kind[] = ['send', 'multi', 'execute', 'ibc_out', 'ibc_in', 'mint', 'nft_transfer', 'burn'];
const BASE_WEIGHTS = [0.38, 0.04, 0.3, 0.05, 0.03, 0, 0.08, 0.01];

const MEMOS = [
  'gm',
  'payment for invoice #42',
  'thanks! 🙏',
  'rent / June',
  '日本語のメモ',
  'line one\nline two',
  'say "hello"',
  '<b>not html</b> & more',
  'tab\tseparated',
];

const FAILURES: Failure[] = [
  { code: 5, codespace: 'sdk', log: 'failed to execute message; message index: 0: spendable balance 1200umin is smaller than 52000umin: insufficient funds' },
  { code: 5, codespace: 'sdk', log: 'failed to execute message; message index: 0: 0uusdc is smaller than 15000uusdc: insufficient funds' },
];

function gas(rng: Prng, lo: number, hi: number): number {
  return rng.int(lo / 1000, hi / 1000) * 1000;
}

function isAccount(h: Holder): h is Account {
  return 'publicKey' in h;
}

/** Collection k is created once the chain reaches its due tx; creations span the first half. */
function collectionDue(p: ChainParams, k: number): number {
  return Math.floor(((k + 0.25) * p.txs * 0.5) / p.collections);
}

export function composeTx(env: ComposeEnv, rng: Prng, slot: TxSlot): TxDraft {
  const { p, book } = env;
  if (book.pendingCollections > 0 && slot.ordinal >= collectionDue(p, book.collections.length)) {
    return createCollection(env, rng, slot);
  }
  const weights = [...BASE_WEIGHTS];
  weights[5] = book.collections.length > 0 ? p.mintShare : 0;
  let kind = KINDS[rng.weighted(weights)];
  let token: Token | undefined;
  if (kind === 'nft_transfer' || kind === 'burn') {
    token = book.pickLive(rng);
    if (!token || !isAccount(token.owner)) kind = 'send';
  }
  switch (kind) {
    case 'mint':
      return mint(env, rng, slot);
    case 'nft_transfer':
      return transferNft(env, rng, slot, token as Token);
    case 'burn':
      return burnNft(env, rng, slot, token as Token);
    case 'ibc_in': {
      const relayer = env.pop.relayer;
      return {
        signer: relayer,
        msgs: [env.cosmos.updateClient(rng, relayer, slot.ms), env.cosmos.ibcReceive(rng, relayer, env.pop.other(rng, relayer), slot.ms)],
        gasWanted: gas(rng, 300_000, 600_000),
      };
    }
    default:
      return everyday(env, rng, slot, kind);
  }
}

function everyday(env: ComposeEnv, rng: Prng, slot: TxSlot, kind: Kind): TxDraft {
  const { pop, cosmos, vm } = env;
  const signer = pop.sender(rng);
  const msgs: BuiltMsg[] = [];
  let gasWanted: number;
  if (kind === 'send') {
    msgs.push(cosmos.send(rng, signer, pop.other(rng, signer)));
    gasWanted = gas(rng, 100_000, 200_000);
  } else if (kind === 'multi') {
    const n = rng.int(2, 3);
    for (let i = 0; i < n; i++) {
      const other = pop.other(rng, signer);
      msgs.push(rng.chance(0.6) ? cosmos.send(rng, signer, other) : vm.execute(rng, signer, other));
    }
    gasWanted = gas(rng, 250_000, 900_000);
  } else if (kind === 'ibc_out') {
    msgs.push(cosmos.ibcTransfer(rng, signer, slot.ms));
    gasWanted = gas(rng, 150_000, 300_000);
  } else {
    msgs.push(vm.execute(rng, signer, pop.other(rng, signer)));
    gasWanted = gas(rng, 200_000, 800_000);
  }
  const memo = rng.chance(0.12) ? rng.pick(MEMOS) : '';
  if (!rng.chance(env.p.failShare)) return { signer, msgs, gasWanted, memo };
  const fail: Failure = rng.chance(0.15) ? { code: 11, codespace: 'sdk', log: '', outOfGas: true } : rng.pick(FAILURES);
  if (fail.outOfGas) fail.log = `out of gas in location: WriteFlat; gasWanted: ${gasWanted}, gasUsed: ${gasWanted + 1}: out of gas`;
  return { signer, msgs, gasWanted, memo, fail };
}

function link(env: ComposeEnv, token: Token, slot: TxSlot): void {
  env.tokenTxs?.writeObject({
    collection_addr: env.book.collectionText(token.col),
    token_id: token.tokenId,
    sequence: slot.sequence,
  });
}

function createCollection(env: ComposeEnv, rng: Prng, slot: TxSlot): TxDraft {
  const { book, pop, vm, cosmos } = env;
  if (!book.nextIsBridged()) {
    const col = book.create(rng, pop.sender(rng), slot);
    return { signer: col.creator, msgs: [vm.createCollection(rng, col)], gasWanted: gas(rng, 1_000_000, 3_000_000) };
  }
  // A collection bridged from L1 appears with its first tokens, inside an ICS-721 packet.
  const relayer = pop.relayer;
  const col = book.create(rng, relayer, slot);
  const receiver = pop.other(rng, relayer);
  const tokens = Array.from({ length: rng.int(1, 3) }, () => book.mint(rng, col, receiver, slot));
  tokens.forEach((t) => link(env, t, slot));
  const events = [...vm.createCollection(rng, col).events, ...vm.mintEvents(col, tokens)];
  const recv = cosmos.nftReceive(
    rng,
    relayer,
    slot.ms,
    '0x' + rng.bytes(32).toString('hex'),
    col.originName,
    tokens.map((t) => t.tokenId),
    receiver,
    events,
  );
  return { signer: relayer, msgs: [cosmos.updateClient(rng, relayer, slot.ms), recv], gasWanted: gas(rng, 800_000, 1_500_000) };
}

function mint(env: ComposeEnv, rng: Prng, slot: TxSlot): TxDraft {
  const { book, pop, vm, cosmos, p } = env;
  const col = rng.pick(book.collections);
  const bridged = col.originName !== '';
  const receiver = !bridged && rng.chance(0.4) ? col.creator : pop.other(rng, col.creator);
  const n = rng.int(p.mintBatch[0], p.mintBatch[1]);
  const tokens = Array.from({ length: n }, () => book.mint(rng, col, receiver, slot));
  tokens.forEach((t) => link(env, t, slot));
  const gasWanted = gas(rng, 300_000, 400_000) + 150_000 * n;
  if (!bridged) return { signer: col.creator, msgs: vm.mint(rng, col, tokens), gasWanted };
  const recv = cosmos.nftReceive(
    rng,
    col.creator,
    slot.ms,
    '0x' + rng.bytes(32).toString('hex'),
    col.originName,
    tokens.map((t) => t.tokenId),
    receiver,
    vm.mintEvents(col, tokens),
  );
  return { signer: col.creator, msgs: [cosmos.updateClient(rng, col.creator, slot.ms), recv], gasWanted };
}

function transferNft(env: ComposeEnv, rng: Prng, slot: TxSlot, token: Token): TxDraft {
  const { book, pop, vm } = env;
  const from = token.owner as Account;
  const to: Holder = vm.nftReceiver && rng.chance(0.1) ? vm.nftReceiver(rng) : pop.other(rng, from);
  const msg = vm.transfer(rng, token, from, to);
  book.transfer(token, to, slot);
  link(env, token, slot);
  return { signer: from, msgs: [msg], gasWanted: gas(rng, 200_000, 400_000) };
}

function burnNft(env: ComposeEnv, rng: Prng, slot: TxSlot, token: Token): TxDraft {
  const owner = token.owner as Account;
  const msg = env.vm.burn(rng, token, owner);
  env.book.burn(token);
  link(env, token, slot);
  return { signer: owner, msgs: [msg], gasWanted: gas(rng, 150_000, 250_000) };
}
