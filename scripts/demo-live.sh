#!/usr/bin/env bash
# make demo-live: watch `follow`, the explorer and the live response cache at work, without code
# (README "Watch a replica follow a growing chain"). Three processes:
#   1. the source: a bundled demo chain whose /status grows one block every BLOCK_MS
#      (serve --start-height, src/serve/growth.ts), on a free port;
#   2. follow: a replica file beside it, imported from the source, then one batch per new block;
#   3. serve: the replica with the explorer on http://127.0.0.1:PORT/ (in the foreground).
# PORT is checked first (before anything is imported). Ctrl-C stops all three and removes the
# replica; so does any one of them stopping on its own (or killed), with one line saying which.
# Settings: DEMO=move|wasm|evm [move], PORT [8080], START (the height the chain starts at) [100],
# BLOCK_MS [1000], KEEP=DIR (keep the replica and the logs in DIR instead of a temporary directory).
set -euo pipefail
cd "$(dirname "$0")/.."

vm=${DEMO:-move}
port=${PORT:-8080}
start=${START:-100}
block_ms=${BLOCK_MS:-1000}
cli=(node bin/indexer-api)

# The replica's port, before anything starts: a busy one is said at once, not after the import.
if ! node -e '
  const port = Number(process.argv[1]);
  const s = require("node:net").createServer();
  s.once("error", (e) => {
    const why = e.code === "EADDRINUSE" ? "is in use (another server?)" : e.code === "EACCES" ? "needs privileges (below 1024)" : e.message;
    process.stderr.write(`demo-live: port ${port} on 127.0.0.1 ${why}: stop what holds it, or pick another, e.g. make demo-live PORT=9000\n`);
    process.exit(1);
  });
  s.listen(port, "127.0.0.1", () => s.close());
' "$port"; then
  exit 1
fi

if [[ -n "${KEEP:-}" ]]; then work=$KEEP; mkdir -p "$work"; else work=$(mktemp -d "${TMPDIR:-/tmp}/indexer-api-demo-live.XXXXXX"); fi
pids=()
# what each process is, and its log (for the line said when it stops)
declare -A names=() logs=()
cleanup() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [[ -z "${KEEP:-}" ]]; then rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# One of the processes has stopped: one line naming it (its exit status, its last log line), then
# exit 1 — the EXIT trap stops the others.
stopped() {
  local pid=$1 status=$2 last=''
  if [[ -n "${logs[$pid]:-}" ]]; then last=$(grep -v '^[[:space:]]*$' "${logs[$pid]}" 2>/dev/null | tail -n 1 || true); fi
  echo "demo-live: ${names[$pid]} stopped (exit status $status), so the demo stops${last:+; its last log line: $last}" >&2
  exit 1
}

# The first process found stopped, if any (its pid and status), without waiting.
check_running() {
  local pid status
  for pid in "${pids[@]}"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      status=0; wait "$pid" 2>/dev/null || status=$?
      stopped "$pid" "$status"
    fi
  done
}

# Waits until FILE has a line matching RE (a process's log), or fails naming WHAT; a process
# that stops meanwhile stops the demo at once.
wait_for() {
  local file=$1 re=$2 what=$3
  for _ in $(seq 600); do
    if grep -Eq "$re" "$file" 2>/dev/null; then return 0; fi
    check_running
    sleep 0.1
  done
  echo "demo-live: gave up waiting for $what; its log:" >&2
  cat "$file" >&2
  exit 1
}

# 1. the growing source (its own explorer off: the replica's is the one to watch)
"${cli[@]}" serve --demo "$vm" --start-height "$start" --block-ms "$block_ms" --port 0 --workers 1 \
  --no-explorer --log-level warn >"$work/source.out" 2>"$work/source.err" &
pids+=($!); names[$!]='the source (serve --start-height)'; logs[$!]=$work/source.err
wait_for "$work/source.out" '^listening http' 'the source to listen'
source_url=$(sed -n '1s/^listening //p' "$work/source.out")

# 2. the replica's follower: its batch lines go to the terminal and to its log
"${cli[@]}" follow --db "$work/replica.sqlite" --from-api "$source_url" --interval 500ms --log-format text \
  2> >(tee "$work/follow.log" >&2) &
pids+=($!); names[$!]='follow'; logs[$!]=$work/follow.log
wait_for "$work/follow.log" 'following api ' 'follow to import the first heights'

cat >&2 <<EOF

demo-live: the $vm demo chain grows from height $start, a block every ${block_ms} ms ($source_url/status);
  follow appends each block to $work/replica.sqlite, served with the explorer below.
  Open http://127.0.0.1:$port/ (the explorer: its block list moves as blocks arrive), or
    curl -s http://127.0.0.1:$port/status                              # the height follow reached
    curl -s http://127.0.0.1:$port/metrics | grep -E 'response_cache_(hits|misses|invalidated)_total'   # the live cache
  Ctrl-C stops the three processes (and so does any one of them stopping).

EOF

# 3. the replica, with the explorer; its log on the terminal
"${cli[@]}" serve --db "$work/replica.sqlite" --port "$port" --workers 1 --log-level warn &
pids+=($!); names[$!]="the replica's serve (port $port)"

# Until Ctrl-C (the INT trap) or one of the three stopping: then all stop.
status=0
wait -n "${pids[@]}" || status=$?
for pid in "${pids[@]}"; do
  if ! kill -0 "$pid" 2>/dev/null; then stopped "$pid" "$status"; fi
done
echo "demo-live: a process stopped (exit status $status), so the demo stops" >&2
exit 1
