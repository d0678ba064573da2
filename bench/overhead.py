"""What the interposer costs a CUDA program: context start-up, kernel launch, and a 1 MiB
cudaMalloc + cudaFree pair, native against gpuslice, in one run.

  nvcc -O2 -o /tmp/gs-overhead bench/overhead.cu
  nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl
  python3 bench/overhead.py --bin /tmp/gs-overhead --inproc /tmp/gs-inproc
      --gpuslice build-minimal/gpuslice --out overhead.json [--reps 30] [--inproc-reps 9]

Process level: fresh processes of --bin (bench/overhead.cu) take turns, pinned to one CPU:
native; the interposer with an enforcing slice (LD_PRELOAD + GPUSLICE_STATE_DIR, as in a
container); LD_PRELOAD with no slice (pass-through); the whole `gpuslice run` wrapper.
Medians and the differences against native.

In one process (--inproc, bench/overhead_inproc.cu under an enforcing slice): libcuda's own
entry points against the ones the application gets under the interposer, interleaved, so
process-to-process noise cancels out. This is the figure to quote.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--bin", required=True, help="bench/overhead.cu built (with --skip-process: any program)")
ap.add_argument("--gpuslice", required=True, help="the gpuslice binary (its libgpuslice.so beside it)")
ap.add_argument("--reps", type=int, default=12, help="processes per variant")
ap.add_argument("--variants", default="native,gpuslice,passthrough,gpuslice_run",
                help="process-level variants to run, comma-separated (native is the reference)")
ap.add_argument("--out", help="JSON file to write (the summary is printed either way)")
ap.add_argument("--memory", default="8Gi", help="the enforcing slices' memory cap (gpuslice run --memory)")
ap.add_argument("--inproc", help="bench/overhead_inproc.cu built: real vs hooked entry points "
                "interleaved inside each process (removes process-to-process noise)")
ap.add_argument("--inproc-reps", type=int, default=9)
ap.add_argument("--inproc-compute", type=int, default=0,
                help="give the slice a compute share (percent): the launch path then runs the controller")
ap.add_argument("--inproc-critical-peer", action="store_true",
                help="a latency-critical tenant (idle: it never launches) next to the slice: every "
                "launch then takes the controller's lock and records an event")
ap.add_argument("--inproc-critical", action="store_true",
                help="with --inproc: the tenant measured is latency-critical (gpuslice run --critical)")
ap.add_argument("--inproc-logs", metavar="DIR",
                help="keep each in-process run's stderr as DIR/inproc-N.log (with GPUSLICE_LOG_LEVEL=debug: "
                "what the interposer's pace learned, e.g. the launches per event beside a critical peer)")
ap.add_argument("--skip-process", action="store_true", help="only the in-process comparison")
ap.add_argument("--cpu", default="2", help="pin every process to this CPU (taskset); '' = no pinning. "
                "Unpinned, launch cost was bimodal (3.5 or 4.3 us) with the core a process landed on")
args = ap.parse_args()
lib = os.path.join(os.path.dirname(os.path.abspath(args.gpuslice)), "libgpuslice.so")


def make_slice(flags, critical_peer=False):
    """A fresh slice, made by the build's own `gpuslice run --keep-state` (its limits and
    its empty ledger, as that build writes them) in a root of its own, where a tenant with
    a share looks for its peers; with a critical peer beside it if asked. Its directory."""
    root = tempfile.mkdtemp(prefix="gs-bench-", dir=scratch)

    def one(*f):
        before = set(os.listdir(root))
        p = subprocess.run([args.gpuslice, "run", "--state-root", root, "--keep-state"] + list(f) + ["--", "true"],
                           capture_output=True, text=True)
        made = set(os.listdir(root)) - before
        if p.returncode != 0 or len(made) != 1:
            raise SystemExit(f"overhead: gpuslice run made no slice: {p.stderr[-500:]}")
        return os.path.join(root, made.pop())

    if critical_peer:
        one("--critical", "--memory", "1Gi")
    return one(*flags)


def run_one(cmd, log=None):
    """cmd on the pinned CPU; the JSON line it printed. Its stderr kept in log, if given."""
    out = subprocess.run((["taskset", "-c", args.cpu] if args.cpu else []) + cmd, capture_output=True, text=True)
    if log:
        os.makedirs(os.path.dirname(log), exist_ok=True)
        with open(log, "w") as f:
            f.write(out.stderr)
    line = [x for x in out.stdout.splitlines() if x.startswith("{")]
    if not line:
        raise SystemExit(f"overhead: {cmd[-1]} failed: {out.stderr[-500:]}")
    return json.loads(line[-1])


def enforcing(path):
    """The interposer loaded with a slice, as in a container (no gpuslice parent)."""
    return ["env", f"LD_PRELOAD={lib}", f"GPUSLICE_STATE_DIR={path}"]


scratch = tempfile.mkdtemp(prefix="gs-overhead-")
variants = {
    "native": [args.bin],
    "gpuslice": None,  # enforcing, a fresh slice each time, as a new container gets
    "passthrough": ["env", f"LD_PRELOAD={lib}", args.bin],
    "gpuslice_run": [args.gpuslice, "run", "--memory", args.memory, "--", args.bin],
}
unknown = set(args.variants.split(",")) - set(variants)
if unknown:
    ap.error(f"unknown variant(s) {sorted(unknown)}; known: {sorted(variants)}")
runs = {} if args.skip_process else {k: [] for k in variants if k in args.variants.split(",")}
for _ in range(args.reps):
    for k in runs:
        cmd = variants[k] or enforcing(make_slice(["--memory", args.memory])) + [args.bin]
        runs[k].append(run_one(cmd))
summary = {}
for k, rs in runs.items():
    summary[k] = {m: statistics.median(r[m] for r in rs) for m in ("startup_ms", "launch_us", "alloc_pair_us")}
n = summary.get("native")
for k in [k for k in ("gpuslice", "passthrough", "gpuslice_run") if k in summary] if n else ():
    s = summary[k]
    s["launch_delta_us"] = s["launch_us"] - n["launch_us"]
    s["alloc_pair_ratio"] = s["alloc_pair_us"] / n["alloc_pair_us"]
    s["startup_delta_ms"] = s["startup_ms"] - n["startup_ms"]
res = {"reps": args.reps, "summary": summary, "runs": runs}
if args.inproc:
    # An enforcing slice as "gpuslice"; each process compares libcuda's own entry points
    # with the interposer's, interleaved, and reports its medians.
    share = ["--compute", str(args.inproc_compute)] if args.inproc_compute else []
    share += ["--critical"] if args.inproc_critical else []
    inproc = [run_one(enforcing(make_slice(["--memory", args.memory] + share, args.inproc_critical_peer)) + [args.inproc],
                      os.path.join(args.inproc_logs, f"inproc-{i + 1}.log") if args.inproc_logs else None)
              for i in range(args.inproc_reps)]
    summary["inproc"] = {m: statistics.median(r[m] for r in inproc)
                         for m in ("launch_real_us", "launch_hooked_us", "launch_delta_us",
                                   "alloc_pair_real_us", "alloc_pair_hooked_us", "alloc_pair_ratio")}
    summary["inproc"]["compute_share"] = args.inproc_compute
    summary["inproc"]["critical_peer"] = args.inproc_critical_peer
    summary["inproc"]["critical"] = args.inproc_critical
    summary["inproc"]["all_interposed"] = all(r["interposed"] for r in inproc)
    res["inproc_runs"] = inproc
shutil.rmtree(scratch, ignore_errors=True)
print(json.dumps(summary, indent=1))
if args.out:
    json.dump(res, open(args.out, "w"), indent=1)
