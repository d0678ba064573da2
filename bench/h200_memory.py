"""Issue 3 proofs on a real GPU, side by side in one run.

  python3 bench/h200_memory.py --gpuslice build-minimal/gpuslice --out results.json

1. A 4 GiB slice with each PyTorch allocator (default, expandable_segments,
   cudaMallocAsync): usable bytes vs the slice, a clean torch.OutOfMemoryError,
   and the process's real device memory from NVML outside the slice.
2. Two tenants at once: one overflows its slice, the other finishes verified work.
3. torch.cuda.mem_get_info() and nvidia-smi inside the slice.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--gpuslice", required=True)
ap.add_argument("--out", required=True)
args = ap.parse_args()
HERE = os.path.dirname(os.path.abspath(__file__))
GiB = 1 << 30
CAP = 4 * GiB
results = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "cap_bytes": CAP}


def nvml_used_by_pid():
    q = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                       capture_output=True, text=True).stdout
    used = {}
    for line in q.strip().splitlines():
        p, m = [x.strip() for x in line.split(",")]
        used[int(p)] = int(m) * (1 << 20)
    return used


def tenant(conf, extra=None, hold=True, cap="4Gi"):
    env = dict(os.environ)
    if conf:
        env["PYTORCH_CUDA_ALLOC_CONF"] = conf
    cmd = [args.gpuslice, "run", "--memory", cap, "--", sys.executable, os.path.join(HERE, "torch_alloc.py")]
    if hold:
        cmd.append("--hold")
    cmd += extra or []
    return subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


# 1. allocator modes
modes = {}
for conf in (None, "expandable_segments:True", "backend:cudaMallocAsync"):
    p = tenant(conf)
    line = p.stdout.readline()
    r = json.loads(line) if line.strip() else {"error": p.stderr.read()[-2000:]}
    time.sleep(0.5)
    r["nvml_process_bytes"] = nvml_used_by_pid().get(r.get("pid"))
    p.stdin.close()
    p.wait()
    r["stderr_tail"] = p.stderr.read()[-600:]
    if "allocated_bytes" in r:
        r["usable_fraction"] = r["allocated_bytes"] / CAP
    modes[conf or "default"] = r
results["allocators"] = modes

# 2. two tenants at once
a = tenant(None, hold=False)
b = tenant(None, extra=["--work", "400"], hold=False)
ra, rb = a.communicate(timeout=600), b.communicate(timeout=600)
results["two_tenants"] = {
    "overflowing": {"rc": a.returncode, "out": ra[0].strip()[-800:], "stderr": ra[1][-400:]},
    "worker": {"rc": b.returncode, "out": rb[0].strip()[-800:], "stderr": rb[1][-400:]},
}

# 3. what tools inside see
smi = subprocess.run([args.gpuslice, "run", "--memory", "4Gi", "--", "nvidia-smi",
                      "--query-gpu=memory.total,memory.used,memory.free", "--format=csv"],
                     capture_output=True, text=True)
results["nvidia_smi_inside"] = smi.stdout.strip()
smi_out = subprocess.run(["nvidia-smi", "--query-gpu=memory.total,memory.used,memory.free", "--format=csv"],
                         capture_output=True, text=True)
results["nvidia_smi_outside"] = smi_out.stdout.strip()
json.dump(results, open(args.out, "w"), indent=1)
print(json.dumps(results, indent=1))
