#!/usr/bin/env bash
# One pass of a wallet population against a running serve: its user and system CPU a poll and
# its minor page faults a poll, from /proc/PID/stat before and after (bench/README.md "This
# session: the pages read before serving, one lock a turn"). wrk on CPU 0 (serve pinned to 1).
#
#   bench/pass-cpu.sh PID TSV [RATE 5000] [SECONDS 20] [URL http://127.0.0.1:7711]
#
# TSV: `path<TAB>etag` lines (bench/restarts.ts writes them in its --work directory).
set -euo pipefail
pid=$1 tsv=$2 rate=${3:-5000} secs=${4:-20} url=${5:-http://127.0.0.1:7711}
here=$(cd "$(dirname "$0")" && pwd)
stat() { awk '{print $14, $15, $10}' "/proc/$pid/stat"; }
read -r u0 s0 f0 < <(stat)
out=$(taskset -c 0 wrk -t1 -c32 -d"${secs}s" -s "$here/wrk/wallets.lua" "$url" -- "$tsv" "$rate" - 1 | tail -n 1)
read -r u1 s1 f1 < <(stat)
n=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])')
tick=$(getconf CLK_TCK)
python3 -c "n=$n; t=$tick; print(f'polls {n}  user µs {($u1-$u0)*1e6/t/n:.1f}  sys µs {($s1-$s0)*1e6/t/n:.1f}  minflt a poll {($f1-$f0)/n:.2f}')"
