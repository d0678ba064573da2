#!/bin/sh
# Session 29, device call 1 (issue 20): where a launch's time goes beside an idle critical
# tenant, on the GPU. Builds made here and carried: build-head-minimal (f4a2551, before the
# watch), build-watch-minimal (the critical tenant's stamps watched at each launch, 20 ms
# decisions), build-xs-minimal (session29-breakdown.patch: the decisions' parts, the pread
# of the critical tenant's header and the ring's event calls, counted and timed, printed at
# exit), build-poll200-minimal (session28-poll200.patch: decisions of 200 us, not 50) and
# build-map-minimal (session29-map-peers.patch: the peers' headers read from a mapping of
# their first page, no pread: what the read would save; not safe against a peer that
# truncates its file).
# On the GPU, a 50 % share, the builds taking turns beside an idle critical peer; head, watch and
# xs without one. First what the host's clock reads and system calls cost
# (bench/archive/experiments/host_call_cost.c).
#   sh bench/archive/h200_session29a.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
cc -O2 -o /tmp/host-call-cost bench/archive/experiments/host_call_cost.c && /tmp/host-call-cost
one() { # build, label, extra args...
    b=$1; l=$2; shift 2
    timeout 90 python3 bench/overhead.py --bin true --skip-process --inproc /tmp/gs-inproc \
        --gpuslice build-$b-minimal/gpuslice --inproc-reps 3 --inproc-compute 50 "$@" \
        --inproc-logs "$OUT/logs-$l" --out "$OUT/ovh-$l.json" 2>&1 |
        grep 'launch_real_us\|launch_delta_us' | tr -d '\n' | sed "s/^/$l: /"
    echo
}
for turn in 1 2; do
    for b in head watch xs poll200 map; do
        one $b "$b-crit-$turn" --inproc-critical-peer
    done
    for b in head watch xs; do
        one $b "$b-alone-$turn"
    done
done
for f in "$OUT"/logs-xs-*/*.log; do echo "$f: $(grep -h XSTAT "$f")"; done
cd "$OUT" && tar czf logs.tgz logs-* && rm -rf logs-*
