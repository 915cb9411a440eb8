#!/usr/bin/env bash
# Makes PostgreSQL server binaries available for the import tests (test/import/postgres.test.ts).
# The tests start their own throwaway server (initdb in a temp dir, 127.0.0.1, random port,
# run as the `postgres` OS user when the tests run as root); nothing is started here.
#
#   scripts/ci-postgres.sh            install if missing, print the bin dir
#   eval "$(scripts/ci-postgres.sh --env)"   also export PG_BIN and TEST_REQUIRE_POSTGRES=1
#
# On GitHub Actions the two variables are also appended to $GITHUB_ENV.
set -euo pipefail

find_bin() {
  if [[ -n "${PG_BIN:-}" && -x "$PG_BIN/initdb" ]]; then echo "$PG_BIN"; return 0; fi
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -n -r); do
    if [[ -x "$d/initdb" && -x "$d/postgres" ]]; then echo "$d"; return 0; fi
  done
  if command -v pg_config >/dev/null 2>&1; then
    d="$(pg_config --bindir)"
    if [[ -x "$d/initdb" ]]; then echo "$d"; return 0; fi
  fi
  return 1
}

if ! bin="$(find_bin)"; then
  sudo=""
  if [[ "$(id -u)" != 0 ]]; then sudo="sudo"; fi
  if command -v apt-get >/dev/null 2>&1; then
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >&2
  elif command -v apk >/dev/null 2>&1; then
    $sudo apk add --no-cache postgresql >&2
  elif command -v dnf >/dev/null 2>&1; then
    $sudo dnf install -y postgresql-server >&2
  else
    echo "ci-postgres: no apt-get, apk or dnf; install the PostgreSQL server binaries and set PG_BIN" >&2
    exit 1
  fi
  # The Debian package starts a cluster of its own; the tests do not use it.
  if command -v pg_lsclusters >/dev/null 2>&1 && command -v pg_ctlcluster >/dev/null 2>&1; then
    pg_lsclusters -h 2>/dev/null | while read -r ver name _; do $sudo pg_ctlcluster "$ver" "$name" stop >&2 || true; done
  fi
  bin="$(find_bin)" || { echo "ci-postgres: installed, but initdb is still not found" >&2; exit 1; }
fi

# As root, the server runs as the `postgres` OS user: make sure it exists.
if [[ "$(id -u)" == 0 ]] && ! id postgres >/dev/null 2>&1; then
  useradd --system --home-dir /var/lib/postgresql --shell /bin/false postgres
fi

if [[ "${1:-}" == "--env" ]]; then
  echo "export PG_BIN='$bin'"
  echo "export TEST_REQUIRE_POSTGRES=1"
else
  echo "$bin"
fi
if [[ -n "${GITHUB_ENV:-}" ]]; then
  { echo "PG_BIN=$bin"; echo "TEST_REQUIRE_POSTGRES=1"; } >> "$GITHUB_ENV"
fi
