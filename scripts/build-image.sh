#!/usr/bin/env bash
# `make image`: the container image of deploy/Containerfile, built offline from dist/indexer-api
# (`make binary`) and the shared libraries it links — FROM scratch, no registry is contacted.
# Writes an OCI image layout to dist/image (tag = package.json version) and tags the image
# localhost/indexer-api:<version> and :latest in the local containers-storage (podman sees it).
# Needs buildah (Debian: apt-get install buildah; scripts/ci-container.sh). docs/scaling.md
# "Container image" says how to push and run it.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "build-image: error: $*" >&2; exit 1; }
log() { echo "build-image: $*" >&2; }

BIN=dist/indexer-api
# The addon the executable unpacks (src/sqlite.ts) is this file (scripts/build-binary.js ASSETS):
# its libraries must be in the image too, although today they are a subset of the executable's.
ADDON=node_modules/better-sqlite3/build/Release/better_sqlite3.node
NAME=${IMAGE_NAME:-indexer-api}
VERSION=$(node -p 'require("./package.json").version')
CTX=dist/.image-build
OUT=dist/image
UID_GID=10001:10001

[[ -x $BIN ]] || die "$BIN does not exist: run \`make binary\` first"
[[ -f $ADDON ]] || die "$ADDON does not exist: run \`make deps\` first"
command -v buildah >/dev/null || die "buildah is not installed (Debian: apt-get install buildah, or scripts/ci-container.sh)"
command -v ldd >/dev/null || die "ldd is not installed (Debian: libc-bin)"

rm -rf "$CTX"
mkdir -p "$CTX/rootfs/usr/local/bin" "$CTX/rootfs/etc" "$CTX/state/cache" "$CTX/state/data"
install -m 0755 "$BIN" "$CTX/rootfs/usr/local/bin/indexer-api"

# Every absolute path ldd resolves (the libraries and the ELF interpreter), copied to the same
# path with symlinks followed: no /etc/ld.so.cache is needed, since the loader searches
# /lib/x86_64-linux-gnu by default on Debian and the interpreter is named by its full path.
libs=$(for f in "$BIN" "$ADDON"; do
  out=$(ldd "$f") || die "ldd $f failed: $out"
  grep -q 'not found' <<<"$out" && die "ldd $f: a library is missing on this machine:"$'\n'"$out"
  awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$out"
done | sort -u)
[[ -n $libs ]] || die "ldd listed no libraries for $BIN (is it statically linked? then this script needs no libraries, but check)"
for lib in $libs; do
  mkdir -p "$CTX/rootfs$(dirname "$lib")"
  install -m 0755 "$(readlink -f "$lib")" "$CTX/rootfs$lib"
done

# A name for the user (ps, id); the executable itself needs no passwd entry (XDG_CACHE_HOME is set).
printf 'root:x:0:0:root:/:/sbin/nologin\nindexer:x:%s:%s:indexer-api:/data:/sbin/nologin\n' "${UID_GID%%:*}" "${UID_GID##*:}" >"$CTX/rootfs/etc/passwd"
printf 'root:x:0:\nindexer:x:%s:\n' "${UID_GID##*:}" >"$CTX/rootfs/etc/group"
# Mount points a runtime or a chroot needs; /tmp for SQLite's temporary files if it is not a tmpfs.
mkdir -p "$CTX/rootfs/proc" "$CTX/rootfs/dev" "$CTX/rootfs/sys" "$CTX/rootfs/tmp"
chmod 1777 "$CTX/rootfs/tmp"
chmod 0755 "$CTX/state/cache" "$CTX/state/data"

commit=$(node -p 'require("./build/build-info.json").commit' 2>/dev/null || echo unknown)
# The commit's time for every timestamp: the same inputs give the same layer and config.
epoch=$(git log -1 --format=%ct 2>/dev/null || echo 0)
log "building $NAME:$VERSION from $BIN ($(du -sh "$CTX/rootfs" | cut -f1) with $(wc -w <<<"$libs") libraries)"
previous=$(buildah images --quiet --no-trunc "localhost/$NAME:$VERSION" 2>/dev/null || true)
buildah build --quiet --layers=false --timestamp "$epoch" \
  --label org.opencontainers.image.title=indexer-api \
  --label org.opencontainers.image.version="$VERSION" \
  --label org.opencontainers.image.revision="$commit" \
  -f deploy/Containerfile -t "localhost/$NAME:$VERSION" -t "localhost/$NAME:latest" "$CTX" >/dev/null

# The image these tags named before, now untagged, would keep its 170 MB; one still tagged
# otherwise (e.g. for a registry) or used by a container is left alone (rmi refuses it).
current=$(buildah images --quiet --no-trunc "localhost/$NAME:$VERSION")
if [[ -n $previous && $previous != "$current" ]]; then buildah rmi "$previous" >/dev/null 2>&1 || true; fi

rm -rf "$OUT.tmp"
buildah push --quiet "localhost/$NAME:$VERSION" "oci:$OUT.tmp:$VERSION"
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
rm -rf "$CTX"
log "wrote $OUT (OCI layout, tag $VERSION; $(du -sh "$OUT" | cut -f1)) and localhost/$NAME:$VERSION, localhost/$NAME:latest"
