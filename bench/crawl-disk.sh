#!/usr/bin/env bash
# A crawl's footprint (issue #43): `import --from-api` of SOURCE.sqlite served by a `serve` on
# 127.0.0.1, the disk of its --out folder (the staging .NAME.crawl and its -wal, the temporary
# output or the load `.NAME.load`, --out) plus the files the importer holds open that are
# deleted (SQLite's temporary files, e.g. a CREATE INDEX sort's, wherever they are), and the
# importer's RSS, sampled every 0.2 s; wall and CPU (user + sys) of the importer, the final
# snapshot's size and the ratio peak disk / snapshot. One line per run.
#
#   bench/crawl-disk.sh SOURCE.sqlite WORKDIR [RUNS] [-- import options...]
#
# The crawl's own CPU is the importer's (the source `serve` runs in another process). Run with
# the load average written down (uptime): the machine is shared.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$1 work=$2 runs=${3:-1}
shift $(( $# >= 3 ? 3 : 2 ))
[ "${1:-}" = "--" ] && shift
port=${PORT:-7391}
node build/src/cli.js serve --db "$src" --port "$port" --log-level warn >/dev/null 2>&1 &
spid=$!
trap 'kill $spid 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/status" >/dev/null && break; sleep 0.2; done
mkdir -p "$work"
for r in $(seq "$runs"); do
  rm -rf "${work:?}"/* "$work"/.[!.]* 2>/dev/null || true
  load=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -f '%e %U %S %M' -o "$work/../time.$r" node build/src/cli.js import --from-api "http://127.0.0.1:$port" \
    --out "$work/chain.sqlite" --quiet "$@" &
  tpid=$!
  sleep 0.2
  ipid=$(pgrep -P "$tpid" | head -1 || true)
  peak_disk=0 peak_rss=0 peak_temp=0
  while kill -0 "$tpid" 2>/dev/null; do
    d=$(du -s --block-size=1 "$work" 2>/dev/null | cut -f1 || echo 0)
    t=0
    if [ -n "$ipid" ]; then
      for f in $(find "/proc/$ipid/fd" -lname '*(deleted)' 2>/dev/null); do
        t=$(( t + $(stat -L -c %s "$f" 2>/dev/null || echo 0) ))
      done
    fi
    (( t > peak_temp )) && peak_temp=$t
    d=$(( d + t ))
    (( d > peak_disk )) && peak_disk=$d
    if [ -n "$ipid" ] && [ -r "/proc/$ipid/status" ]; then
      m=$(awk '/^VmRSS/ {print $2 * 1024}' "/proc/$ipid/status" 2>/dev/null || echo 0)
      (( m > peak_rss )) && peak_rss=$m
    fi
    sleep 0.2
  done
  wait "$tpid"
  read -r wall user sys maxrss_kb <"$work/../time.$r"
  size=$(stat -c %s "$work/chain.sqlite")
  python3 - "$r" "$load" "$wall" "$user" "$sys" "$maxrss_kb" "$peak_rss" "$peak_disk" "$size" "$peak_temp" <<'EOF'
import sys
r, load, wall, user, sys_, maxrss, rss, disk, size, temp = sys.argv[1:]
cpu = float(user) + float(sys_)
print(f"run {r}: load {load}, wall {float(wall):.1f} s, cpu {cpu:.1f} s, peak RSS {int(maxrss)/1024:.0f} MiB "
      f"(sampled {int(rss)/2**20:.0f} MiB), peak disk {int(disk)/2**20:.0f} MiB (deleted temp files at most {int(temp)/2**20:.0f} MiB), snapshot {int(size)/2**20:.0f} MiB, "
      f"peak disk / snapshot {int(disk)/int(size):.2f}")
EOF
done
