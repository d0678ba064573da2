"""Small kernels next to an idle latency-critical tenant, on the FAKE driver (no GPU).

  python3 bench/fake_small_kernels.py [--build build] [--out results.json]

A best-effort `gpuslice run --simulated` launches N kernels of K us each (the fake driver
runs them one after another in wall-clock time, GS_FAKE_KERNEL_US) while a critical slice
sits idle beside it under the same state root, so every launch keeps at most one kernel
queued behind the running one. What is measured is the interposer's pacing: the fraction
of the ideal time N x K the launches took, net of a one-kernel run (process start-up).
Variants: the library as built (sleep polls only: the rule again since session 7, when the
H200 disagreed), and one with GS_CC_TRIM_SPIN_QUEUED_NS=50000 (a 50 us spin first, the
default in session 6; its rows are named spin50). Without a critical slice the queue is not bounded and
the launches return at once (nothing to compare). This is not a GPU measurement: the
H200 one is bench/h200_issue6_small_kernels.sh.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--out")
ap.add_argument("--kernels-us", default="10,50,200")
ap.add_argument("--reps", type=int, default=3)
args = ap.parse_args()
B = os.path.abspath(args.build)
GS = os.path.join(B, "gpuslice")
WORKER = os.path.join(B, "tests", "gs-worker")

tmp = tempfile.mkdtemp(prefix="gs-fake-small-")
try:
    spin = os.path.join(tmp, "spin50")
    subprocess.run(["make", "-s", f"BUILD={spin}", "CFLAGS=-DGS_CC_TRIM_SPIN_QUEUED_NS=50000",
                    f"{spin}/libgpuslice.so"], check=True)
    libs = {"default": os.path.join(B, "libgpuslice.so"), "spin50": os.path.join(spin, "libgpuslice.so")}
    root = os.path.join(tmp, "state")
    os.mkdir(root)
    crit = subprocess.Popen([GS, "run", "--simulated", "--critical", "--memory", "1Gi", "--state-root", root,
                             "--", "sleep", "600"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)

    def wall(lib, us, n):
        env = dict(os.environ, GPUSLICE_INTERPOSER=lib, GS_FAKE_KERNEL_US=str(us))
        t = time.monotonic()
        p = subprocess.run([GS, "run", "--simulated", "--compute", "100", "--memory", "1Gi", "--state-root", root,
                            "--", WORKER, "direct", "launch", str(n)], env=env, capture_output=True, text=True)
        dt = time.monotonic() - t
        if f"launched {n} " not in p.stdout:
            sys.exit(f"fake_small_kernels: the worker did not run: {p.stdout[-300:]} {p.stderr[-500:]}")
        return dt

    rows = []
    for us in [int(x) for x in args.kernels_us.split(",")]:
        n = max(200, 500000 // us)  # ~0.5 s of kernels
        for name, lib in libs.items():
            runs = []
            for _ in range(args.reps):
                base = wall(lib, us, 1)
                runs.append((wall(lib, us, n) - base) / (n * us / 1e6))
            rows.append({"kernel_us": us, "n": n, "variant": name, "time_over_ideal": statistics.median(runs),
                         "runs": runs})
            print(json.dumps(rows[-1]), flush=True)
    crit.terminate()
    crit.wait(timeout=10)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print("\n| kernel | variant | time / ideal (median) | device busy |")
print("|---|---|---|---|")
for r in rows:
    print(f"| {r['kernel_us']} us | {r['variant']} | {r['time_over_ideal']:.2f} | {100 / r['time_over_ideal']:.0f} % |")
if args.out:
    json.dump({"date": time.strftime("%Y-%m-%d %H:%M:%S"), "fake_driver": True, "rows": rows}, open(args.out, "w"),
              indent=1)
