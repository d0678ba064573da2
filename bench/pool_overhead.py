"""What the driver holds outside the slice: the CUDA context, and the fixed cost of
stream-ordered pools.

  python3 bench/pool_overhead.py [--gpuslice build-minimal/gpuslice] --out pool.json

Each row is a fresh PyTorch process that holds one tensor of 0, 2 MiB, 1 GiB or 3 GiB with
the default allocator and with backend:cudaMallocAsync, natively (and under a 4 GiB slice
with --gpuslice). NVML's per-process figure, read from outside, minus what PyTorch
reserved is what the driver holds for the process: the context, and once a stream-ordered
pool is used, a fixed amount more whatever the pool holds. The agent's context_reserve
must cover both.
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import nvml_used_by_pid  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--gpuslice", help="also run every row under this gpuslice binary (a 4 GiB slice)")
ap.add_argument("--out", required=True, help="JSON file to write ('-' in the child processes)")
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
                      "nvml_bytes": nvml_used_by_pid().get(r.get("pid", -1))})
            p.stdin.close()
            p.wait()
            rows.append(r)
            print(r, flush=True)
json.dump(rows, open(args.out, "w"), indent=1)
