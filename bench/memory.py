"""The memory cap with PyTorch, on a real GPU.

  python3 bench/memory.py --gpuslice build-minimal/gpuslice --out memory.json
      [--cap 4Gi] [--allocators default,expandable_segments:True,backend:cudaMallocAsync]
      [--parts allocators,two-tenants,inside] [--work 400]

allocators:  one slice of --cap per PyTorch allocator (PYTORCH_CUDA_ALLOC_CONF): PyTorch
             allocates 256 MiB, then 16 MiB, then 2 MiB tensors until it is refused. Reports
             the bytes PyTorch got against the slice, whether every refusal was a clean
             torch.OutOfMemoryError, and the process's device memory as NVML sees it from
             outside (the slice plus what the driver holds outside it).
two-tenants: two slices of --cap at once: one keeps allocating until refused, the other
             runs --work bf16 matmuls and checks them against a CPU reference.
inside:      what nvidia-smi reports inside the slice and outside it.

Each tenant is bench/torch_alloc.py under `gpuslice run --memory CAP`. Prints progress to
stderr and writes one JSON file.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import nvml_used_by_pid, parse_bytes  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--gpuslice", required=True, help="the gpuslice binary (its libgpuslice.so beside it)")
ap.add_argument("--out", required=True, help="JSON file to write")
ap.add_argument("--cap", default="4Gi", help="each slice's memory (gpuslice run --memory), default 4Gi")
ap.add_argument("--allocators", default="default,expandable_segments:True,backend:cudaMallocAsync",
                help="PYTORCH_CUDA_ALLOC_CONF values to try, comma-separated ('default': unset)")
ap.add_argument("--parts", default="allocators,two-tenants,inside", help="which parts to run")
ap.add_argument("--work", type=int, default=400, help="two-tenants: matmul rounds of the worker")
args = ap.parse_args()
parts = set(args.parts.split(","))
cap_bytes = parse_bytes(args.cap)
results = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "cap": args.cap, "cap_bytes": cap_bytes,
           "gpuslice": args.gpuslice}


def say(*what):
    print("memory:", *what, file=sys.stderr, flush=True)


def save():
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)


def tenant(conf, extra=(), hold=True):
    env = dict(os.environ)
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    if conf != "default":
        env["PYTORCH_CUDA_ALLOC_CONF"] = conf
    cmd = [args.gpuslice, "run", "--memory", args.cap, "--", sys.executable, os.path.join(HERE, "torch_alloc.py")]
    cmd += (["--hold"] if hold else []) + list(extra)
    return subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


if "allocators" in parts:
    modes = {}
    for conf in args.allocators.split(","):
        p = tenant(conf)
        line = p.stdout.readline()
        r = json.loads(line) if line.strip() else {"error": p.stderr.read()[-2000:]}
        time.sleep(0.5)
        r["nvml_process_bytes"] = nvml_used_by_pid().get(r.get("pid"))
        p.stdin.close()
        p.wait(timeout=120)
        r["stderr_tail"] = p.stderr.read()[-600:]
        if "allocated_bytes" in r:
            r["usable_fraction"] = r["allocated_bytes"] / cap_bytes
        modes[conf] = r
        say(conf, "allocated", r.get("allocated_bytes"), "clean OOM", r.get("clean_oom"),
            "NVML", r.get("nvml_process_bytes"))
        results["allocators"] = modes
        save()

if "two-tenants" in parts:
    a = tenant("default", hold=False)
    b = tenant("default", extra=["--work", str(args.work)], hold=False)
    ra, rb = a.communicate(timeout=600), b.communicate(timeout=600)
    results["two_tenants"] = {
        "overflowing": {"rc": a.returncode, "out": ra[0].strip()[-800:], "stderr": ra[1][-400:]},
        "worker": {"rc": b.returncode, "out": rb[0].strip()[-800:], "stderr": rb[1][-400:]},
    }
    say("two tenants: overflowing rc", a.returncode, "worker rc", b.returncode)
    save()

if "inside" in parts:
    query = ["nvidia-smi", "--query-gpu=memory.total,memory.used,memory.free", "--format=csv"]
    smi = subprocess.run([args.gpuslice, "run", "--memory", args.cap, "--"] + query, capture_output=True, text=True)
    results["nvidia_smi_inside"] = smi.stdout.strip()
    results["nvidia_smi_outside"] = subprocess.run(query, capture_output=True, text=True).stdout.strip()
    say("nvidia-smi inside:", results["nvidia_smi_inside"].splitlines()[-1:])
    save()
save()
print(json.dumps(results, indent=1))
