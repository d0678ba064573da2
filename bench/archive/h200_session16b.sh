#!/bin/sh
# Session 16 (issue 20), device call 3: shares and hard caps of the GEMM hog, the events
# paced by their own GPU time against the committed build (both rounds of each build
# against one solo reference, bench/compare.sh).
#   sh bench/archive/h200_session16b.sh OUT
# build-cmpold is `git archive` of the commit before the change, carried.
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
sh bench/compare.sh --old build-cmpold --new . --out "$OUT/shares" --work /tmp/gsw --only shares \
    --rounds 2 --caps 25,50 --secs 5 --budget 420 2>&1 | tail -14
tar -C "$OUT" -czf "$OUT/../call3.tar.gz" . && rm -rf "$OUT"
