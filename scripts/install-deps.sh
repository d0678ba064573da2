#!/bin/sh
# Installs everything gpuslice needs to build and test, from Debian's archive only.
# Idempotent: packages already present are left alone. Run as root on Debian 12.
set -eu
# --build: only what building gpuslice needs (the image's build stage);
# without it, the tests' tools too.
BUILD_PKGS="build-essential pkg-config make
libgrpc-dev libprotobuf-c-dev protobuf-c-compiler
libmicrohttpd-dev libcjson-dev libyaml-dev libcurl4-openssl-dev libssl-dev"
TEST_PKGS="clang-format protobuf-compiler libcmocka-dev
python3 python3-grpcio python3-grpc-tools python3-protobuf python3-yaml
golang-go golang-google-grpc-dev golang-google-protobuf-dev golang-goprotobuf-dev
openssl
groff-base man-db zsh
podman runc mmdebstrap prometheus chromium"
case "${1:-}" in
    --build) PKGS=$BUILD_PKGS ;;
    "") PKGS="$BUILD_PKGS $TEST_PKGS" ;;
    *) echo "usage: $0 [--build]" >&2; exit 2 ;;
esac
missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
if [ -z "$missing" ]; then
    echo "install-deps: all build and test packages present"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "install-deps: missing packages:$missing" >&2
    echo "install-deps: run this script as root (or: sudo $0)" >&2
    exit 1
fi
echo "install-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "install-deps: done"
