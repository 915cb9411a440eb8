#!/usr/bin/env bash
# Follow batches on a big chain (#43 "Measured at 5M txs", bench/README.md): SOURCE.sqlite served
# by `serve` on 127.0.0.1, `follow` on a copy of REPLICA.sqlite (the same chain cut lower: it
# catches up BATCH heights at a time), BATCHES batches, then stopped; prints follow's start
# (open, switch to WAL, its indexes) and the median / p90 / max of "applied in N ms" over the
# batches after the first (the first also writes what a file of an older schema lacks).
#
#   bench/follow-batches.sh SOURCE.sqlite REPLICA.sqlite WORKDIR [BATCHES=60] [BATCH=1]
#   (IN_PLACE=1: follow REPLICA itself, which it changes, instead of a copy in WORKDIR)
set -euo pipefail
cd "$(dirname "$0")/.."
src=$1 replica=$2 work=$3 batches=${4:-60} batch=${5:-1}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
mkdir -p "$work"
if [ "${IN_PLACE:-0}" = 1 ]; then
  db=$replica
else
  db="$work/replica.sqlite"
  rm -f "$db" "$db-wal" "$db-shm"
  cp "$replica" "$db"
fi
node build/src/cli.js serve --db "$src" --port "$port" --log-level warn --no-explorer >/dev/null 2>&1 &
spid=$!
trap 'kill $spid 2>/dev/null || true; kill $fpid 2>/dev/null || true' EXIT
for _ in $(seq 300); do curl -sf "http://127.0.0.1:$port/ready" >/dev/null && break; sleep 0.2; done
echo "load $(cut -d' ' -f1 /proc/loadavg); source $src, replica $replica, $batch height(s) a batch"
start=$(date +%s%N)
node build/src/cli.js follow --db "$db" --from-api "http://127.0.0.1:$port" --batch-blocks "$batch" --interval 100ms >"$work/follow.log" 2>&1 &
fpid=$!
until grep -q "follow: heights" "$work/follow.log"; do
  kill -0 $fpid 2>/dev/null || { cat "$work/follow.log"; exit 1; }
  sleep 0.1
done
echo "first batch applied $(( ($(date +%s%N) - start) / 1000000 )) ms after follow's start"
until [ "$(grep -c 'follow: heights' "$work/follow.log")" -gt "$batches" ]; do sleep 0.2; done
kill -TERM $fpid; wait $fpid || true
grep -o 'applied in [0-9]* ms' "$work/follow.log" | awk '{print $3}' | tail -n +2 | sort -n | awk '{a[NR]=$1} END {printf "batches after the first: %d, median %d ms, p90 %d ms, max %d ms\n", NR, a[int((NR+1)/2)], a[int(NR*0.9+0.5)], a[NR]}'
grep 'follow: heights' "$work/follow.log" | head -1
grep 'follow: heights' "$work/follow.log" | sed -n 30p
