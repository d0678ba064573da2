"""One tenant's PyTorch allocations under a slice (bench/memory.py runs it).

Allocates 256 MiB tensors until torch.OutOfMemoryError, then 16 MiB and 2 MiB
ones, so "usable" counts every byte the slice let PyTorch have. Prints one
JSON line. With --hold, waits at the peak until stdin closes, so the parent can
read the process's real usage from NVML outside the slice.
"""
import argparse
import json
import os
import sys
import time

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--hold", action="store_true", help="wait at the peak until stdin closes")
ap.add_argument("--work", type=int, default=0, help="matmul rounds to run and verify instead")
args = ap.parse_args()
import torch  # noqa: E402  (after the options, so --help needs no torch)

MiB = 1 << 20
out = {"pid": os.getpid(), "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "default")}
t0 = time.time()
torch.cuda.init()
free0, total0 = torch.cuda.mem_get_info()
out["mem_get_info_total"] = total0
out["mem_get_info_free"] = free0
out["startup_s"] = time.time() - t0

if args.work:
    # The well-behaved tenant: real work with a checked answer.
    torch.manual_seed(0)
    a = torch.randn(2048, 2048, device="cuda")
    b = torch.randn(2048, 2048, device="cuda")
    ref = (a.double().cpu() @ b.double().cpu())
    bufs = [torch.empty(256 * MiB, dtype=torch.uint8, device="cuda") for _ in range(4)]
    ok = True
    for i in range(args.work):
        c = a @ b
        if i % 50 == 0:
            ok = ok and torch.allclose(c.double().cpu(), ref, rtol=1e-3, atol=1e-2)
    torch.cuda.synchronize()
    out["work_ok"] = bool(ok)
    out["work_rounds"] = args.work
    del bufs
    print(json.dumps(out), flush=True)
    sys.exit(0 if ok else 1)

held = []
errors = {}
for size in (256 * MiB, 16 * MiB, 2 * MiB):
    while True:
        try:
            held.append(torch.empty(size, dtype=torch.uint8, device="cuda"))
        except torch.OutOfMemoryError:
            errors[str(size)] = "OutOfMemoryError"
            break
        except Exception as e:  # the failure mode we must never produce
            errors[str(size)] = f"{type(e).__name__}: {e}"[:300]
            break
out["errors"] = errors
out["clean_oom"] = all(v == "OutOfMemoryError" for v in errors.values())
out["allocated_bytes"] = torch.cuda.memory_allocated()
out["reserved_bytes"] = torch.cuda.memory_reserved()
out["tensors"] = len(held)
f, t = torch.cuda.mem_get_info()
out["mem_get_info_after"] = [f, t]
print(json.dumps(out), flush=True)
if args.hold:
    sys.stdin.read()
