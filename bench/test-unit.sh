#!/usr/bin/env bash
# `make test-unit` N times (default 3): wall and CPU (user+sys) seconds of each run, then the
# medians. The issue's figure is "under a minute" for the edit–test loop; on a shared machine
# the CPU seconds say more than the wall time, so both are printed with the load average.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
walls=(); cpus=()
for i in $(seq "$runs"); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  out=$( { /usr/bin/time -f '%e %U %S' make -s test-unit >/dev/null; } 2>&1 | tail -1)
  read -r wall user sys <<<"$out"
  cpu=$(python3 -c "print(round($user + $sys, 1))")
  echo "run $i: wall ${wall}s, cpu ${cpu}s, load average at start ${load}"
  walls+=("$wall"); cpus+=("$cpu")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "median of $runs: wall $(median "${walls[@]}")s, cpu $(median "${cpus[@]}")s ($(nproc) cores)"
