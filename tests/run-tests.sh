#!/bin/sh
# Runs every test program and script; each speaks TAP ("ok N - name" /
# "not ok N - name", exit 77 = skipped as a whole). Prints each program's
# summary and ends with the line CI reads: "N passed, N failed, N skipped".
#   BUILD=build tests/run-tests.sh            all tests
#   GS_TEST_FILTER="interposer ledger" tests/run-tests.sh  only names containing one of these
set -u
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
FILTER=${GS_TEST_FILTER:-}
export CMOCKA_MESSAGE_OUTPUT=TAP
export GS_BUILD_DIR="$(cd "$BUILD" && pwd)"
export GS_SRC_DIR="$(pwd)"
# Sanitizer runtimes must come first; a test that preloads our library says so.
export ASAN_OPTIONS="${ASAN_OPTIONS:-verify_asan_link_order=0:detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$GS_SRC_DIR/tests/tsan.supp}"
logdir="$BUILD/test-logs"
mkdir -p "$logdir"
passed=0; failed=0; skipped=0; failed_names=""

wanted() { # name: does it match the filter?
    [ -z "$FILTER" ] && return 0
    for f in $FILTER; do case "$1" in *"$f"*) return 0 ;; esac; done
    return 1
}

run_one() { # name, command...
    name=$1; shift
    log="$logdir/$(echo "$name" | tr '/' '_').log"
    start=$(date +%s)
    "$@" >"$log" 2>&1
    rc=$?
    ok=$(grep -Ec '^ok [0-9]+' "$log")
    nok=$(grep -Ec '^not ok [0-9]+' "$log")
    sk=$(grep -Eci '^ok [0-9]+.*# skip' "$log")
    ok=$((ok - sk))
    if [ "$rc" = 77 ]; then
        skipped=$((skipped + 1)); echo "SKIP  $name ($(grep -m1 -i 'skip' "$log" | cut -c1-120))"; return
    fi
    if [ "$rc" != 0 ] && [ "$nok" = 0 ]; then nok=1; fi   # crashed or failed outside a test case
    passed=$((passed + ok)); failed=$((failed + nok)); skipped=$((skipped + sk))
    status=PASS; [ "$nok" != 0 ] && { status=FAIL; failed_names="$failed_names $name"; }
    echo "$status  $name: $ok passed, $nok failed$( [ "$sk" != 0 ] && echo ", $sk skipped") ($(( $(date +%s) - start ))s)"
    if [ "$status" = FAIL ]; then
        # The failing cases with what they said just before (cmocka prints its
        # diagnostics ahead of "not ok"), then the log's tail for a crash.
        grep -E -B 12 '^not ok [0-9]+' "$log" | cut -c1-300 | head -n 80
        echo "----- $log (last 40 lines) -----"; tail -n 40 "$log"; echo "-----"
    fi
}

for t in "$BUILD"/tests/*.test; do
    [ -x "$t" ] || continue
    wanted "$t" || continue
    run_one "$(basename "$t")" "$t"
done
for t in tests/*_test.py tests/*/*_test.py; do
    [ -f "$t" ] || continue
    wanted "$t" || continue
    run_one "$t" "$PYTHON" "$t"
done
for t in tests/*_test.sh tests/*/*_test.sh; do
    [ -f "$t" ] || continue
    wanted "$t" || continue
    run_one "$t" sh "$t"
done
[ -n "$failed_names" ] && echo "failed:$failed_names"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ] && [ $((passed + failed)) -gt 0 ]
