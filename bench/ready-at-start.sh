#!/usr/bin/env bash
# Start to /ready 200 of `serve` over FILE (issue #42, bench/README.md "Restarts under load"):
# once after `indexer-api check FILE` (the check recorded: the pages are not read again), RUNS
# times; then once more on a fresh copy of FILE (another inode: checked in full), for comparison.
#
#   bench/ready-at-start.sh FILE [RUNS]     (make build first; prints one line per start, ms)
set -euo pipefail
file=$1
runs=${2:-3}
cli="$(dirname "$0")/../bin/indexer-api"
ready_ms() {
  local f=$1 port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
  local start
  start=$(date +%s%N)
  node "$cli" serve --db "$f" --port "$port" --workers 1 --log-level warn --no-explorer >/dev/null 2>&1 &
  local pid=$!
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/ready")" = 200 ]; do
    kill -0 "$pid" 2>/dev/null || { echo "serve exited"; return 1; }
    sleep 0.02
  done
  echo $(( ($(date +%s%N) - start) / 1000000 ))
  kill -TERM "$pid"; wait "$pid" || true
}
size=$(stat -c %s "$file")
echo "file $file, $((size / 1000000)) MB; load $(cut -d' ' -f1 /proc/loadavg)"
node "$cli" check "$file"
for i in $(seq "$runs"); do echo "recorded check, start $i: $(ready_ms "$file") ms to /ready"; done
copy="$file.fresh-copy"
cp "$file" "$copy"
echo "a fresh copy (checked in full): $(ready_ms "$copy") ms to /ready"
rm -f "$copy" "$copy-wal" "$copy-shm"
