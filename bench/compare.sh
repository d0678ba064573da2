#!/bin/sh
# Two source trees' builds side by side on one GPU, in one run: the memory cap, the
# allocation and launch overhead, a compute share pair, and the latency-critical class.
# Use it to show that a change left the GPU figures as they were.
#
#   sh bench/compare.sh --old DIR --new DIR --out OUT [options]
#
# Each tree is built with the toolchain alone (make minimal BUILD=WORK/old|new). Then
# this tree's bench/ tools run both builds, taking turns: memory (old, new), overhead
# (old, new, new, old, ...), the share pair and the latency variants inside one run of
# bench/shares.py and bench/latency.py each. Writes a JSON file per measurement under
# OUT/raw, and OUT/compare.md and OUT/compare.json: old against new, with what each
# figure may move by between runs. About 7 minutes on an H200 with the defaults.
#
#   --old DIR, --new DIR   the two source trees (a tree without .git is fine)
#   --out OUT              where the results go (created)
#   --work DIR             where the builds go (default: a new directory under /tmp)
#   --only LIST            of memory,overhead,shares,latency (default: all four)
#   --rounds N             overhead and share runs per build, and latency variants per
#                          build (default 2: old, new, new, old)
#   --pair A/B             the share pair (default 30/70)
#   --caps LIST            hard caps to run too, e.g. 50 (default: none)
#   --secs S               seconds each share run counts (default 5)
#   --thinks LIST          the critical model's think times, ms (default 3,6)
#   --requests N           its requests per think time and phase kind (default 400)
#   --batch N              its batch (default 8)
#   --pin A/B              the latency tenants' CPUs (default 2-5/8-11 with 12 CPUs or more)
#   --overhead-reps N      processes per overhead variant (default 4)
#   --inproc-reps N        in-process overhead comparisons (default 3)
#   --extra-overhead ARGS  more options for bench/overhead.py (e.g. "--skip-process
#                          --inproc-compute 50": only the in-process launch beside libcuda's,
#                          under a 50 % share)
#   --extra-shares ARGS    more options for bench/shares.py (e.g. "--lead 6")
#   --extra-latency ARGS   more options for bench/latency.py (e.g. "--reps 3")
#   --budget S             seconds the whole run may take (default 510): a step that
#                          would end later is cut at the budget, and later ones skipped
#   --pack                 put OUT/raw into OUT/raw.tar.gz (fewer files to carry back)
# Environment: PYTHON (python3), NVCC (nvcc, else /usr/local/cuda/bin/nvcc), MAKEFLAGS.
set -eu
BENCH=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
OLD= NEW= OUT= WORK= ONLY=memory,overhead,shares,latency ROUNDS=2 PAIR=30/70 CAPS= SECS=5
THINKS=3,6 REQUESTS=400 BATCH=8 PIN=auto OREPS=4 IREPS=3 XOVERHEAD= XSHARES= XLATENCY= PACK=0 BUDGET=510

usage() { sed -n '2,38p' "$0" | cut -c3-; }
need() { [ $# -ge 2 ] || { echo "compare: $1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
    case $1 in
        -h | --help) usage; exit 0 ;;
        --pack) PACK=1; shift; continue ;;
        --old) need "$@"; OLD=$2 ;;
        --new) need "$@"; NEW=$2 ;;
        --out) need "$@"; OUT=$2 ;;
        --work) need "$@"; WORK=$2 ;;
        --only) need "$@"; ONLY=$2 ;;
        --rounds) need "$@"; ROUNDS=$2 ;;
        --pair) need "$@"; PAIR=$2 ;;
        --caps) need "$@"; CAPS=$2 ;;
        --secs) need "$@"; SECS=$2 ;;
        --thinks) need "$@"; THINKS=$2 ;;
        --requests) need "$@"; REQUESTS=$2 ;;
        --batch) need "$@"; BATCH=$2 ;;
        --pin) need "$@"; PIN=$2 ;;
        --overhead-reps) need "$@"; OREPS=$2 ;;
        --inproc-reps) need "$@"; IREPS=$2 ;;
        --extra-overhead) need "$@"; XOVERHEAD=$2 ;;
        --extra-shares) need "$@"; XSHARES=$2 ;;
        --extra-latency) need "$@"; XLATENCY=$2 ;;
        --budget) need "$@"; BUDGET=$2 ;;
        *) echo "compare: unknown option $1 (--help)" >&2; exit 2 ;;
    esac
    shift 2
done
[ -n "$OLD" ] && [ -n "$NEW" ] && [ -n "$OUT" ] || { usage >&2; exit 2; }
for t in "$OLD" "$NEW"; do
    [ -f "$t/Makefile" ] || { echo "compare: $t has no Makefile" >&2; exit 2; }
