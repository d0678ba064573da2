#!/bin/sh
# libFuzzer smoke run of every parser of outside input (tests/fuzz/fuzz_text.c,
# fuzz_allocate.c, fuzz_dra.c): each target built with clang (-fsanitize=fuzzer,address,
# undefined), then run GS_FUZZ_SECONDS (default 5) from its seed corpus in
# tests/fuzz/corpus/<name>/. New inputs go to a temporary folder, never into the
# tree. A crash, leak or sanitizer report fails the target and prints its input.
# Skips (77) without clang and libFuzzer, and in the sanitizer test passes (it
# brings its own). Longer runs: GS_FUZZ_SECONDS=600 sh tests/fuzz/fuzz_test.sh
set -u
SRC=${GS_SRC_DIR:-$(pwd)}
BUILD=${GS_BUILD_DIR:-$SRC/build}
SECS=${GS_FUZZ_SECONDS:-5}
CLANG=${CLANG:-clang}
if [ -n "${SAN:-}" ]; then
    echo "1..0 # SKIP the fuzz targets run in the plain test pass"
    exit 77
fi
tmp=$(mktemp -d /tmp/gs-fuzz.XXXXXX)
trap 'rm -rf "$tmp" /tmp/gs-fuzz-nodefile-* /tmp/gs-fuzz-alloc-* /tmp/gs-fuzz-dra-*' EXIT
if ! command -v "$CLANG" >/dev/null ||
    ! echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){return 0;}' |
        "$CLANG" -x c -fsanitize=fuzzer -o "$tmp/probe" - >/dev/null 2>&1; then
    echo "1..0 # SKIP clang with libFuzzer (Debian: clang, libclang-rt-14-dev) not found"
    exit 77
fi
cd "$SRC"
FLAGS="-std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Isrc -I$BUILD/gen -w"
COMMON="src/common/*.c src/contract/*.c"
NODE="src/node/*.c"
n=0; failed=0
run() { # name, sources and flags...
    name=$1; shift
    n=$((n + 1))
    # shellcheck disable=SC2086
    if ! $CLANG $FLAGS -o "$tmp/$name" "$@" >"$tmp/$name.build" 2>&1; then
        echo "not ok $n - fuzz $name: does not build"; sed 's/^/#   /' "$tmp/$name.build" | tail -20
        failed=$((failed + 1)); return
    fi
    mkdir -p "$tmp/corpus-$name"
    (cd "$tmp" && "./$name" -max_total_time="$SECS" -rss_limit_mb=2048 -timeout=10 \
        "corpus-$name" "$SRC/tests/fuzz/corpus/$name" >"$tmp/$name.log" 2>&1)
    rc=$?
    runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$tmp/$name.log" | tail -n1)
    if [ "$rc" = 0 ] && [ -n "$runs" ]; then
        echo "ok $n - fuzz $name: $runs inputs in ${SECS} s, no crash, leak or sanitizer report"
    else
        echo "not ok $n - fuzz $name (exit $rc)"; grep -v '^#' "$tmp/$name.log" | tail -30 | sed 's/^/#   /'
        for c in "$tmp"/crash-* "$tmp"/leak-* "$tmp"/timeout-*; do
            [ -e "$c" ] && echo "#   input: $(od -An -c "$c" | head -5 | tr -s ' ')"
        done
        failed=$((failed + 1))
    fi
}
run quantity -DFUZZ_QUANTITY tests/fuzz/fuzz_text.c $COMMON
run limits -DFUZZ_LIMITS tests/fuzz/fuzz_text.c $COMMON
run agent_config -DFUZZ_AGENT_CONFIG tests/fuzz/fuzz_text.c $NODE $COMMON -lyaml -ldl -lpthread
run sharing -DFUZZ_SHARING tests/fuzz/fuzz_text.c $NODE $COMMON -lyaml -ldl -lpthread
run nodefile -DFUZZ_NODEFILE tests/fuzz/fuzz_text.c $COMMON
run toml -DFUZZ_TOML tests/fuzz/fuzz_text.c src/doctor/toml.c $COMMON
run yamljson -DFUZZ_YAMLJSON tests/fuzz/fuzz_text.c src/kube/yamljson.c $COMMON -lyaml -lcjson
if ls "$BUILD"/gen/proto/*.pb-c.c >/dev/null 2>&1; then
    run allocate tests/fuzz/fuzz_allocate.c src/agent/plugin.c $NODE src/kubelet/*.c $COMMON \
        "$BUILD"/gen/proto/*.pb-c.c -lprotobuf-c -lgrpc -lgpr -lyaml -ldl -lpthread
    run dra tests/fuzz/fuzz_dra.c src/agent/dra.c src/agent/plugin.c src/agent/nodelabels.c $NODE \
        src/kubelet/*.c src/kube/*.c $COMMON "$BUILD"/gen/proto/*.pb-c.c -lprotobuf-c -lgrpc -lgpr \
        -lyaml -lcjson -lcurl -lcrypto -ldl -lpthread
else
    n=$((n + 1)); echo "ok $n - fuzz allocate # skip the generated protos are not built ($BUILD/gen/proto)"
    n=$((n + 1)); echo "ok $n - fuzz dra # skip the generated protos are not built ($BUILD/gen/proto)"
fi
echo "1..$n"
[ "$failed" = 0 ]
