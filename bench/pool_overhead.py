"""Where cudaMallocAsync's extra device memory comes from (issue 3, point 1).

  python3 bench/pool_overhead.py [--gpuslice build-minimal/gpuslice] --out pool.json

Under a 4 GiB slice, PyTorch's cudaMallocAsync backend left the process holding
slice + context + 70 MiB (NVML). This holds N bytes with each allocator, natively
and under gpuslice, and reads the process's device memory from NVML outside, so
the fixed part (what the pool machinery costs whatever it holds) and the part
that grows with the pool are told apart.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--gpuslice")
ap.add_argument("--out", required=True)
ap.add_argument("--child", type=int, default=-1, help=argparse.SUPPRESS)
args = ap.parse_args()
MiB = 1 << 20

if args.child >= 0:
    import torch
    torch.cuda.init()
    x = [torch.empty(args.child, dtype=torch.uint8, device="cuda")] if args.child else []
    torch.cuda.synchronize()
    print(json.dumps({"pid": os.getpid(), "reserved": torch.cuda.memory_reserved()}), flush=True)
    sys.stdin.read()
    sys.exit(0)


def nvml_used(pid):
    q = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                       capture_output=True, text=True).stdout
    for line in q.strip().splitlines():
        p, m = [x.strip() for x in line.split(",")]
        if int(p) == pid:
            return int(m) * MiB
    return None


rows = []
for wrap in ([None] + ([args.gpuslice] if args.gpuslice else [])):
    for conf in (None, "backend:cudaMallocAsync"):
        for size in (0, 2 * MiB, 1024 * MiB, 3072 * MiB):
            env = dict(os.environ)
            if conf:
                env["PYTORCH_CUDA_ALLOC_CONF"] = conf
            cmd = [sys.executable, os.path.abspath(__file__), "--out", "-", "--child", str(size)]
            if wrap:
                cmd = [wrap, "run", "--memory", "4Gi", "--"] + cmd
            p = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            line = p.stdout.readline()
            r = json.loads(line) if line.strip() else {"error": p.stderr.read()[-500:]}
            time.sleep(0.3)
            r.update({"gpuslice": bool(wrap), "alloc_conf": conf or "default", "bytes": size,
                      "nvml_bytes": nvml_used(r.get("pid", -1))})
            p.stdin.close()
            p.wait()
            rows.append(r)
            print(r, flush=True)
json.dump(rows, open(args.out, "w"), indent=1)
