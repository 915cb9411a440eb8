#!/usr/bin/env bash
# Makes Debian's chromium available for the explorer's browser test (test/explorer/explorer.test.ts,
# driven by playwright-core, which never downloads a browser). Idempotent: installs only if missing.
#
#   scripts/ci-chromium.sh     install if missing, print the executable's path
set -euo pipefail

exe="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [[ ! -x "$exe" ]]; then
  sudo=""
  if [[ "$(id -u)" != 0 ]]; then sudo="sudo"; fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "ci-chromium: no apt-get; install chromium and set CHROMIUM_PATH" >&2
    exit 1
  fi
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >&2
  [[ -x "$exe" ]] || { echo "ci-chromium: installed, but $exe is still missing" >&2; exit 1; }
fi
echo "$exe"
