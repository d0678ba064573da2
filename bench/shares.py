"""Compute shares and hard caps on a real GPU: the throughput each tenant gets against
the share it asked for.

  python3 bench/shares.py --gpuslice build-minimal/gpuslice --out shares.json
      [--pairs 25/75,30/70,50/50] [--caps 25,50,75] [--secs 6] [--sharing timeslice|mps]

Every tenant is bench/compute_tenant.py hog (bf16 8192x8192 matmuls, 4 between
synchronisations, as a training loop) under `gpuslice run --compute N`; the tenants of one
run start at the same wall-clock moment and count the matmuls they finish in --secs after
--warm. Achieved share = a tenant's matmuls/s over the same loop's alone with no gpuslice,
which is measured first and last (the GPU's throughput drifts by a few percent over
minutes; the mean of the two is the reference, unless one of them kept the GPU busy less
than 90 % of its time: it was still starting, and the other is the reference).

  pairs   two tenants with shares (e.g. 30/70) at once
  caps    one tenant alone under --hard-cap: its throughput and its GPU time (CUDA events
          around its work); on a power-limited GPU the cap holds in GPU time and runs
          ahead in throughput
  plain   two loops at once with no gpuslice: what plain time-slicing (or MPS) gives
          (--no-plain to skip)

--sharing mps runs a private MPS control daemon and every tenant as its client
(gpuslice run --sharing mps), the solo reference too; --mps-plain 25,50,75 adds MPS's own
active thread percentages for reference. The daemon needs nvidia-cuda-mps-control.

--build NAME=GPUSLICE (repeatable, instead of --gpuslice) runs every pair and cap under
each build in turn, --rounds times, the order reversed every other round (A B, B A, ...),
against one solo reference: two builds side by side in one run (bench/compare.sh).
--debug-dir keeps every tenant's stderr with the controller's per-window log
(GPUSLICE_LOG_LEVEL=debug). Prints progress; writes one JSON file, saved after every run.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import SOLO_BUSY_MIN, finish_tenant, mps_control, mps_env, start_tenant  # noqa: E402
from common import solo_reference as common_solo_reference  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--gpuslice", help="the gpuslice binary (its libgpuslice.so beside it)")
ap.add_argument("--build", action="append", default=[], metavar="NAME=GPUSLICE",
                help="a build to run, by name (repeatable; instead of --gpuslice)")
ap.add_argument("--out", required=True, help="JSON file to write")
ap.add_argument("--pairs", default="25/75,30/70,50/50", help="share pairs, comma-separated ('' = none)")
ap.add_argument("--caps", default="25,50,75", help="hard caps, comma-separated ('' = none)")
ap.add_argument("--secs", type=float, default=6.0, help="seconds counted per run")
ap.add_argument("--warm", type=float, default=1.0, help="seconds after the common start not counted")
ap.add_argument("--lead", type=float, default=8.0, help="seconds for the tenants to start before the common start")
ap.add_argument("--size", type=int, default=8192, help="the matmul's size")
ap.add_argument("--memory", default="24Gi", help="each tenant's slice (gpuslice run --memory)")
ap.add_argument("--rounds", type=int, default=1, help="runs of every pair and cap per build")
ap.add_argument("--no-plain", action="store_true", help="skip the two plain loops")
ap.add_argument("--sharing", choices=["timeslice", "mps"], default="timeslice")
ap.add_argument("--mps-plain", default="", help="with --sharing mps: MPS thread percentages alone, for reference")
ap.add_argument("--debug-dir", help="keep every gpuslice tenant's stderr here, with the debug log")
args = ap.parse_args()
builds = [tuple(b.split("=", 1)) for b in args.build] or ([("default", args.gpuslice)] if args.gpuslice else [])
if not builds:
    ap.error("give --gpuslice or --build NAME=GPUSLICE")
TENANT = os.path.join(HERE, "compute_tenant.py")
res = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "secs": args.secs, "size": args.size, "sharing": args.sharing,
       "builds": {name: {"gpuslice": path, "pairs": {}, "caps": {}} for name, path in builds}}
MPS = {}
failed = []  # tenants that printed no result


def save():
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)


def hog(gpuslice=None, gs=(), env=None):
    """One tenant: (command, environment)."""
    cmd = [sys.executable, TENANT, "hog", "--secs", str(args.secs), "--warm", str(args.warm), "--size", str(args.size)]
    if gpuslice:
        sharing = ["--sharing", "mps"] if args.sharing == "mps" else []
        cmd = [gpuslice, "run", "--memory", args.memory] + list(gs) + sharing + ["--"] + cmd
    return cmd, dict(os.environ, **MPS, **(env or {}))


def together(tenants):
    """Runs the tenants so that they begin at the same wall-clock moment; their JSON lines."""
    start = time.time() + args.lead
    procs = []
    for cmd, env in tenants:
        if args.debug_dir and cmd[0] != sys.executable:
            env = dict(env, GPUSLICE_LOG_LEVEL="debug")
        procs.append(start_tenant(cmd + ["--start", str(start)], env))
    outs = []
    for i, p in enumerate(procs):
        o, err = finish_tenant(p, args.lead + args.warm + args.secs + 240)
        if args.debug_dir:
            os.makedirs(args.debug_dir, exist_ok=True)
            with open(os.path.join(args.debug_dir, f"{time.time():.0f}-{i}.log"), "w") as f:
                f.write(err)
        line = [x for x in o.splitlines() if x.startswith("{")]
        r = json.loads(line[-1]) if line else {"error": err[-800:]}
        if "error" in r:
            print(f"shares: a tenant failed: {r['error'][-400:]}", file=sys.stderr, flush=True)
            failed.append(r)
        r.pop("stamps", None)
        r["stderr_tail"] = err[-300:]
        outs.append(r)
    return outs


def rate(r):
    return r.get("matmuls_per_s", 0.0)


def solo():
    r = together([hog()])[0]
    print("shares: solo", round(rate(r), 1), "matmuls/s, GPU time", r.get("gpu_time_fraction"), flush=True)
    return r


def run_build(name, path, rnd):
    b = res["builds"][name]
    for pair in [p for p in args.pairs.split(",") if p]:
        x, y = pair.split("/")
        ra, rb = together([hog(path, ["--compute", x]), hog(path, ["--compute", y])])
        b["pairs"].setdefault(pair, []).append({"round": rnd, "raw": [ra, rb]})
        print(f"shares: {name} pair {pair} round {rnd}: {rate(ra):.1f} + {rate(rb):.1f} matmuls/s", flush=True)
        save()
    for cap in [c for c in args.caps.split(",") if c]:
        r = together([hog(path, ["--compute", cap, "--hard-cap"])])[0]
        b["caps"].setdefault(cap, []).append({"round": rnd, "raw": r})
        print(f"shares: {name} cap {cap} round {rnd}: {rate(r):.1f} matmuls/s, GPU time "
              f"{r.get('gpu_time_fraction')}", flush=True)
        save()


def solo_reference(first, last):
    """The solo reference (common.solo_reference), said on stderr when one solo is dropped."""
    ref, dropped = common_solo_reference([(rate(first), first.get("gpu_time_fraction")),
                                          (rate(last), last.get("gpu_time_fraction"))])
    if dropped is not None:
        which = ("first", "last")[dropped]
        print(f"shares: the {which} solo kept the GPU busy less than {SOLO_BUSY_MIN} of its time (still "
              "starting: give it a longer --lead); the reference is the other solo", file=sys.stderr, flush=True)
        res["solo_dropped"] = which
    return ref


def achieved(solo_rate):
    """Every run's throughput and GPU time as percentages of one GPU."""
    for b in res["builds"].values():
        for runs in b["pairs"].values():
            for run in runs:
                run["achieved"] = [round(100 * rate(r) / solo_rate, 2) for r in run["raw"]]
                run["gpu_time"] = [round(100 * r.get("gpu_time_fraction", 0), 2) for r in run["raw"]]
        for runs in b["caps"].values():
            for run in runs:
                run["achieved"] = round(100 * rate(run["raw"]) / solo_rate, 2)
                run["gpu_time"] = round(100 * run["raw"].get("gpu_time_fraction", 0), 2)


