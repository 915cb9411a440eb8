#!/usr/bin/env bash
# make demo-live: watch `follow`, the explorer and the live response cache at work, without code
# (README "Watch a replica follow a growing chain"). Three processes:
#   1. the source: a bundled demo chain whose /status grows one block every BLOCK_MS
#      (serve --start-height, src/serve/growth.ts), on a free port;
#   2. follow: a replica file beside it, imported from the source, then one batch per new block;
#   3. serve: the replica with the explorer on http://127.0.0.1:PORT/ (in the foreground).
# Ctrl-C stops all three and removes the replica. Settings: DEMO=move|wasm|evm [move],
# PORT [8080], START (the height the chain starts at) [100], BLOCK_MS [1000], KEEP=DIR (keep the
# replica and the logs in DIR instead of a temporary directory).
set -euo pipefail
cd "$(dirname "$0")/.."

vm=${DEMO:-move}
port=${PORT:-8080}
start=${START:-100}
block_ms=${BLOCK_MS:-1000}
cli=(node bin/indexer-api)

if [[ -n "${KEEP:-}" ]]; then work=$KEEP; mkdir -p "$work"; else work=$(mktemp -d "${TMPDIR:-/tmp}/indexer-api-demo-live.XXXXXX"); fi
pids=()
cleanup() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [[ -z "${KEEP:-}" ]]; then rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Waits until FILE has a line matching RE (a process's log), or fails naming WHAT.
wait_for() {
  local file=$1 re=$2 what=$3
  for _ in $(seq 600); do
    if grep -Eq "$re" "$file" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "demo-live: gave up waiting for $what; its log:" >&2
  cat "$file" >&2
  exit 1
}

# 1. the growing source (its own explorer off: the replica's is the one to watch)
"${cli[@]}" serve --demo "$vm" --start-height "$start" --block-ms "$block_ms" --port 0 --workers 1 \
  --no-explorer --log-level warn >"$work/source.out" 2>"$work/source.err" &
pids+=($!)
wait_for "$work/source.out" '^listening http' 'the source to listen'
source_url=$(sed -n '1s/^listening //p' "$work/source.out")

# 2. the replica's follower: its batch lines go to the terminal and to its log
"${cli[@]}" follow --db "$work/replica.sqlite" --from-api "$source_url" --interval 500ms --log-format text \
  2> >(tee "$work/follow.log" >&2) &
pids+=($!)
wait_for "$work/follow.log" 'following api ' 'follow to import the first heights'

cat >&2 <<EOF

demo-live: the $vm demo chain grows from height $start, a block every ${block_ms} ms ($source_url/status);
  follow appends each block to $work/replica.sqlite, served with the explorer below.
  Open http://127.0.0.1:$port/ (the explorer: its block list moves as blocks arrive), or
    curl -s http://127.0.0.1:$port/status                              # the height follow reached
    curl -s http://127.0.0.1:$port/metrics | grep -E 'response_cache_(hits|misses|invalidated)_total'   # the live cache
  Ctrl-C stops the three processes.

EOF

# 3. the replica, with the explorer, in the foreground
"${cli[@]}" serve --db "$work/replica.sqlite" --port "$port" --workers 1 --log-level warn &
pids+=($!)
wait "${pids[-1]}"
