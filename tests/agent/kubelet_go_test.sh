#!/bin/sh
# The agent against a grpc-go kubelet stand-in (tests/agent/gopeer), built
# offline from Debian's golang-google-grpc-dev and golang-google-protobuf-dev
# in GOPATH mode. Skips (77) when Go or those sources are missing.
set -u
SRC=${GS_SRC_DIR:-$(pwd)}
BUILD=${GS_BUILD_DIR:-$SRC/build}
GOSRC=/usr/share/gocode/src
if ! command -v go >/dev/null || [ ! -d "$GOSRC/google.golang.org/grpc" ] || [ ! -d "$GOSRC/google.golang.org/protobuf" ]; then
    echo "1..0 # SKIP go or golang-google-grpc-dev/golang-google-protobuf-dev missing"
    exit 77
fi
tmp=$(mktemp -d /tmp/gsgo.XXXXXX)
agent_pid=""
cleanup() {
    [ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
export GOPATH="$tmp/gp:/usr/share/gocode" GO111MODULE=off GOFLAGS= GOPROXY=off
export GOCACHE="${GS_GO_CACHE:-$BUILD/go-cache}"
pkg="$tmp/gp/src/gpuslice/tests"
mkdir -p "$pkg/deviceplugin" "$pkg/peer" "$tmp/dp"
if ! go build -o "$tmp/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go >"$tmp/build.log" 2>&1 ||
    ! protoc -I"$SRC/proto" --plugin=protoc-gen-go="$tmp/protoc-gen-go" \
        --go_out=paths=source_relative:"$pkg/deviceplugin" deviceplugin_v1beta1.proto >>"$tmp/build.log" 2>&1 ||
    ! cp "$SRC/tests/agent/gopeer/main.go" "$pkg/peer/" ||
    ! go build -o "$tmp/peer" gpuslice/tests/peer >>"$tmp/build.log" 2>&1; then
    echo "not ok 1 - build the grpc-go kubelet offline"
    sed 's/^/#   /' "$tmp/build.log" | tail -30
    exit 1
fi
echo "ok 1 - build the grpc-go kubelet offline (Debian grpc-go, GOPATH mode)"
: >"$tmp/lib.so"
# The peer listens first (it plays the kubelet), then the agent starts.
"$tmp/peer" -dir "$tmp/dp" >"$tmp/peer.out" 2>&1 &
peer_pid=$!
i=0
while [ ! -S "$tmp/dp/kubelet.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
"$BUILD/gpuslice" agent --backend simulated --kubelet-dir "$tmp/dp" --state-root "$tmp/state" \
    --interposer-path "$tmp/lib.so" --reclaim-interval 0 >"$tmp/agent.log" 2>&1 &
agent_pid=$!
wait $peer_pid
peer_rc=$?
# Renumber the peer's TAP after our build line.
sed -n 's/^ok \([0-9]*\) /ok \1 /p; s/^not ok \([0-9]*\) /not ok \1 /p; /^#/p' "$tmp/peer.out" |
    awk '/^ok|^not ok/{ $2 = $2 + 1 } { print }'
kill "$agent_pid" 2>/dev/null
wait "$agent_pid"
agent_rc=$?
agent_pid=""
n=$(grep -cE '^(not )?ok' "$tmp/peer.out")
if [ "$agent_rc" = 0 ]; then echo "ok $((n + 2)) - agent exits 0 on SIGTERM"; else
    echo "not ok $((n + 2)) - agent exits 0 on SIGTERM (rc $agent_rc)"; fi
if [ "$peer_rc" != 0 ]; then
    echo "# peer output:"; sed 's/^/#   /' "$tmp/peer.out"
    echo "# agent log:"; tail -20 "$tmp/agent.log" | sed 's/^/#   /'
fi
echo "1..$((n + 2))"
[ "$peer_rc" = 0 ] && [ "$agent_rc" = 0 ]
