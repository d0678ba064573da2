#!/bin/sh
# Makes a folder of the Debian libraries the full `gpuslice` build links (gRPC,
# protobuf-c, libyaml, libcurl, cJSON, libmicrohttpd and what they need), for a GPU
# machine that has none of them: bench/node.py --libs DIR puts it on the agent's
# library path. Run on Debian 12 (apt-get download, dpkg -x); glibc, libgcc and
# libstdc++ are left to the GPU machine's own, which are newer.
#   sh bench/node_libs.sh GPUSLICE_BINARY OUT_DIR
set -eu
[ $# = 2 ] || { echo "usage: $0 GPUSLICE_BINARY OUT_DIR" >&2; exit 2; }
BIN=$1 OUT=$2
SRC=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d /tmp/gs-node-libs.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pkgs=$("$SRC/scripts/runtime-packages.sh" "$BIN" | grep -vx 'libc6\|libgcc-s1\|libstdc++6')
(cd "$tmp" && apt-get download $pkgs >/dev/null)
mkdir -p "$OUT" "$tmp/x"
for deb in "$tmp"/*.deb; do dpkg -x "$deb" "$tmp/x"; done
find "$tmp/x" -name '*.so*' \( -type f -o -type l \) -exec cp -a {} "$OUT/" \;
echo "node_libs: $(ls "$OUT" | wc -l) files from $(echo "$pkgs" | wc -l) packages in $OUT ($(du -sh "$OUT" | cut -f1))"
