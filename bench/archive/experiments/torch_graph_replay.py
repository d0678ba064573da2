"""Captures a small model's forward into a CUDA graph (torch.cuda.graph, the global
capture mode) and replays it, to run under `gpuslice run` with a compute share or
next to a critical tenant: whatever the interposer does at launches (its events, its
waits) must not touch a stream being captured.

    python3 torch_graph_replay.py [replays]"""
import sys
import time

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
w = [torch.randn(1024, 1024, device="cuda", dtype=torch.float16) for _ in range(8)]
x = torch.randn(64, 1024, device="cuda", dtype=torch.float16)


def forward(t):
    for m in w:
        t = torch.relu(t @ m)
    return t


s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):  # warm-up on a side stream, as PyTorch's docs do
        forward(x)
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
try:
    with torch.cuda.graph(g):
        y = forward(x)
    ref = forward(x)
    t0 = time.perf_counter()
    for _ in range(n):
        g.replay()
    torch.cuda.synchronize()
    dt = (time.perf_counter() - t0) / n * 1e3
    ok = torch.allclose(y, ref, rtol=1e-2, atol=1e-2)
    print(f"captured and replayed {n} times: {dt:.3f} ms per replay, output matches eager: {ok}")
except Exception as ex:
    print("error:", type(ex).__name__, str(ex).splitlines()[0])
