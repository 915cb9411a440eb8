#!/bin/bash
# Where a poll's CPU goes, pass by pass (#42, bench/README.md "Where a first poll's CPU goes"):
# serve pinned to CPU 1 with V8's perf map, then three passes of wrk (CPU 0) over the wallets'
# seeded ETags (a TSV bench/restarts.js wrote: PATH<TAB>ETAG), each under `perf record -g`, the
# process's CPU counters after each. Compare pass 1 (every poll decided from the file's versions)
# with pass 2 (from the key table):
#   perf report -i OUT/perf1.data --no-children --sort dso -g none
#   perf report -i OUT/perf1.data --children --sort sym -g none
#
#   bench/perf-pass.sh DB TSV OUTDIR [RATE=5000] [SECONDS=20]
set -euo pipefail
DB=$(realpath "$1"); TSV=$(realpath "$2"); OUT=$3; RATE=${4:-5000}; SECS=${5:-20}
HERE=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
# node's own logs (isolate-*.log) land there, not in the checkout
cd "$OUT"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
taskset -c 1 node --perf-basic-prof "$HERE/build/src/cli.js" serve --db "$DB" --port "$PORT" --workers 1 --log-level warn --no-explorer &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
until curl -sf "http://127.0.0.1:$PORT/ready" >/dev/null; do sleep 0.2; done
sleep 1
for pass in 1 2 3; do
  perf record -F 2000 -g -p "$PID" -o "$OUT/perf$pass.data" -- sleep "$SECS" 2>/dev/null &
  PP=$!
  taskset -c 0 wrk -t 1 -c 32 -d "${SECS}s" --timeout 10s -s "$HERE/bench/wrk/wallets.lua" "http://127.0.0.1:$PORT" -- "$TSV" "$RATE" - 1 | tail -1
  wait $PP
  curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^process_cpu_(user|system)_seconds_total' || true
done
