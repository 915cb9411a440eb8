#!/usr/bin/env bash
# Installs what `make image` and test/deploy/image.test.ts need, from Debian's packages, only
# those missing (idempotent; apt-get update first): buildah builds the image, umoci unpacks it
# for the chroot run, podman runs it. runc too: crun (podman's default runtime) refuses a
# machine whose cgroup v2 hierarchy has controllers while v1 is mounted ("cgroups in hybrid
# mode not supported"); runc runs there, and the test uses whichever runtime works.
set -euo pipefail
missing=()
for tool in buildah umoci podman runc; do
  command -v "$tool" >/dev/null 2>&1 || [[ -x /usr/sbin/$tool ]] || missing+=("$tool")
done
if (( ${#missing[@]} )); then
  sudo=""
  if [[ "$(id -u)" != 0 ]]; then sudo="sudo"; fi
  $sudo apt-get update -qq >&2
  # with podman's recommends: its network stack's iptables rules, slirp4netns, fuse-overlayfs
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
fi
