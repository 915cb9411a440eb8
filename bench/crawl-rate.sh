#!/usr/bin/env bash
# The request rate a crawl reaches (issue #43 "Rate"): `import --from-api` of SOURCE.sqlite
# served by a `serve` on 127.0.0.1 with the given import options (e.g. --rate 20), the source's
# own count of the requests it answered (indexer_api_http_requests_total of its /metrics, the
# /metrics scrapes left out) read every second, and the importer's CPU (user + sys, /proc) over
# the same seconds. One line per second while the crawl asks (the load after it asks nothing),
# then the crawl's requests a second: median, mean, min and max over its whole seconds.
#
#   bench/crawl-rate.sh SOURCE.sqlite WORKDIR [SECONDS] [-- import options...]
#
# SECONDS (default: until the crawl is done): stop the importer after that many seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$1 work=$2 secs=${3:-0}
shift $(( $# >= 3 ? 3 : 2 ))
[ "${1:-}" = "--" ] && shift
port=${PORT:-7391}
# one process: its /metrics counts every request (a cluster worker counts its own)
node build/src/cli.js serve --db "$src" --port "$port" --workers 1 --log-level warn >/dev/null 2>&1 &
spid=$!
ipid=
trap 'kill $spid 2>/dev/null || true; [ -n "$ipid" ] && kill $ipid 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/status" >/dev/null && break; sleep 0.2; done
rm -rf "$work"
mkdir -p "$work"
answered() {
  curl -sf "http://127.0.0.1:$port/metrics" |
    awk '/^indexer_api_http_requests_total/ && !/route="\/metrics"/ { n += $NF } END { print n + 0 }'
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
hz=$(getconf CLK_TCK)
echo "load $(cut -d' ' -f1 /proc/loadavg), import options: $*"
node build/src/cli.js import --from-api "http://127.0.0.1:$port" --out "$work/chain.sqlite" --quiet "$@" &
ipid=$!
prev=$(answered) prevcpu=$(cpu_ticks "$ipid") t=0 prevt=$(date +%s.%N)
: >"$work/rates"
while kill -0 "$ipid" 2>/dev/null; do
  sleep 1
  t=$((t + 1))
  now=$(answered) cpu=$(cpu_ticks "$ipid") nowt=$(date +%s.%N)
  n=$((now - prev))
  # a second here is a little more than one (the scrape's own time): counts over the seconds elapsed
  rate=$(python3 -c "print(f'{$n / ($nowt - $prevt):.1f}')")
  echo "$t s: $n requests ($rate a second), importer CPU $(( (cpu - prevcpu) * 100 / hz )) %"
  # the crawl's seconds: those the source was asked anything in
  (( n > 0 )) && echo "$rate" >>"$work/rates"
  prev=$now prevcpu=$cpu prevt=$nowt
  if (( secs > 0 && t >= secs )); then kill "$ipid"; break; fi
done
wait "$ipid" 2>/dev/null || true
ipid=
python3 - "$work/rates" <<'EOF'
import statistics, sys
r = [float(x) for x in open(sys.argv[1]).read().split()]
# the first and last second are partial
whole = r[1:-1] if len(r) > 2 else r
print(f"crawl: {len(r)} s asking; requests a second over its whole seconds: median {statistics.median(whole):.1f}, mean {statistics.mean(whole):.1f}, min {min(whole):.1f}, max {max(whole):.1f}")
EOF