done
OLD=$(cd "$OLD" && pwd) NEW=$(cd "$NEW" && pwd)
mkdir -p "$OUT/raw"
OUT=$(cd "$OUT" && pwd)
RAW=$OUT/raw
[ -n "$WORK" ] || WORK=$(mktemp -d /tmp/gs-compare.XXXXXX)
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
CPUS=$(nproc 2>/dev/null || echo 1)
[ "$PIN" = auto ] && { PIN=; [ "$CPUS" -ge 12 ] && PIN=2-5/8-11; }
T0=$(date +%s)
say() { echo "compare [$(($(date +%s) - T0)) s]: $*" | tee -a "$OUT/compare.log"; }
wants() { case ",$ONLY," in *",$1,"*) return 0 ;; esac; return 1; }
# step NAME SECONDS CMD...: runs CMD with a time limit (cut at the budget), its output in
# RAW/NAME.log
step() {
    name=$1 limit=$2; shift 2
    left=$((BUDGET - ($(date +%s) - T0)))
    if [ "$left" -lt 20 ]; then
        say "$name skipped: the budget of $BUDGET s is spent"; return 0
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    if timeout "$limit" "$@" >"$RAW/$name.log" 2>&1; then
        say "$name done"
    else
        say "$name FAILED (exit $?; $RAW/$name.log):"
        tail -5 "$RAW/$name.log" | tee -a "$OUT/compare.log"
    fi
}
# the order of the builds in round r: old new in odd rounds, new old in even ones
order() { if [ $(($1 % 2)) = 1 ]; then echo old new; else echo new old; fi; }

: >"$OUT/compare.log"
say "old $OLD, new $NEW, results in $OUT, builds in $WORK"
for b in old new; do
    tree=$OLD; [ $b = new ] && tree=$NEW
    if make -C "$tree" -s -j"$CPUS" minimal BUILD="$WORK/$b" >"$RAW/build-$b.log" 2>&1; then
        say "built $b: $WORK/$b-minimal/gpuslice"
    else
        say "the $b tree did not build ($RAW/build-$b.log)"; tail -20 "$RAW/build-$b.log"; exit 3
    fi
done
GOLD=$WORK/old-minimal/gpuslice GNEW=$WORK/new-minimal/gpuslice
{
    echo "old: $OLD"; echo "new: $NEW"; echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader 2>/dev/null || echo unknown)"
    echo "old build: $("$GOLD" version 2>/dev/null | head -1)"; echo "new build: $("$GNEW" version 2>/dev/null | head -1)"
} >"$RAW/info.txt"

if wants memory; then
    for b in old new; do
        g=$GOLD; [ $b = new ] && g=$GNEW
        step "memory-$b" 240 "$PY" "$BENCH/memory.py" --gpuslice "$g" --out "$RAW/memory-$b.json"
    done
fi

if wants overhead; then
    NV=${NVCC:-nvcc}
    command -v "$NV" >/dev/null 2>&1 || NV=/usr/local/cuda/bin/nvcc
    if "$NV" -O2 -o "$WORK/overhead" "$BENCH/overhead.cu" >"$RAW/nvcc.log" 2>&1 &&
        "$NV" -O2 -o "$WORK/overhead_inproc" "$BENCH/overhead_inproc.cu" -ldl >>"$RAW/nvcc.log" 2>&1; then
        CPU=; [ "$CPUS" -gt 2 ] && CPU=2
        r=1
        while [ $r -le "$ROUNDS" ]; do
            for b in $(order $r); do
                g=$GOLD; [ $b = new ] && g=$GNEW
                # XOVERHEAD is split into options on purpose
                # shellcheck disable=SC2086
                step "overhead-$b-$r" 150 "$PY" "$BENCH/overhead.py" --bin "$WORK/overhead" --inproc "$WORK/overhead_inproc" \
                    --gpuslice "$g" --variants native,gpuslice --reps "$OREPS" --inproc-reps "$IREPS" --cpu "$CPU" \
                    --out "$RAW/overhead-$b-$r.json" $XOVERHEAD
            done
            r=$((r + 1))
        done
    else
        say "overhead: nvcc failed ($RAW/nvcc.log)"
    fi
fi

if wants shares; then
    # XSHARES is split into options on purpose
    # shellcheck disable=SC2086
    step shares 420 "$PY" "$BENCH/shares.py" --build old="$GOLD" --build new="$GNEW" --rounds "$ROUNDS" \
        --pairs "$PAIR" --caps "$CAPS" --secs "$SECS" --no-plain --out "$RAW/shares.json" $XSHARES
fi

if wants latency; then
    CONFIGS=native r=1
    while [ $r -le "$ROUNDS" ]; do
        tag=; [ $r -gt 1 ] && tag="#$r"
        for b in $(order $r); do CONFIGS="$CONFIGS,gs_defaults@$b$tag"; done
        r=$((r + 1))
    done
    # XLATENCY is split into options on purpose
    # shellcheck disable=SC2086
    step latency 480 "$PY" "$BENCH/latency.py" --gpuslice "$GNEW" --build old="$GOLD" --build new="$GNEW" \
        --configs "$CONFIGS" --thinks "$THINKS" --requests "$REQUESTS" --reps 2 --batch "$BATCH" --pin "$PIN" \
        --out "$RAW/latency.json" $XLATENCY
fi

"$PY" "$BENCH/compare_table.py" "$RAW" --json "$OUT/compare.json" >"$OUT/compare.md" || say "the table failed"
cat "$OUT/compare.md"
if [ "$PACK" = 1 ]; then
    tar czf "$OUT/raw.tar.gz" -C "$OUT" raw && rm -rf "$RAW"
fi
say "done in $(($(date +%s) - T0)) s"
