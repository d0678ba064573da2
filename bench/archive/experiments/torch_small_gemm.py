# Session 19 (issue 20): a best-effort loop of small bf16 GEMMs (N x N, GROUP per
# synchronisation), its rate in matmuls a second over REPS stretches of SECS seconds.
#   python3 bench/archive/experiments/torch_small_gemm.py [N] [GROUP] [REPS] [SECS]
import sys
import time

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
group = int(sys.argv[2]) if len(sys.argv) > 2 else 64
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 5
secs = float(sys.argv[4]) if len(sys.argv) > 4 else 2.0
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
b = torch.randn_like(a)
for _ in range(200):
    c = a @ b
torch.cuda.synchronize()
rates = []
for _ in range(reps):
    t0, done = time.perf_counter(), 0
    while time.perf_counter() - t0 < secs:
        for _ in range(group):
            c = a @ b
        torch.cuda.synchronize()
        done += group
    rates.append(done / (time.perf_counter() - t0))
print("rates " + " ".join(f"{r:.0f}" for r in rates))
