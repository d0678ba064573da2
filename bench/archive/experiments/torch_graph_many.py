"""Captures many CUDA graphs in a row, as a serving engine does at start-up (one per batch
size), each a small model's forward under torch.cuda.graph (the global capture mode),
then replays each; to run under `gpuslice run` with a compute share, where the
controller's windows end during the captures.

    python3 torch_graph_many.py [graphs]"""
import sys
import time

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
w = [torch.randn(2048, 2048, device="cuda", dtype=torch.float16) / 45 for _ in range(12)]


def forward(t):
    for m in w:
        t = torch.relu(t @ m)
    return t


ok = failed = 0
t0 = time.perf_counter()
first_error = None
for b in range(1, n + 1):
    x = torch.randn(8 * b, 2048, device="cuda", dtype=torch.float16)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        forward(x)  # warm-up on a side stream
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            y = forward(x)
        g.replay()
        torch.cuda.synchronize()
        ok += torch.allclose(y, forward(x), rtol=1e-2, atol=1e-2)
    except Exception as ex:
        failed += 1
        first_error = first_error or str(ex).splitlines()[0]
        try:
            torch.cuda.synchronize()
        except Exception:
            pass
print(f"{n} graphs captured in {time.perf_counter() - t0:.1f} s: {ok} replayed right, {failed} failed"
      + (f" (first: {first_error})" if first_error else ""))
