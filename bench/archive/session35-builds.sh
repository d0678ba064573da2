#!/bin/sh
# Builds what bench/archive/h200_session35a.sh carries, each from a worktree of its
# commit, into the repository root (as build-NAME-minimal): s33 (95cd289), s34
# (b528d99), s35s (80b26f2: the soft ends), xs35 (80b26f2 with
# session35-clockcount.patch), x20 (b528d99 with the same three counters). Then:
#   run: sh bench/archive/h200_session35a.sh $OUT, carrying the five build-*-minimal dirs.
#   sh bench/archive/session35-builds.sh
set -eu
root=$(git rev-parse --show-toplevel)
cd "$root"
patch=$root/bench/archive/session35-clockcount.patch
one() { # name commit [counters]
    wt=$(mktemp -d)/wt
    git worktree add -q --detach "$wt" "$2"
    if [ "${3:-}" = counters ]; then
        # (b528d99 tells the decision's end without the soft bit: the patch's
        # context line as it reads there)
        (cd "$wt" && git apply "$patch" 2>/dev/null ||
            sed 's/(now + slack >= until \&\& !(until \& UNTIL_SOFT))/now + slack >= until/' "$patch" |
            git apply)
    fi
    (cd "$wt" && make -s minimal BUILD="build-$1" -j2 >/dev/null)
    rm -rf "build-$1-minimal"
    cp -r "$wt/build-$1-minimal" .
    git worktree remove --force "$wt"
    echo "build-$1-minimal: $2${3:+ + $3}"
}
one s33 95cd289
one s34 b528d99
one s35s 80b26f2
one xs35 80b26f2 counters
one x20 b528d99 counters
git worktree prune
