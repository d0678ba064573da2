#!/bin/sh
# Quick start, command 2 (and CI): every test, three ways — a -Werror build,
# an ASan+UBSan build, TSan over the threaded parts (the interposer, the ledger, the
# agent and the monitor; tests/tsan.supp says what it ignores) — plus the format check and,
# once, the node end to end in containers (docs/e2e.md).
# Ends with one line: "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
./scripts/install-deps.sh || exit 1
J=$(nproc)
total_pass=0; total_fail=0
tally() { # log file of one tests/run-tests.sh run
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -n1)
    p=$(echo "$line" | cut -d' ' -f1); f=$(echo "$line" | cut -d' ' -f3)
    total_pass=$((total_pass + ${p:-0})); total_fail=$((total_fail + ${f:-1}))
}
step() { # name, make args...
    name=$1; shift
    echo "== $name"
    log=$(mktemp)
    if ! make -j"$J" WERROR=1 "$@" >"$log.build" 2>&1; then
        tail -n 60 "$log.build"; echo "$name: build failed"; total_fail=$((total_fail + 1)); return
    fi
    make WERROR=1 "$@" test 2>&1 | tee "$log" | grep -v '^\(PASS\|SKIP\)' || true
    tally "$log"
}
echo "== format"
if make -s check-format; then total_pass=$((total_pass + 1)); else total_fail=$((total_fail + 1)); fi
step "tests" BUILD=build
step "tests under ASan+UBSan" BUILD=build-asan SAN=address,undefined
echo "== threaded tests under TSan"
log=$(mktemp)
if make -j"$J" WERROR=1 BUILD=build-tsan SAN=thread build-all >"$log.build" 2>&1; then
    make -s WERROR=1 BUILD=build-tsan SAN=thread test-threaded 2>&1 | tee "$log" | grep -v '^PASS' || true
    tally "$log"
else
    tail -n 60 "$log.build"; total_fail=$((total_fail + 1))
fi
echo "== end-to-end node: the image, the agent, tenant containers, monitor, doctor (podman)"
log=$(mktemp)
GS_SRC_DIR=$(pwd) GS_BUILD_DIR=$(pwd)/build /usr/bin/python3 tests/e2e/node_e2e.py >"$log" 2>&1
rc=$?
grep -v '^ok' "$log" || true
p=$(grep -c '^ok' "$log"); f=$(grep -c '^not ok' "$log")
if [ "$rc" = 77 ]; then
    echo "end-to-end: skipped (needs root, podman, runc, mmdebstrap)"
elif [ "$rc" != 0 ] && [ "$f" = 0 ]; then
    f=1
fi
total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" = 0 ]
