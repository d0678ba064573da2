#!/bin/sh
# Builds bench/nodepeer into one static binary (OUT, default build/nodepeer) from
# Debian's grpc-go and protobuf sources in GOPATH mode, offline. Needs go,
# protoc, golang-google-grpc-dev and golang-google-protobuf-dev
# (scripts/install-deps.sh installs them). Run where those are; carry the binary.
set -eu
SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$SRC/build/nodepeer}
tmp=$(mktemp -d /tmp/gs-nodepeer.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export GOPATH="$tmp/gp:/usr/share/gocode" GO111MODULE=off GOFLAGS= GOPROXY=off CGO_ENABLED=0
export GOCACHE="$tmp/cache"
pkg="$tmp/gp/src/gpuslice/tests"
mkdir -p "$pkg/deviceplugin" "$pkg/podresources" "$pkg/nodepeer"
go build -o "$tmp/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
protoc -I"$SRC/proto" --plugin=protoc-gen-go="$tmp/protoc-gen-go" \
    --go_out=paths=source_relative:"$pkg/deviceplugin" deviceplugin_v1beta1.proto
protoc -I"$SRC/proto" --plugin=protoc-gen-go="$tmp/protoc-gen-go" \
    --go_out=paths=source_relative:"$pkg/podresources" podresources_v1.proto
cp "$SRC/bench/nodepeer/main.go" "$pkg/nodepeer/"
mkdir -p "$(dirname "$OUT")"
go build -o "$OUT" gpuslice/tests/nodepeer
echo "nodepeer: built $OUT"
