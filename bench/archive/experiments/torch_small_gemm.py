# Sessions 19-20 (issue 20): a best-effort loop of small bf16 GEMMs (N x N, GROUP per
# synchronisation), its rate in matmuls a second over REPS stretches of SECS seconds.
# With OP "add" the loop is of elementwise adds of N x N bf16 tensors instead (tiny
# kernels). Session 20 added, per stretch, where the time went: the host's time per
# launch (the loop of GROUP launches, waits included) and the synchronisation's time per
# group; and once, the GPU time per op replayed from a CUDA graph of GROUP ops (the
# kernels' own length at the GPU's clock then, no host in it).
#   python3 bench/archive/experiments/torch_small_gemm.py [N] [GROUP] [REPS] [SECS] [OP]
import sys
import time

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
group = int(sys.argv[2]) if len(sys.argv) > 2 else 64
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 5
secs = float(sys.argv[4]) if len(sys.argv) > 4 else 2.0
op = sys.argv[5] if len(sys.argv) > 5 else "mm"
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
b = torch.randn_like(a)


def one():
    return a @ b if op == "mm" else a + b


for _ in range(200):
    c = one()
torch.cuda.synchronize()
rates, host_us, sync_us = [], [], []
for _ in range(reps):
    t0, done, t_host, t_sync = time.perf_counter(), 0, 0.0, 0.0
    while time.perf_counter() - t0 < secs:
        t1 = time.perf_counter()
        for _ in range(group):
            c = one()
        t2 = time.perf_counter()
        torch.cuda.synchronize()
        t_host += t2 - t1
        t_sync += time.perf_counter() - t2
        done += group
    rates.append(done / (time.perf_counter() - t0))
    host_us.append(t_host / done * 1e6)
    sync_us.append(t_sync / (done / group) * 1e6)
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        for _ in range(group):
            c = one()
torch.cuda.synchronize()
for _ in range(5):
    g.replay()
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(20):
    g.replay()
torch.cuda.synchronize()
graph_us = (time.perf_counter() - t0) / (20 * group) * 1e6
print(
    "rates " + " ".join(f"{r:.0f}" for r in rates)
    + " host_us " + " ".join(f"{h:.2f}" for h in host_us)
    + " sync_us " + " ".join(f"{x:.1f}" for x in sync_us)
    + f" graph_us {graph_us:.2f}"
)
