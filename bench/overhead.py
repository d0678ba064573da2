"""Native vs gpuslice, side by side in one run (issue 3, point 3).

  python3 bench/overhead.py --bin /tmp/overhead --gpuslice build-minimal/gpuslice --reps 30

Alternates fresh processes: native; the interposer with an enforcing slice
(LD_PRELOAD + GPUSLICE_STATE_DIR, as in a container); LD_PRELOAD with no slice
(pass-through); and the whole `gpuslice run` wrapper. Reports medians and ratios.
"""
import argparse
import json
import os
import statistics
import struct
import subprocess
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True)
ap.add_argument("--gpuslice", required=True)
ap.add_argument("--reps", type=int, default=12)
ap.add_argument("--out")
ap.add_argument("--inproc", help="bench/overhead_inproc.cu built: real vs hooked entry points "
                "interleaved inside each process (removes process-to-process noise)")
ap.add_argument("--inproc-reps", type=int, default=9)
ap.add_argument("--inproc-compute", type=int, default=0,
                help="give the slice a compute share (percent): the launch path then runs the controller")
ap.add_argument("--inproc-critical-peer", action="store_true",
                help="a latency-critical tenant (idle: it never launches) next to the slice: every "
                "launch then takes the controller's lock and records an event")
ap.add_argument("--skip-process", action="store_true", help="only the in-process comparison")
ap.add_argument("--cpu", default="2", help="pin every process to this CPU (taskset); '' = no pinning. "
                "Unpinned, launch cost was bimodal (3.5 or 4.3 us) with the core a process landed on")
args = ap.parse_args()
lib = os.path.join(os.path.dirname(os.path.abspath(args.gpuslice)), "libgpuslice.so")


def make_slice(path, memory, compute=0, priority="best-effort", slice_id="bench"):
    """The state `gpuslice run` prepares, made here so the measured process
    has no gpuslice parent: limits (key = value) and an empty ledger (v1)."""
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "limits"), "w") as f:
        f.write(f"version = 1\nmemory = {memory}\ncompute = {compute}\npriority = {priority}\n"
                f"slice_id = {slice_id}\n")
    hdr = b"GSLEDGER" + struct.pack("<III", 1, 16512, 256)
    with open(os.path.join(path, "ledger"), "wb") as f:
        f.write(hdr + bytes(16512 - len(hdr)))


# A directory of its own: a tenant with a share looks for its peers next to its slice.
state = os.path.join(tempfile.mkdtemp(prefix="gs-bench-"), "slice")
variants = {
    "native": [args.bin],
    "gpuslice": ["env", f"LD_PRELOAD={lib}", f"GPUSLICE_STATE_DIR={state}", args.bin],
    "passthrough": ["env", f"LD_PRELOAD={lib}", args.bin],
    "gpuslice_run": [args.gpuslice, "run", "--memory", "100Gi", "--", args.bin],
}
runs = {} if args.skip_process else {k: [] for k in variants}
for _ in range(args.reps):
    for k in runs:
        cmd = variants[k]
        if k == "gpuslice":
            make_slice(state, 100 << 30)  # fresh ledger each time, as a new container gets
        full = (["taskset", "-c", args.cpu] if args.cpu else []) + cmd
        out = subprocess.run(full, capture_output=True, text=True)
        line = [l for l in out.stdout.splitlines() if l.startswith("{")]
        if not line:
            raise SystemExit(f"{k} failed: {out.stderr[-500:]}")
        runs[k].append(json.loads(line[-1]))
summary = {}
for k, rs in runs.items():
    summary[k] = {m: statistics.median(r[m] for r in rs) for m in ("startup_ms", "launch_us", "alloc_pair_us")}
n = summary.get("native")
for k in ("gpuslice", "passthrough", "gpuslice_run") if n else ():
    s = summary[k]
    s["launch_delta_us"] = s["launch_us"] - n["launch_us"]
    s["alloc_pair_ratio"] = s["alloc_pair_us"] / n["alloc_pair_us"]
    s["startup_delta_ms"] = s["startup_ms"] - n["startup_ms"]
res = {"reps": args.reps, "summary": summary, "runs": runs}
if args.inproc:
    # Same enforcing slice as "gpuslice"; each process compares libcuda's own
    # entry points with the interposer's, interleaved, and reports its medians.
    inproc = []
    if args.inproc_critical_peer:  # beside the slice, where a tenant looks for its peers
        make_slice(os.path.join(os.path.dirname(state), "critical"), 1 << 30, 0, "critical", "critical")
    for _ in range(args.inproc_reps):
        make_slice(state, 100 << 30, args.inproc_compute)
        full = (["taskset", "-c", args.cpu] if args.cpu else []) + variants["gpuslice"][:-1] + [args.inproc]
        out = subprocess.run(full, capture_output=True, text=True)
        line = [l for l in out.stdout.splitlines() if l.startswith("{")]
        if not line:
            raise SystemExit(f"inproc failed: {out.stderr[-500:]}")
        inproc.append(json.loads(line[-1]))
    summary["inproc"] = {m: statistics.median(r[m] for r in inproc)
                         for m in ("launch_real_us", "launch_hooked_us", "launch_delta_us",
                                   "alloc_pair_real_us", "alloc_pair_hooked_us", "alloc_pair_ratio")}
    summary["inproc"]["compute_share"] = args.inproc_compute
    summary["inproc"]["critical_peer"] = args.inproc_critical_peer
    summary["inproc"]["all_interposed"] = all(r["interposed"] for r in inproc)
    res["inproc_runs"] = inproc
print(json.dumps(summary, indent=1))
if args.out:
    json.dump(res, open(args.out, "w"), indent=1)
