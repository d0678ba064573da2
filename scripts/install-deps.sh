#!/bin/sh
# Installs everything gpuslice needs to build and test, from Debian's archive only.
# Idempotent: packages already present are left alone. Run as root on Debian 12.
set -eu
# --build: only what building gpuslice needs (the image's build stage);
# --cross ARCH: that and the cross packages for ARCH (the image built for ARCH);
# without it, the tests' tools too.
BUILD_PKGS="build-essential pkg-config make
libgrpc-dev libprotobuf-c-dev protobuf-c-compiler
libmicrohttpd-dev libcjson-dev libyaml-dev libcurl4-openssl-dev libssl-dev"
TEST_PKGS="clang-format protobuf-compiler libcmocka-dev
python3 python3-grpcio python3-grpc-tools python3-protobuf python3-yaml
golang-go golang-google-grpc-dev golang-google-protobuf-dev golang-goprotobuf-dev
openssl
groff-base man-db zsh
podman runc mmdebstrap prometheus chromium
python3-jsonschema python3-kubernetes"
# The arm64 build (Jetson) from an amd64 machine: Debian's cross toolchain and
# the arm64 -dev packages beside the native ones (multiarch). tests/deploy's
# arm64 test builds with them; the Containerfile's build stage for arm64 too.
cross_pkgs() {
    echo "crossbuild-essential-$1 libgrpc-dev:$1 libprotobuf-c-dev:$1 libmicrohttpd-dev:$1
libcjson-dev:$1 libyaml-dev:$1 libcurl4-openssl-dev:$1 libssl-dev:$1"
}
NATIVE=$(dpkg --print-architecture)
CROSS=""
case "${1:-}" in
    --build) PKGS=$BUILD_PKGS ;;
    --cross)
        # --cross ARCH: the build packages and ARCH's cross packages (Containerfile)
        [ -n "${2:-}" ] || { echo "usage: $0 --cross ARCH" >&2; exit 2; }
        [ "$2" = "$NATIVE" ] || CROSS=$2
        PKGS=$BUILD_PKGS ;;
    "") PKGS="$BUILD_PKGS $TEST_PKGS"; [ "$NATIVE" = arm64 ] || CROSS=arm64 ;;
    *) echo "usage: $0 [--build | --cross ARCH]" >&2; exit 2 ;;
esac
[ -z "$CROSS" ] || PKGS="$PKGS $(cross_pkgs "$CROSS")"

# Debian's kubectl (kubernetes-client, 1.20 with its kustomize) renders deploy/
# in the tests. Where another package already owns /usr/bin/kubectl (a cloud
# SDK's kubectl), dpkg would refuse to install over it: Debian's package is
# then unpacked into KUBECTL_DIR instead, where tests/deploy looks for it.
KUBECTL_DIR=/usr/local/lib/gpuslice-deps/kubernetes-client
kubectl_owner=$(dpkg-query -S /usr/bin/kubectl 2>/dev/null | cut -d: -f1 || true)
unpack_kubectl=""
if [ "${1:-}" = "" ]; then
    if [ -z "$kubectl_owner" ] || [ "$kubectl_owner" = kubernetes-client ]; then
        PKGS="$PKGS kubernetes-client"
    elif [ ! -x "$KUBECTL_DIR/usr/bin/kubectl" ]; then
        unpack_kubectl=1
    fi
fi
if [ -n "$CROSS" ] && ! dpkg --print-foreign-architectures | grep -qx "$CROSS"; then
    [ "$(id -u)" = 0 ] || { echo "install-deps: run as root to add the $CROSS architecture" >&2; exit 1; }
    dpkg --add-architecture "$CROSS"
fi
missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
if [ -z "$missing" ] && [ -z "$unpack_kubectl" ]; then
    echo "install-deps: all build and test packages present"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "install-deps: missing packages:$missing${unpack_kubectl:+ kubernetes-client (unpacked)}" >&2
    echo "install-deps: run this script as root (or: sudo $0)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if [ -n "$missing" ]; then
    echo "install-deps: installing:$missing"
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
if [ -n "$unpack_kubectl" ]; then
    echo "install-deps: /usr/bin/kubectl belongs to $kubectl_owner: unpacking Debian's kubernetes-client into $KUBECTL_DIR"
    tmp=$(mktemp -d)
    (cd "$tmp" && apt-get download -q kubernetes-client)
    rm -rf "$KUBECTL_DIR"
    mkdir -p "$KUBECTL_DIR"
    dpkg-deb -x "$tmp"/kubernetes-client_*.deb "$KUBECTL_DIR"
    rm -rf "$tmp"
fi
echo "install-deps: done"