try:
    if args.sharing == "mps":
        MPS.update(mps_env())
        mps_control(MPS, "start")
    first = solo()
    res["solo_first"] = rate(first)
    res["solo_gpu_time_fraction"] = first.get("gpu_time_fraction")
    save()
    for rnd in range(1, args.rounds + 1):
        for name, path in (builds if rnd % 2 else builds[::-1]):
            run_build(name, path, rnd)
    if not args.no_plain:
        ra, rb = together([hog(), hog()])
        res["plain_raw"] = [rate(ra), rate(rb)]
    if args.sharing == "mps" and args.mps_plain:
        res["mps_plain_raw"] = {}
        for pc in args.mps_plain.split(","):
            r = together([hog(env={"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": pc})])[0]
            res["mps_plain_raw"][pc] = rate(r)
    last = solo()
    res["solo_last"] = rate(last)
    res["solo_matmuls_per_s"] = ref = solo_reference(first, last)
    if ref:
        achieved(ref)
        if "plain_raw" in res:
            res["plain"] = [round(100 * x / ref, 2) for x in res["plain_raw"]]
        if "mps_plain_raw" in res:
            res["mps_plain"] = {k: round(100 * v / ref, 2) for k, v in res["mps_plain_raw"].items()}
    save()
finally:
    if MPS:
        mps_control(MPS, "quit")
for name, b in res["builds"].items():
    for pair, runs in b["pairs"].items():
        print(f"shares: {name} pair {pair}:", [r.get("achieved") for r in runs], flush=True)
    for cap, runs in b["caps"].items():
        print(f"shares: {name} cap {cap}:", [(r.get("achieved"), r.get("gpu_time")) for r in runs], flush=True)
if "plain" in res:
    print("shares: plain", res["plain"], flush=True)
sys.exit(1 if failed else 0)
