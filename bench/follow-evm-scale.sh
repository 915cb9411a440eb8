#!/usr/bin/env bash
# Issue #22's own scenario (bench/README.md "Follow at scale"): an EVM chain of 4000 txs with
# HOLDERS holders per ERC-20 (3 contracts: 3·HOLDERS rich-list rows), imported from its dump and
# served as the source; replicas crawled with `import --from-api --to-height TOP-1 (and TOP-2)
# --denoms <the 3 contracts>`; then `follow --from-api` on a copy of the TOP-2 replica applies
# TOP-1, then block TOP, whose log line's `applied in N ms` is the figure — without --denoms and
# with them, RUNS times each.
#
# The source serves the TOP-1 replica's file until follow has applied TOP-1 — with --denoms,
# and its rich-list refresh at start has logged — then the whole chain is renamed over it
# (serve --watch swaps it in): the batch of TOP is timed alone, on a warm process.
#
#   bench/follow-evm-scale.sh WORK [HOLDERS=100000] [RUNS=5]
set -euo pipefail
W=$1; H=${2:-100000}; RUNS=${3:-5}
CLI="$(cd "$(dirname "$0")/.." && pwd)/bin/indexer-api"
mkdir -p "$W"
D="$W/dump-evm-h$H"
if [ ! -f "$D/.complete" ]; then
  "$CLI" generate --vm evm --preset scale --txs 4000 --holders "$H" --out "$D" --force --quiet
  touch "$D/.complete"
fi
[ -f "$W/full-h$H.sqlite" ] || "$CLI" import --from-dump "$D" --out "$W/full-h$H.sqlite" --quiet
DENOMS=$(node -e 'const fs=require("fs");console.log(fs.readFileSync(process.argv[1],"utf8").trim().split("\n").map((l)=>JSON.parse(l).contract).join(","))' "$D/denom_contracts.ndjson")
ROWS=$(node -e 'const D=require("better-sqlite3");const db=new D(process.argv[1],{readonly:true});console.log(db.prepare("SELECT count(*) FROM richlist").pluck().get())' "$W/full-h$H.sqlite")
port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
height() { node -e 'fetch(process.argv[1]+"/status").then((r)=>r.json()).then((s)=>console.log(s.height))' "$1"; }

P=$(port); URL="http://127.0.0.1:$P"
cp "$W/full-h$H.sqlite" "$W/src.sqlite"
"$CLI" serve --db "$W/src.sqlite" --port "$P" --workers 1 --watch --log-level "${SERVE_LOG:-warn}" >"$W/serve.out" 2>"$W/serve.log" &
SERVE=$!
trap 'kill $SERVE 2>/dev/null || true' EXIT
until height "$URL" >/dev/null 2>&1; do sleep 0.2; done
TOP=$(height "$URL")
if [ ! -f "$W/replica-h$H.sqlite" ]; then
  "$CLI" import --from-api "$URL" --to-height $((TOP - 1)) --denoms "$DENOMS" --out "$W/replica-h$H.sqlite" --quiet
fi
if [ ! -f "$W/replica2-h$H.sqlite" ]; then
  "$CLI" import --from-api "$URL" --to-height $((TOP - 2)) --denoms "$DENOMS" --out "$W/replica2-h$H.sqlite" --quiet
fi
echo "EVM, 4000 txs, $ROWS rich-list rows ($H holders x 3 ERC-20s), follow applies height $TOP; load $(cut -d' ' -f1 /proc/loadavg)"
for mode in none denoms; do
  for run in $(seq 1 "$RUNS"); do
    cp "$W/replica2-h$H.sqlite" "$W/live.sqlite"; rm -f "$W/live.sqlite-wal" "$W/live.sqlite-shm"
    sync # the copy's dirty pages are written back now, not by the batch's first fsync
    args=(--db "$W/live.sqlite" --from-api "$URL" --interval 50ms --collections-audit-interval 0)
    # the source at TOP-1 (the first replica's file): follow applies TOP-1 (and, with --denoms,
    # refreshes the rich list at start); then the whole chain is renamed over it and the batch
    # of TOP is timed alone, on a warm process
    cp "$W/replica-h$H.sqlite" "$W/src.next"; sync; mv "$W/src.next" "$W/src.sqlite"
    until [ "$(height "$URL")" = $((TOP - 1)) ]; do sleep 0.1; done
    if [ "$mode" = denoms ]; then args+=(--denoms "$DENOMS" --richlist-interval 10m); else args+=(--richlist-interval 0); fi
    "$CLI" follow "${args[@]}" 2>"$W/follow.log" &
    F=$!
    until grep -q "heights [0-9]*\.\.$((TOP - 1)) " "$W/follow.log"; do sleep 0.1; done
    if [ "$mode" = denoms ]; then until grep -q "rich list at height" "$W/follow.log"; do sleep 0.1; done; fi
    sleep 1
    cp "$W/full-h$H.sqlite" "$W/src.next"; sync; mv "$W/src.next" "$W/src.sqlite"
    until grep -q "heights [0-9]*\.\.$TOP " "$W/follow.log"; do sleep 0.1; done
    kill -INT $F; wait $F || true
    line=$(grep "heights [0-9]*\.\.$TOP " "$W/follow.log")
    ms=$(sed -E 's/.* applied in ([0-9]+) ms.*/\1/' <<<"$line")
    echo "$mode run $run: batch $ms ms, load $(cut -d' ' -f1 /proc/loadavg) | $(sed -E 's/.*applied in [0-9]+ ms //' <<<"$line" | cut -c1-160)"
    [ "$mode" = denoms ] && grep "rich list at height" "$W/follow.log" | head -1 | sed 's/^/  /' | cut -c1-220
  done
done
