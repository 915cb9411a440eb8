#!/usr/bin/env python3
"""An earlier version of a generated chain: its dump cut at a height (bench/restarts.ts, `pull`).

    python3 bench/dump-prefix.py DUMP_DIR OUT_DIR HEIGHT

Blocks, txs and NFT <-> tx links up to HEIGHT are the chain's own (the same rows as in the whole
dump, so the snapshot imported from the cut and the one imported from the whole dump are two
versions of one chain built independently: every account's txs up to HEIGHT are equal). The NFT
state (collections, tokens) is the generator's final state restricted to what existed by HEIGHT
(rows whose `height` is <= HEIGHT): the generator writes no history of owners, so that part is an
approximation of the chain at HEIGHT — the benchmark polls the wallets' activity pages only,
which read no NFT row. meta.ndjson gets `height` HEIGHT. A gzip'd dump (NAME.ndjson.gz, `generate
--gzip`) is cut into a gzip'd one (level 1).
"""
import gzip
import json
import os
import re
import sys

src, out, top = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(out, exist_ok=True)
height_re = re.compile(rb'"height":"?(\d+)')
seq_re = re.compile(rb'"sequence":(\d+)')


def copy_while(name, keep):
    path = os.path.join(src, name)
    opener = open
    if not os.path.exists(path):
        if not os.path.exists(path + '.gz'):
            return 0
        path, name = path + '.gz', name + '.gz'
        opener = lambda p, m: gzip.open(p, m, compresslevel=1) if 'w' in m else gzip.open(p, m)
    n = 0
    with opener(path, 'rb') as f, opener(os.path.join(out, name), 'wb') as w:
        for line in f:
            if keep(line):
                w.write(line)
                n += 1
    return n


def height_of(line):
    m = height_re.search(line)
    return int(m.group(1)) if m else 0


max_seq = 0


def keep_tx(line):
    global max_seq
    if height_of(line) > top:
        return False
    m = seq_re.search(line)
    if m:
        max_seq = max(max_seq, int(m.group(1)))
    return True


meta_path = os.path.join(src, 'meta.ndjson')
with (open(meta_path) if os.path.exists(meta_path) else gzip.open(meta_path + '.gz', 'rt')) as f:
    meta = json.loads(f.readline())
meta['height'] = top
with open(os.path.join(out, 'meta.ndjson'), 'w') as w:
    w.write(json.dumps(meta) + '\n')
counts = {
    'blocks': copy_while('blocks.ndjson', lambda l: height_of(l) <= top),
    'txs': copy_while('txs.ndjson', keep_tx),
}
counts['token_txs'] = copy_while('token_txs.ndjson', lambda l: int(seq_re.search(l).group(1)) <= max_seq)
counts['collections'] = copy_while('collections.ndjson', lambda l: height_of(l) <= top)
counts['tokens'] = copy_while('tokens.ndjson', lambda l: height_of(l) <= top)
counts['validators'] = copy_while('validators.ndjson', lambda l: True)
print(json.dumps({'height': top, 'max_sequence': max_seq, **counts}))
