#!/usr/bin/env bash
# Installs what the scale-out tests need (test/scale, test/pull, test/deploy): haproxy, nginx and
# iproute2 from Debian's packages, only those missing (idempotent; apt-get update first).
# nginx is only run by the tests, never as a service: its default site is not started here.
set -euo pipefail
missing=()
command -v haproxy >/dev/null 2>&1 || [[ -x /usr/sbin/haproxy ]] || missing+=(haproxy)
command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || missing+=(nginx)
command -v ip >/dev/null 2>&1 || [[ -x /usr/sbin/ip || -x /sbin/ip ]] || missing+=(iproute2)
if (( ${#missing[@]} )); then
  sudo=""
  if [[ "$(id -u)" != 0 ]]; then sudo="sudo"; fi
  $sudo apt-get update -qq >&2
  # policy-rc.d-less containers: keep the packages from starting their services.
  DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
